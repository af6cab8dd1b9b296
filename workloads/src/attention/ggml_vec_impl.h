/* ggml-vec body for one LMUL (included by ggml_vec.c after rvv_lmul.h). */

/* ggml_vec_dot_f32: strip-mined multiply-accumulate over D, one reduction at the end. */
static inline float FN(dot)(const float *x, const float *y, int n) {
    const size_t vlm = SETVLMAX();
    VF acc = VFMV(0.0f, vlm);
    for (int d = 0; d < n;) {
        size_t vl = SETVL((size_t)(n - d));
        acc = __riscv_vfmacc_tu(acc, VLE(x + d, vl), VLE(y + d, vl), vl);
        d += (int)vl;
    }
    return FN(hsum)(acc, (size_t)n < vlm ? (size_t)n : vlm);
}

/* ggml_vec_scale_f32: y *= a. */
static inline void FN(scale)(float *y, float a, int n) {
    for (int d = 0; d < n;) {
        size_t vl = SETVL((size_t)(n - d));
        __riscv_vse32(y + d, __riscv_vfmul(VLE(y + d, vl), a, vl), vl);
        d += (int)vl;
    }
}

/* ggml_vec_mad_f32: y += a * x. */
static inline void FN(mad)(float *y, const float *x, float a, int n) {
    for (int d = 0; d < n;) {
        size_t vl = SETVL((size_t)(n - d));
        __riscv_vse32(y + d, __riscv_vfmacc(VLE(y + d, vl), a, VLE(x + d, vl), vl), vl);
        d += (int)vl;
    }
}

static void FN(ggml_vec_run)(const attn_problem *p) {
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) { /* head-major rows, as ggml walks them */
            const float *q = p->q + ((size_t)i * H + h) * D;
            float *acc = p->o + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            float M = -INFINITY, S = 0.0f;
            for (int d = 0; d < D;) {
                size_t vl = SETVL((size_t)(D - d));
                __riscv_vse32(acc + d, VFMV(0.0f, vl), vl);
                d += (int)vl;
            }
            for (int j = 0; j < end; j++) {
                const float *k = p->k + (size_t)j * kv_row + kvo;
                const float *v = p->v + (size_t)j * kv_row + kvo;
                const float s = FN(dot)(q, k, D) * p->scale;
                float ms = 1.0f, vs = 1.0f;
                if (s > M) {
                    ms = expf(M - s);
                    M = s;
                    FN(scale)(acc, ms, D);
                } else {
                    vs = expf(s - M);
                }
                FN(mad)(acc, v, vs, D);
                S = S * ms + vs;
            }
            FN(scale)(acc, 1.0f / S, D);
        }
    }
}
