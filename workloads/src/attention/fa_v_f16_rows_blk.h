/* fa-v in fp16, rows regime: one strip against one key block. Included once per register
 * grouping by fa_v_f16_rows.h, with LH the fp16 LMUL (m1 or m2) and LW the fp32 one beside
 * it (m2 or m4, the same element count); the functions get the suffix _<LH>. A longer
 * grouping holds a longer strip at the same VLEN, so each K and V element, loaded as a
 * scalar once per strip, feeds more rows (fp32's rows regime reaches 64 rows at 512 bit
 * with LMUL 4; e16 m1 holds 32). */
#undef VH
#undef VW
#undef VIW
#undef RFN
#undef SETVL_H
#undef VLE_H
#undef VFMV_H
#undef VLE_W
#undef VLE_IW
#undef VFMV_W
#undef VEXP_W
#undef REPK
#define VH RVV_CAT3(vfloat16, LH, _t)
#define VW RVV_CAT3(vfloat32, LW, _t)
#define VIW RVV_CAT3(vint32, LW, _t)
#define RFN(name) RVV_CAT3(name, _, LH)
#define SETVL_H(n) RVV_CAT(__riscv_vsetvl_e16, LH)(n)
#define VLE_H(ptr, vl) RVV_CAT(__riscv_vle16_v_f16, LH)(ptr, vl)
#define VFMV_H(x, vl) RVV_CAT(__riscv_vfmv_v_f_f16, LH)(x, vl)
#define VLE_W(ptr, vl) RVV_CAT(__riscv_vle32_v_f32, LW)(ptr, vl)
#define VLE_IW(ptr, vl) RVV_CAT(__riscv_vle32_v_i32, LW)(ptr, vl)
#define VFMV_W(x, vl) RVV_CAT(__riscv_vfmv_v_f_f32, LW)(x, vl)
#define VEXP_W(x, vl) RVV_CAT(vexp_, LW)(x, vl)
/* keys' scores and O^T dimensions in registers: 8 at m1 (e32 m2 sums), 4 at m2 (m4) */
#if RK16 == 8
#define REPK(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#define REPK(X) X(0) X(1) X(2) X(3)
#endif

/* fp32 O^T row update: at = at * alpha + a (fp16 block sum); after the last block the row
 * goes, divided by the sums, to the fp16 O^T in qt. */
static inline void RFN(rows_acc)(float *at, attn_f16 *ot, VH a, VW alpha, VW inv, int first,
                                 int last, size_t vl) {
    VW w = first ? __riscv_vfwcvt_f(a, vl)
                 : __riscv_vfwadd_wv(__riscv_vfmul(VLE_W(at, vl), alpha, vl), a, vl);
    if (last)
        __riscv_vse16(HW(ot), __riscv_vfncvt_f(__riscv_vfmul(w, inv, vl), vl), vl);
    else
        __riscv_vse32(at, w, vl);
}

__attribute__((noinline)) static void RFN(rows_blk)(const fav16_ctx *c, int g, int nr, int j0,
                                                    int j1, int full, int first, int last) {
    const attn_problem *p = c->pf->p;
    const int D = p->head_dim;
    const size_t kv_row = (size_t)p->kv_heads * D, VLM = (size_t)c->strip;
    const size_t vl = SETVL_H((size_t)nr);
    const h16 *kg = H(c->pf->k) + (size_t)g * D, *vg = H(c->pf->v) + (size_t)g * D;
    const h16 *qt = H(c->qt);
    const VIW lim = VLE_IW(c->lim, vl);
    VW bm = VFMV_W(F16_MASKED, vl);

    /* 1. scores, RK16 keys per pass over Q^T, fp32 sums of fp16 products */
    for (int jk = j0; jk < j1; jk += RK16) {
        const h16 *kr[RK16];
        for (int k = 0; k < RK16; k++)
            kr[k] = kg + (size_t)(jk + k < j1 ? jk + k : j1 - 1) * kv_row;
#define ZERO(k) VW s##k = VFMV_W(0.0f, vl);
        REPK(ZERO)
#undef ZERO
        for (int d = 0; d < D; d++) {
            const VH qv = VLE_H(qt + (size_t)d * VLM, vl);
#define DOT(k) s##k = __riscv_vfwmacc(s##k, kr[k][d], qv, vl);
            REPK(DOT)
#undef DOT
        }
#define SAVE(k)                                                                                    \
    if (jk + (k) < j1) {                                                                           \
        s##k = __riscv_vfmul(s##k, p->scale, vl);                                                  \
        if (jk + (k) >= full)                                                                      \
            s##k = __riscv_vfmerge(s##k, F16_MASKED, __riscv_vmsle(lim, jk + (k), vl), vl);         \
        bm = __riscv_vfmax(bm, s##k, vl);                                                          \
        __riscv_vse32(c->sc + (size_t)(jk + (k) - j0) * VLM, s##k, vl);                           \
    }
        REPK(SAVE)
#undef SAVE
    }

    /* 2. online softmax in fp32; P rounded to fp16 */
    const VW mold = first ? VFMV_W(F16_MASKED, vl) : VLE_W(c->m, vl);
    const VW mnew = __riscv_vfmax(mold, bm, vl);
    const VW alpha = VEXP_W(__riscv_vfsub(mold, mnew, vl), vl);
    VW lsum = VFMV_W(0.0f, vl);
    for (int j = j0; j < j1; j++) {
        const VW e = VEXP_W(__riscv_vfsub(VLE_W(c->sc + (size_t)(j - j0) * VLM, vl), mnew, vl), vl);
        __riscv_vse16(HW(c->pr) + (size_t)(j - j0) * VLM, __riscv_vfncvt_f(e, vl), vl);
        lsum = __riscv_vfadd(lsum, e, vl);
    }
    const VW snew = first ? lsum : __riscv_vfmacc(lsum, alpha, VLE_W(c->s, vl), vl);
    __riscv_vse32(c->s, snew, vl);
    __riscv_vse32(c->m, mnew, vl);
    const VW inv = last ? __riscv_vfrdiv(snew, 1.0f, vl) : snew;

    /* 3. O^T: the block's P V in fp16 (RK16 dimensions in registers), into the fp32 O^T */
    const h16 *pr = H(c->pr);
    int d0 = 0;
    for (; d0 + RK16 <= D; d0 += RK16) {
#define Z16(k) VH a##k = VFMV_H(0, vl);
        REPK(Z16)
#undef Z16
        for (int j = j0; j < j1; j++) {
            const VH pj = VLE_H(pr + (size_t)(j - j0) * VLM, vl);
            const h16 *vr = vg + (size_t)j * kv_row + d0;
#define MAC(k) a##k = __riscv_vfmacc(a##k, vr[k], pj, vl);
            REPK(MAC)
#undef MAC
        }
#define ACC(k) RFN(rows_acc)(c->acct + (size_t)(d0 + (k)) * VLM, c->qt + (size_t)(d0 + (k)) * VLM, \
                             a##k, alpha, inv, first, last, vl);
        REPK(ACC)
#undef ACC
    }
    for (; d0 < D; d0++) { /* D not a multiple of RK16 */
        VH a = VFMV_H(0, vl);
        for (int j = j0; j < j1; j++)
            a = __riscv_vfmacc(a, vg[(size_t)j * kv_row + d0], VLE_H(pr + (size_t)(j - j0) * VLM, vl), vl);
        RFN(rows_acc)(c->acct + (size_t)d0 * VLM, c->qt + (size_t)d0 * VLM, a, alpha, inv, first,
                      last, vl);
    }
}
