/* fa-v fp16, blocked regime: NREP consecutive query heads of token i against keys [j0, j1).
 * Included once per NREP by fa_v_f16.c. arow: the fp32 accumulators of token i's heads
 * ([head][D]); mrow, srow: their running max and sum. */
#include "attention/fa_v_rep.h"

__attribute__((noinline)) static void RVV_CAT(blk16_, NREP)(const fav16_ctx *c, int i, int h,
                                                             int j0, int j1, float *mrow,
                                                             float *srow, float *arow,
                                                             int first, int last) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, group = Hh / p->kv_heads;
    const int BC = c->t.block_c, n = j1 - j0;
    const size_t kv_row = (size_t)p->kv_heads * D;
    const h16 *qp[NREP], *pp[NREP];
    attn_f16 *op[NREP];
    float *sp[NREP], *ap[NREP];
    size_t kvo[NREP];
    for (int u = 0; u < NREP; u++) {
        qp[u] = H(c->q16) + ((size_t)i * Hh + h + u) * D;
        op[u] = c->pf->o + ((size_t)i * Hh + h + u) * D;
        ap[u] = arow + (size_t)(h + u) * D;
        sp[u] = c->sc + (size_t)u * BC;
        pp[u] = H(c->pr) + (size_t)u * BC;
        kvo[u] = (size_t)((h + u) / group) * D;
    }
#define NEWKV(u) ((u) == 0 || kvo[u] != kvo[(u) > 0 ? (u) - 1 : 0])
#if FAV_KCACHE /* the block's K^T: the copied block, or the kept cache's page */
    const h16 *ktb = H(c->ktc ? c->ktc + (size_t)(j0 / BC) * kv_row * BC : c->kt);
#else
    const h16 *ktb = H(c->kt);
#endif

    /* 1. scores across the block's keys: q[d] (fp16 scalar) x K^T row (fp16), fp32 sums */
    for (int jj = 0; jj < n;) {
        const size_t vl = __riscv_vsetvl_e16m1((size_t)(n - jj));
#define ZERO(u) vfloat32m2_t a##u = __riscv_vfmv_v_f_f32m2(0.0f, vl);
        REP(ZERO)
#undef ZERO
        for (int d = 0; d < D; d++) {
            vfloat16m1_t kv = __riscv_vle16_v_f16m1(ktb + (kvo[0] + (size_t)d) * BC + jj, vl);
#define DOT(u)                                                                                  \
    if ((u) > 0 && NEWKV(u)) kv = __riscv_vle16_v_f16m1(ktb + (kvo[u] + (size_t)d) * BC + jj, vl); \
    a##u = __riscv_vfwmacc_vf_f32m2(a##u, qp[u][d], kv, vl);
            REP(DOT)
#undef DOT
        }
#define SAVE(u) __riscv_vse32(sp[u] + jj, __riscv_vfmul(a##u, p->scale, vl), vl);
        REP(SAVE)
#undef SAVE
        jj += (int)vl;
    }

    /* 2. online softmax over the block in fp32; P rounded to fp16 for the P V product */
    float alpha[NREP];
    for (int u = 0; u < NREP; u++) {
        float mb = -INFINITY;
        for (int j = 0; j < n;) {
            const size_t vl = __riscv_vsetvl_e32m2((size_t)(n - j));
            mb = hmax_m2(__riscv_vle32_v_f32m2(sp[u] + j, vl), mb, vl);
            j += (int)vl;
        }
        const float mold = first ? -INFINITY : mrow[u];
        const float mnew = mold > mb ? mold : mb;
        float sum = 0.0f;
        for (int j = 0; j < n;) {
            const size_t vl = __riscv_vsetvl_e32m2((size_t)(n - j));
            const vfloat32m2_t e = vexp_m2(__riscv_vfsub(__riscv_vle32_v_f32m2(sp[u] + j, vl), mnew, vl), vl);
            __riscv_vse16_v_f16m1(HW((attn_f16 *)pp[u]) + j, __riscv_vfncvt_f_f_w_f16m1(e, vl), vl);
            sum += hsum_m2(e, vl);
            j += (int)vl;
        }
        alpha[u] = first ? 0.0f : expf(mold - mnew);
        srow[u] = (first ? 0.0f : srow[u] * alpha[u]) + sum;
        mrow[u] = mnew;
    }

    /* 3. per strip of D: the block's P V in fp16 registers, then into the fp32 accumulator */
    for (int d = 0; d < D;) {
        const size_t vl = __riscv_vsetvl_e16m1((size_t)(D - d));
#define Z16(u) vfloat16m1_t a##u = __riscv_vfmv_v_f_f16m1(0, vl);
        REP(Z16)
#undef Z16
        for (int j = j0; j < j1; j++) {
            const h16 *vrow = H(c->pf->v) + (size_t)j * kv_row;
            vfloat16m1_t vv = __riscv_vle16_v_f16m1(vrow + kvo[0] + d, vl);
#define MAC(u)                                                                  \
    if ((u) > 0 && NEWKV(u)) vv = __riscv_vle16_v_f16m1(vrow + kvo[u] + d, vl); \
    a##u = __riscv_vfmacc_vf_f16m1(a##u, pp[u][j - j0], vv, vl);
            REP(MAC)
#undef MAC
        }
#define STORE(u)                                                                                 \
    {                                                                                            \
        vfloat32m2_t w = first ? __riscv_vfwcvt_f_f_v_f32m2(a##u, vl)                            \
                               : __riscv_vfwadd_wv_f32m2(__riscv_vfmul_vf_f32m2(                 \
                                     __riscv_vle32_v_f32m2(ap[u] + d, vl), alpha[u], vl), a##u, vl); \
        if (last)                                                                                \
            __riscv_vse16_v_f16m1(HW(op[u]) + d,                                                 \
                                  __riscv_vfncvt_f_f_w_f16m1(__riscv_vfmul(w, 1.0f / srow[u], vl), vl), vl); \
        else                                                                                     \
            __riscv_vse32_v_f32m2(ap[u] + d, w, vl);                                             \
    }
        REP(STORE)
#undef STORE
        d += (int)vl;
    }
#undef NEWKV
}
