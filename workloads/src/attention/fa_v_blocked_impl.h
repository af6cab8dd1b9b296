/* fa-v, blocked regime (VL <= D), one group of NREP consecutive query heads of token i
 * against keys [j0, j1). Included once per (LMUL, NREP).
 * Scores: vectorised across the block's keys from the transposed key block (no reduction);
 * a K^T row of a kv head shared by neighbouring heads of the group is loaded once (GQA
 * reuse). Softmax: block maximum, then a vector exp over the block's scores, one rescale of
 * the accumulator per block.
 * Accumulate: per strip of D the NREP accumulators stay in registers over the whole block. */
#include "attention/fa_v_rep.h"

__attribute__((noinline)) static void RVV_CAT3(FN(fav_blk), _, NREP)(const fav_ctx *c, int i, int h, int j0, int j1,
                                            float *mrow, float *srow, int first, int last) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const int BC = c->t.block_c, n = j1 - j0;
    const size_t kv_row = (size_t)p->kv_heads * D;
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
#if FAV_KCACHE /* K^T row r of the block: the copied block's, or the kept cache's page */
    const float *ktb = c->ktc ? c->ktc + (size_t)(j0 / BC) * kv_row * BC : c->kt;
#define KT_ROW(r) (ktb + (r) * BC)
#else
#define KT_ROW(r) (c->kt + (r) * BC)
#endif

    /* 1. scores s = (q . k) * scale for the block's keys, vectorised across keys: the key
     *    block is stored transposed (c->kt, built once per key block by fav_transpose_k), so
     *    a strip of keys is one unit-stride load per d, shared by the heads of one kv head,
     *    and every head adds q[d] * K^T[d][strip] with one vfmacc.vf. No reduction. */
    for (int jj = 0; jj < n;) {
        const size_t vl = SETVL((size_t)(n - jj));
#define ZERO(u) VF a##u = VFMV(0.0f, vl);
        REP(ZERO)
#undef ZERO
        for (int d = 0; d < D; d++) {
            VF kv = VLE(KT_ROW(kvo[0] + (size_t)d) + jj, vl);
#define DOT(u)                                                          \
    if ((u) > 0 && NEWKV(u)) kv = VLE(KT_ROW(kvo[u] + (size_t)d) + jj, vl); \
    a##u = __riscv_vfmacc(a##u, qp[u][d], kv, vl);
            REP(DOT)
#undef DOT
        }
#define SAVE(u) __riscv_vse32(sp[u] + jj, __riscv_vfmul(a##u, p->scale, vl), vl);
        REP(SAVE)
#undef SAVE
        jj += (int)vl;
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
#undef KT_ROW
}
