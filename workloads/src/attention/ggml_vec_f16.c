/* ggml-vec in fp16: ggml's one-row FlashAttention with an F16 KV cache and its RVV Zvfh
 * helpers (ggml_compute_forward_flash_attn_ext_f16, one-row path; vec.h / vec.cpp). Per
 * (token, head) row, as ggml does:
 *  - the query row is converted fp32 -> fp16 once (ggml_cpu_fp32_to_fp16 with Zvfh:
 *    e32 m2 loads narrowed by vfncvt.f.f.w to e16 m1);
 *  - score: dot of the fp16 query row and the fp16 key row with the products widened and
 *    summed in fp32 (ggml_vec_dot_f16: e16 m1 loads, vfwmacc.vv into an e32 m2 accumulator,
 *    tail undisturbed, strip-mined over D; at the end its two halves are added at e32 m1 and
 *    reduced once with vfredusum);
 *  - scale, running max M, sum S and expf are fp32 scalar code;
 *  - the value accumulator (VKQ16) is fp16 and so is its arithmetic: ms and vs are rounded
 *    to fp16 (a scalar fcvt.h.s, Zfhmin) and applied by vfmul.vf / vfmacc.vf at e16 m4
 *    (ggml_vec_scale_f16, ggml_vec_mad_f16);
 *  - at the end the accumulator is widened to fp32 by scalar conversions (ggml:
 *    GGML_CPU_FP16_TO_FP32 per element, fcvt.s.h with Zfhmin) and multiplied by 1/S.
 * Where we differ (choices, each small next to the per-key work):
 *  - ggml unrolls its e16 m4 loops by two register groups; we strip-mine them with vsetvl
 *    like the other loops (the same vector operations);
 *  - ggml scales by 1/S at e32 m8 and writes an F32 dst; our harness's fp16 output is the
 *    scaled row narrowed to fp16, one e32 m2 -> e16 m1 pass (no LMUL 8, which gem5 24.0
 *    handles badly);
 *  - register grouping is ggml's, fixed: --lmul is not a tunable of this kernel.
 * No VLEN is compiled in; build with -march=rv64gcv_zvfh. */
#if VLSCALE_VECTOR
#include <math.h>
#include <riscv_vector.h>

#include "attention/attn.h"

static inline const _Float16 *as_h(const attn_f16 *x) { return (const _Float16 *)x; }
static inline _Float16 *as_hw(attn_f16 *x) { return (_Float16 *)x; }

/* fp32 -> fp16 over n elements: e32 m2 in, e16 m1 out (RNE, the vector unit's rounding) */
static inline void narrow(attn_f16 *y, const float *x, float mul, int n) {
    for (int d = 0; d < n;) {
        const size_t vl = __riscv_vsetvl_e32m2((size_t)(n - d));
        vfloat32m2_t w = __riscv_vle32_v_f32m2(x + d, vl);
        if (mul != 1.0f) w = __riscv_vfmul_vf_f32m2(w, mul, vl);
        __riscv_vse16_v_f16m1(as_hw(y + d), __riscv_vfncvt_f_f_w_f16m1(w, vl), vl);
        d += (int)vl;
    }
}

/* sum over d of x[d] * y[d], fp16 inputs, fp32 products and sums */
static inline float dot(const attn_f16 *x, const attn_f16 *y, int n) {
    const size_t vlm = __riscv_vsetvlmax_e32m2();
    vfloat32m2_t acc = __riscv_vfmv_v_f_f32m2(0.0f, vlm);
    for (int d = 0; d < n;) {
        const size_t vl = __riscv_vsetvl_e16m1((size_t)(n - d));
        acc = __riscv_vfwmacc_vv_f32m2_tu(acc, __riscv_vle16_v_f16m1(as_h(x + d), vl),
                                          __riscv_vle16_v_f16m1(as_h(y + d), vl), vl);
        d += (int)vl;
    }
    const size_t vl1 = __riscv_vsetvlmax_e32m1();
    vfloat32m1_t half = __riscv_vfadd_vv_f32m1(__riscv_vget_v_f32m2_f32m1(acc, 0),
                                               __riscv_vget_v_f32m2_f32m1(acc, 1), vl1);
    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, vl1);
    return __riscv_vfmv_f(__riscv_vfredusum_vs_f32m1_f32m1(half, z, vl1));
}

/* y *= a in fp16 (a rounded to fp16) */
static inline void scale(attn_f16 *y, float a, int n) {
    const _Float16 ah = (_Float16)a;
    for (int d = 0; d < n;) {
        const size_t vl = __riscv_vsetvl_e16m4((size_t)(n - d));
        vfloat16m4_t v = __riscv_vle16_v_f16m4(as_h(y + d), vl);
        __riscv_vse16_v_f16m4(as_hw(y + d), __riscv_vfmul_vf_f16m4(v, ah, vl), vl);
        d += (int)vl;
    }
}

/* y += a * x in fp16 (a rounded to fp16) */
static inline void mad(attn_f16 *y, const attn_f16 *x, float a, int n) {
    const _Float16 ah = (_Float16)a;
    for (int d = 0; d < n;) {
        const size_t vl = __riscv_vsetvl_e16m4((size_t)(n - d));
        vfloat16m4_t yv = __riscv_vle16_v_f16m4(as_h(y + d), vl);
        yv = __riscv_vfmacc_vf_f16m4(yv, ah, __riscv_vle16_v_f16m4(as_h(x + d), vl), vl);
        __riscv_vse16_v_f16m4(as_hw(y + d), yv, vl);
        d += (int)vl;
    }
}

void attn_ggml_vec_f16(const attn_problem_f16 *pf) {
    const attn_problem *p = pf->p;
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    attn_f16 *qh = pf->q_row, *acc = pf->acc16;
    float *acc32 = pf->acc32;
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) { /* head-major rows, as ggml walks them */
            const float *q = p->q + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            narrow(qh, q, 1.0f, D);
            for (int d = 0; d < D;) {
                const size_t vl = __riscv_vsetvl_e16m4((size_t)(D - d));
                __riscv_vse16_v_f16m4(as_hw(acc + d), __riscv_vfmv_v_f_f16m4(0, vl), vl);
                d += (int)vl;
            }
            float M = -INFINITY, S = 0.0f;
            for (int j = 0; j < end; j++) {
                const attn_f16 *k = pf->k + (size_t)j * kv_row + kvo;
                const attn_f16 *v = pf->v + (size_t)j * kv_row + kvo;
                const float s = dot(k, qh, D) * p->scale;
                float ms = 1.0f, vs = 1.0f;
                if (s > M) { /* new maximum: rescale what was accumulated so far */
                    ms = expf(M - s);
                    M = s;
                    scale(acc, ms, D);
                } else {
                    vs = expf(s - M);
                }
                mad(acc, v, vs, D);
                S = S * ms + vs;
            }
            const _Float16 *a16 = as_h(acc);
            for (int d = 0; d < D; d++) acc32[d] = (float)a16[d];
            narrow(pf->o + ((size_t)i * H + h) * D, acc32, 1.0f / S, D);
        }
    }
}
#endif
