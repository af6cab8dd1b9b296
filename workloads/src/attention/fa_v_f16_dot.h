/* fa-v in fp16, the dot regime: included once by fa_v_f16.c (one translation unit, as
 * fp32's regimes are). */
/* ---------------------------------------------------------------------------- dot ----
 * fp32's dot regime in fp16: one (token, head) row at a time, K rows read as they lie. A
 * score is one widening product (vfwmul e16 m1 -> e32 m2; D > VLMAX: vfwmacc over strips)
 * and one vfredusum in fp32; the block's softmax is fp32, vectorised over its keys; the
 * block's P V runs over D in fp16 (vfmacc.vf) and is added to the fp32 accumulator, held in
 * registers when D fits one e16 register, else in c->acc. */
#define DOT_AUTO_BLOCK_C 256

__attribute__((noinline)) static void dot_row(const fav16_ctx *c, int i, int h) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, G = Hh / p->kv_heads;
    const int BC = c->t.block_c, end = attn_kv_end(p, i);
    const size_t kv_row = (size_t)p->kv_heads * D, vlm = __riscv_vsetvlmax_e16m1();
    const h16 *kb = H(c->pf->k) + (size_t)(h / G) * D, *vb = H(c->pf->v) + (size_t)(h / G) * D;
    const h16 *qr = H(c->q16) + ((size_t)i * Hh + h) * D;
    attn_f16 *orow = c->pf->o + ((size_t)i * Hh + h) * D;
    float *sc = c->sc, *acc = c->acc;
    const int narrow = (size_t)D <= vlm;
    const size_t vd = narrow ? __riscv_vsetvl_e16m1((size_t)D) : vlm;
    const vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, __riscv_vsetvlmax_e32m1());
    const vfloat16m1_t q = __riscv_vle16_v_f16m1(qr, vd); /* narrow rows: q in a register */
    vfloat32m2_t accw = __riscv_vfmv_v_f_f32m2(0.0f, vd);
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < end; j0 += BC) {
        const int j1 = j0 + BC < end ? j0 + BC : end, n = j1 - j0;
        for (int j = j0; j < j1; j++) { /* scores */
            const h16 *kr = kb + (size_t)j * kv_row;
            vfloat32m2_t x;
            if (narrow) {
                x = __riscv_vfwmul_vv_f32m2(q, __riscv_vle16_v_f16m1(kr, vd), vd);
            } else {
                x = __riscv_vfmv_v_f_f32m2(0.0f, vlm);
                for (int d = 0; d < D;) {
                    const size_t vl = __riscv_vsetvl_e16m1((size_t)(D - d));
                    x = __riscv_vfwmacc_vv_f32m2_tu(x, __riscv_vle16_v_f16m1(qr + d, vl),
                                                    __riscv_vle16_v_f16m1(kr + d, vl), vl);
                    d += (int)vl;
                }
            }
            sc[j - j0] = __riscv_vfmv_f(__riscv_vfredusum_vs_f32m2_f32m1(x, z, vd)) * p->scale;
        }
        float mb = -INFINITY; /* softmax over the block, fp32 */
        for (int j = 0; j < n;) {
            const size_t vl = __riscv_vsetvl_e32m2((size_t)(n - j));
            mb = hmax_m2(__riscv_vle32_v_f32m2(sc + j, vl), mb, vl);
            j += (int)vl;
        }
        const float mnew = m > mb ? m : mb;
        float sum = 0.0f;
        for (int j = 0; j < n;) {
            const size_t vl = __riscv_vsetvl_e32m2((size_t)(n - j));
            const vfloat32m2_t e = vexp_m2(__riscv_vfsub(__riscv_vle32_v_f32m2(sc + j, vl), mnew, vl), vl);
            __riscv_vse16_v_f16m1(HW(c->pr) + j, __riscv_vfncvt_f_f_w_f16m1(e, vl), vl);
            sum += hsum_m2(e, vl);
            j += (int)vl;
        }
        const float alpha = j0 == 0 ? 0.0f : expf(m - mnew);
        l = l * alpha + sum;
        m = mnew;
        const h16 *pr = H(c->pr);
        for (int d = 0; d < D;) { /* the block's P V in fp16, into the fp32 accumulator */
            const size_t vl = narrow ? vd : __riscv_vsetvl_e16m1((size_t)(D - d));
            vfloat16m1_t a = __riscv_vfmv_v_f_f16m1(0, vl);
            for (int j = j0; j < j1; j++)
                a = __riscv_vfmacc_vf_f16m1(a, pr[j - j0], __riscv_vle16_v_f16m1(vb + (size_t)j * kv_row + d, vl), vl);
            if (narrow) {
                accw = j0 == 0 ? __riscv_vfwcvt_f_f_v_f32m2(a, vl)
                               : __riscv_vfwadd_wv_f32m2(__riscv_vfmul(accw, alpha, vl), a, vl);
            } else {
                const vfloat32m2_t w = j0 == 0 ? __riscv_vfwcvt_f_f_v_f32m2(a, vl)
                                               : __riscv_vfwadd_wv_f32m2(__riscv_vfmul(
                                                     __riscv_vle32_v_f32m2(acc + d, vl), alpha, vl), a, vl);
                __riscv_vse32_v_f32m2(acc + d, w, vl);
            }
            d += (int)vl;
        }
    }
    const float inv = 1.0f / l;
    for (int d = 0; d < D;) {
        const size_t vl = narrow ? vd : __riscv_vsetvl_e16m1((size_t)(D - d));
        const vfloat32m2_t w = narrow ? accw : __riscv_vle32_v_f32m2(acc + d, vl);
        __riscv_vse16_v_f16m1(HW(orow) + d, __riscv_vfncvt_f_f_w_f16m1(__riscv_vfmul(w, inv, vl), vl), vl);
        d += (int)vl;
    }
}

static void fav16_dot(const fav16_ctx *c) {
    for (int i = 0; i < c->pf->p->n_q; i++)
        for (int h = 0; h < c->pf->p->heads; h++) dot_row(c, i, h);
}
