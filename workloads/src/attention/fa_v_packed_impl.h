/* fa-v, packed regime (VL > D, D | VLMAX): NREP registers, each holding up to P = VLMAX/D
 * consecutive query heads of token i, against keys [j0, j1). Included once per (LMUL, NREP).
 * K/V: for MHA one unit-stride load of the kv heads; for GQA/MQA each needed kv row is
 * loaded once and replicated across its heads' segments with vslideup (doubling), and a
 * register that only repeats the previous register's kv rows reuses them.
 * Scores: per-head segment sums by a vslidedown tree (log2 D steps), broadcast back over the
 * segment with one vrgather. Online softmax fully in vector registers: running max M, sum S
 * and accumulator stay in registers across the key block (M and S replicated per element). */
#include "attention/fa_v_rep.h"

__attribute__((noinline)) static void RVV_CAT3(FN(fav_pk), _, NREP)(const fav_ctx *c, int i, int reg0, int j0, int j1,
                                           int r0, int first, int last) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, P = c->pack;
    const size_t kv_row = (size_t)p->kv_heads * D;
    const size_t vlm = SETVLMAX();
    const VU seg_base = __riscv_vand(VID(vlm), ~(uint32_t)(D - 1), vlm);
    size_t vl[NREP], qo[NREP], mo[NREP];
    int regs[NREP];
    for (int u = 0; u < NREP; u++) {
        const int r = reg0 + u, hb = r * P;
        const int nh = H - hb < P ? H - hb : P;
        regs[u] = r;
        vl[u] = (size_t)nh * D;
        qo[u] = ((size_t)i * H + hb) * D;
        mo[u] = ((size_t)(i - r0) * H + hb) * D;
    }
#define INIT(u)                                                                   \
    const VF q##u = __riscv_vfmul(VLE(p->q + qo[u], vl[u]), p->scale, vl[u]); /* q*scale */ \
    VF acc##u = first ? VFMV(0.0f, vl[u]) : VLE(p->o + qo[u], vl[u]);             \
    VF mx##u = first ? VFMV(-1e30f, vl[u]) : VLE(c->m + mo[u], vl[u]);            \
    VF sm##u = first ? VFMV(0.0f, vl[u]) : VLE(c->s + mo[u], vl[u]);
    REP(INIT)
#undef INIT
    for (int j = j0; j < j1; j++) {
        const float *krow = p->k + (size_t)j * kv_row;
        const float *vrow = p->v + (size_t)j * kv_row;
        VF kk = FN(fav_kv)(c, krow, regs[0], vl[0]);
        VF vv = FN(fav_kv)(c, vrow, regs[0], vl[0]);
#define STEP(u)                                                                      \
    if ((u) > 0 && !c->same_prev[regs[u]]) {                                         \
        kk = FN(fav_kv)(c, krow, regs[u], vl[u]);                                    \
        vv = FN(fav_kv)(c, vrow, regs[u], vl[u]);                                    \
    }                                                                                \
    {                                                                                \
        const size_t n = vl[u];                                                      \
        VF pr = __riscv_vfmul(q##u, kk, n);                                          \
        for (int w = D >> 1; w > 0; w >>= 1)                                         \
            pr = __riscv_vfadd(pr, __riscv_vslidedown(pr, (size_t)w, n), n);         \
        const VF s = __riscv_vrgather(pr, seg_base, n); /* scores, per segment */     \
        const VF dd = __riscv_vfsub(s, mx##u, n);                                    \
        const VF e = FN(vexp)(__riscv_vfneg(__riscv_vfabs(dd, n), n), n);            \
        const VB up = __riscv_vmfgt(dd, 0.0f, n);   /* new maximum */                \
        const VB keep = __riscv_vmfle(dd, 0.0f, n);                                  \
        const VF alpha = __riscv_vfmerge(e, 1.0f, keep, n); /* exp(M_old - M_new) */ \
        const VF pw = __riscv_vfmerge(e, 1.0f, up, n);      /* exp(s - M_new) */     \
        mx##u = __riscv_vfmax(mx##u, s, n);                                          \
        sm##u = __riscv_vfmadd(sm##u, alpha, pw, n);                                 \
        acc##u = __riscv_vfmacc(__riscv_vfmul(acc##u, alpha, n), pw, vv, n);         \
    }
        REP(STEP)
#undef STEP
    }
#define SAVE(u)                                                           \
    if (last) {                                                           \
        __riscv_vse32(p->o + qo[u], __riscv_vfdiv(acc##u, sm##u, vl[u]), vl[u]); \
    } else {                                                              \
        __riscv_vse32(p->o + qo[u], acc##u, vl[u]);                       \
        __riscv_vse32(c->m + mo[u], mx##u, vl[u]);                        \
        __riscv_vse32(c->s + mo[u], sm##u, vl[u]);                        \
    }
    REP(SAVE)
#undef SAVE
}
