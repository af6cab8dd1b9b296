/* fa-v, blocked regime (VL <= D), one group of NREP consecutive query heads of token i
 * against keys [j0, j1). Included once per (LMUL, NREP).
 * Scores: one pass over the keys, D strip-mined; a K row of a kv head shared by neighbouring
 * heads of the group is loaded once per strip (GQA reuse). Softmax: block maximum, then a
 * vector exp over the block's scores, one rescale of the accumulator per block.
 * Accumulate: per strip of D the NREP accumulators stay in registers over the whole block. */
#include "attention/fa_v_rep.h"

__attribute__((noinline)) static void RVV_CAT3(FN(fav_blk), _, NREP)(const fav_ctx *c, int i, int h, int j0, int j1,
                                            float *mrow, float *srow, int first, int last) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const int BC = c->t.block_c, n = j1 - j0;
    const size_t kv_row = (size_t)p->kv_heads * D;
    const size_t vlm = SETVLMAX(), vred = (size_t)D < vlm ? (size_t)D : vlm;
    const float *qp[NREP];
    float *op[NREP], *sp[NREP];
    size_t kvo[NREP];
    for (int u = 0; u < NREP; u++) {
        qp[u] = p->q + ((size_t)i * H + h + u) * D;
        op[u] = p->o + ((size_t)i * H + h + u) * D;
        sp[u] = c->sc + (size_t)u * BC;
        kvo[u] = (size_t)((h + u) / group) * D;
    }
#define NEWKV(u) ((u) == 0 || kvo[u] != kvo[(u) > 0 ? (u) - 1 : 0])

    /* 1. scores s = (q . k) * scale for every key of the block */
    for (int j = j0; j < j1; j++) {
        const float *krow = p->k + (size_t)j * kv_row;
#define DECL(u) VF a##u = VFMV(0.0f, vlm);
        REP(DECL)
#undef DECL
        for (int d = 0; d < D;) {
            const size_t vl = SETVL((size_t)(D - d));
            VF kv = VLE(krow + kvo[0] + d, vl);
#define DOT(u)                                                              \
    if ((u) > 0 && NEWKV(u)) kv = VLE(krow + kvo[u] + d, vl);               \
    a##u = __riscv_vfmacc_tu(a##u, VLE(qp[u] + d, vl), kv, vl);
            REP(DOT)
#undef DOT
            d += (int)vl;
        }
#define RED(u) sp[u][j - j0] = FN(hsum)(a##u, vred) * p->scale;
        REP(RED)
#undef RED
    }

    /* 2. online softmax over the block, vectorised across its keys */
    float alpha[NREP];
    for (int u = 0; u < NREP; u++) {
        float mb = -INFINITY;
        for (int j = 0; j < n;) {
            const size_t vl = SETVL((size_t)(n - j));
            mb = FN(hmax)(VLE(sp[u] + j, vl), mb, vl);
            j += (int)vl;
        }
        const float mold = first ? -INFINITY : mrow[u];
        const float mnew = mold > mb ? mold : mb;
        float sum = 0.0f;
        for (int j = 0; j < n;) {
            const size_t vl = SETVL((size_t)(n - j));
            VF e = FN(vexp)(__riscv_vfsub(VLE(sp[u] + j, vl), mnew, vl), vl);
            __riscv_vse32(sp[u] + j, e, vl);
            sum += FN(hsum)(e, vl);
            j += (int)vl;
        }
        alpha[u] = first ? 0.0f : expf(mold - mnew);
        srow[u] = (first ? 0.0f : srow[u] * alpha[u]) + sum;
        mrow[u] = mnew;
    }

    /* 3. acc = acc * alpha + sum_j p_j V_j, per strip of D, accumulators in registers */
    for (int d = 0; d < D;) {
        const size_t vl = SETVL((size_t)(D - d));
#define LOADACC(u) \
    VF a##u = first ? VFMV(0.0f, vl) : __riscv_vfmul(VLE(op[u] + d, vl), alpha[u], vl);
        REP(LOADACC)
#undef LOADACC
        for (int j = j0; j < j1; j++) {
            const float *vrow = p->v + (size_t)j * kv_row;
            VF vv = VLE(vrow + kvo[0] + d, vl);
#define MAC(u)                                                  \
    if ((u) > 0 && NEWKV(u)) vv = VLE(vrow + kvo[u] + d, vl);   \
    a##u = __riscv_vfmacc(a##u, sp[u][j - j0], vv, vl);
            REP(MAC)
#undef MAC
        }
#define STORE(u)                                              \
    if (last) a##u = __riscv_vfmul(a##u, 1.0f / srow[u], vl); \
    __riscv_vse32(op[u] + d, a##u, vl);
        REP(STORE)
#undef STORE
        d += (int)vl;
    }
#undef NEWKV
}
