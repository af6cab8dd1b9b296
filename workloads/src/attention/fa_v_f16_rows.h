/* fa-v in fp16, the rows regime: included once by fa_v_f16.c (one translation unit, as
 * fp32's regimes are). */
/* ---------------------------------------------------------------- rows (prefill) ----
 * Vectors span up to VLMAX(e16 m1) query rows of one kv head (token-major: row t*G + u is
 * token t, head g*G + u), as fp32's rows regime: scores S[key][row] by vfwmacc.vf (scalar
 * k, vector of Q^T in fp16) into e32 m2, elementwise softmax, O^T[d][row] by vfmacc.vf at
 * e16 (scalar v, vector of P in fp16) per key block, added to the fp32 O^T. Q^T and O^T
 * are copied by tiles in registers (fa_v_tile.h) or with strided accesses. */
#define RK 8
#define RD 8
#define REP8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

static void rows_in(const fav16_ctx *c, int g, int r0, int nr) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, G = Hh / p->kv_heads, TR = c->tile_rows;
    const size_t VLM = (size_t)c->strip;
    if (TR) {
        for (int r = 0; r < nr; r++) c->lim[r] = attn_kv_end(p, (r0 + r) / G);
        for (int rb = 0; rb < nr; rb += TR) {
            const int n = nr - rb < TR ? nr - rb : TR;
            fav16_rows_copy(p, g, r0 + rb, n, c->q16, c->tile, 1);
            fav16_tile_fwd(c->tile, D, c->qt + rb, VLM, n);
        }
        return;
    }
    for (int r = 0; r < nr; r++) {
        const int t = (r0 + r) / G, u = (r0 + r) % G;
        c->lim[r] = attn_kv_end(p, t);
        const attn_f16 *q = c->q16 + ((size_t)t * Hh + (size_t)g * G + u) * D;
        for (int d = 0; d < D;) {
            const size_t vl = __riscv_vsetvl_e16m1((size_t)(D - d));
            __riscv_vsse16_v_f16m1(HW(c->qt) + (size_t)d * VLM + r, (ptrdiff_t)(VLM * 2),
                                   __riscv_vle16_v_f16m1(H(q) + d, vl), vl);
            d += (int)vl;
        }
    }
}

/* O rows from the fp16 O^T (left in c->qt by the last key block) */
static void rows_out(const fav16_ctx *c, int g, int r0, int nr) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, G = Hh / p->kv_heads, TR = c->tile_rows;
    const size_t VLM = (size_t)c->strip;
    if (TR) {
        for (int rb = 0; rb < nr; rb += TR) {
            const int n = nr - rb < TR ? nr - rb : TR;
            fav16_tile_bwd(c->qt + rb, VLM, n, D, c->tile);
            fav16_rows_copy(p, g, r0 + rb, n, c->pf->o, c->tile, 0);
        }
        return;
    }
    for (int r = 0; r < nr; r++) {
        const int t = (r0 + r) / G, u = (r0 + r) % G;
        attn_f16 *o = c->pf->o + ((size_t)t * Hh + (size_t)g * G + u) * D;
        for (int d = 0; d < D;) {
            const size_t vl = __riscv_vsetvl_e16m1((size_t)(D - d));
            __riscv_vse16_v_f16m1(HW(o) + d,
                                  __riscv_vlse16_v_f16m1(H(c->qt) + (size_t)d * VLM + r,
                                                         (ptrdiff_t)(VLM * 2), vl), vl);
            d += (int)vl;
        }
    }
}

/* fp32 O^T row update: at = at * alpha + a (fp16 block sum); after the last block the row
 * goes, divided by the sums, to the fp16 O^T in qt. */
static inline void rows_acc(float *at, attn_f16 *ot, vfloat16m1_t a, vfloat32m2_t alpha,
                            vfloat32m2_t inv, int first, int last, size_t vl) {
    vfloat32m2_t w = first ? __riscv_vfwcvt_f_f_v_f32m2(a, vl)
                           : __riscv_vfwadd_wv_f32m2(
                                 __riscv_vfmul_vv_f32m2(__riscv_vle32_v_f32m2(at, vl), alpha, vl), a, vl);
    if (last)
        __riscv_vse16_v_f16m1(HW(ot), __riscv_vfncvt_f_f_w_f16m1(__riscv_vfmul_vv_f32m2(w, inv, vl), vl), vl);
    else
        __riscv_vse32_v_f32m2(at, w, vl);
}

__attribute__((noinline)) static void rows_blk(const fav16_ctx *c, int g, int nr, int j0,
                                               int j1, int full, int first, int last) {
    const attn_problem *p = c->pf->p;
    const int D = p->head_dim;
    const size_t kv_row = (size_t)p->kv_heads * D, VLM = (size_t)c->strip;
    const size_t vl = __riscv_vsetvl_e16m1((size_t)nr);
    const h16 *kg = H(c->pf->k) + (size_t)g * D, *vg = H(c->pf->v) + (size_t)g * D;
    const h16 *qt = H(c->qt);
    const vint32m2_t lim = __riscv_vle32_v_i32m2(c->lim, vl);
    vfloat32m2_t bm = __riscv_vfmv_v_f_f32m2(F16_MASKED, vl);

    /* 1. scores, RK keys per pass over Q^T, fp32 sums of fp16 products */
    for (int jk = j0; jk < j1; jk += RK) {
        const h16 *kr[RK];
        for (int k = 0; k < RK; k++) kr[k] = kg + (size_t)(jk + k < j1 ? jk + k : j1 - 1) * kv_row;
#define ZERO(k) vfloat32m2_t s##k = __riscv_vfmv_v_f_f32m2(0.0f, vl);
        REP8(ZERO)
#undef ZERO
        for (int d = 0; d < D; d++) {
            const vfloat16m1_t qv = __riscv_vle16_v_f16m1(qt + (size_t)d * VLM, vl);
#define DOT(k) s##k = __riscv_vfwmacc_vf_f32m2(s##k, kr[k][d], qv, vl);
            REP8(DOT)
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
        REP8(SAVE)
#undef SAVE
    }

    /* 2. online softmax in fp32; P rounded to fp16 */
    const vfloat32m2_t mold = first ? __riscv_vfmv_v_f_f32m2(F16_MASKED, vl)
                                    : __riscv_vle32_v_f32m2(c->m, vl);
    const vfloat32m2_t mnew = __riscv_vfmax(mold, bm, vl);
    const vfloat32m2_t alpha = vexp_m2(__riscv_vfsub(mold, mnew, vl), vl);
    vfloat32m2_t lsum = __riscv_vfmv_v_f_f32m2(0.0f, vl);
    for (int j = j0; j < j1; j++) {
        const vfloat32m2_t e = vexp_m2(
            __riscv_vfsub(__riscv_vle32_v_f32m2(c->sc + (size_t)(j - j0) * VLM, vl), mnew, vl), vl);
        __riscv_vse16_v_f16m1(HW(c->pr) + (size_t)(j - j0) * VLM, __riscv_vfncvt_f_f_w_f16m1(e, vl), vl);
        lsum = __riscv_vfadd(lsum, e, vl);
    }
    const vfloat32m2_t snew = first ? lsum : __riscv_vfmacc(lsum, alpha, __riscv_vle32_v_f32m2(c->s, vl), vl);
    __riscv_vse32(c->s, snew, vl);
    __riscv_vse32(c->m, mnew, vl);
    const vfloat32m2_t inv = last ? __riscv_vfrdiv(snew, 1.0f, vl) : snew;

    /* 3. O^T: the block's P V in fp16 (RD dimensions in registers), into the fp32 O^T */
    const h16 *pr = H(c->pr);
    int d0 = 0;
    for (; d0 + RD <= D; d0 += RD) {
#define Z16(k) vfloat16m1_t a##k = __riscv_vfmv_v_f_f16m1(0, vl);
        REP8(Z16)
#undef Z16
        for (int j = j0; j < j1; j++) {
            const vfloat16m1_t pj = __riscv_vle16_v_f16m1(pr + (size_t)(j - j0) * VLM, vl);
            const h16 *vr = vg + (size_t)j * kv_row + d0;
#define MAC(k) a##k = __riscv_vfmacc_vf_f16m1(a##k, vr[k], pj, vl);
            REP8(MAC)
#undef MAC
        }
#define ACC(k) rows_acc(c->acct + (size_t)(d0 + (k)) * VLM, c->qt + (size_t)(d0 + (k)) * VLM, \
                        a##k, alpha, inv, first, last, vl);
        REP8(ACC)
#undef ACC
    }
    for (; d0 < D; d0++) { /* D not a multiple of RD */
        vfloat16m1_t a = __riscv_vfmv_v_f_f16m1(0, vl);
        for (int j = j0; j < j1; j++)
            a = __riscv_vfmacc_vf_f16m1(a, vg[(size_t)j * kv_row + d0],
                                        __riscv_vle16_v_f16m1(pr + (size_t)(j - j0) * VLM, vl), vl);
        rows_acc(c->acct + (size_t)d0 * VLM, c->qt + (size_t)d0 * VLM, a, alpha, inv, first, last, vl);
    }
}

static void fav16_rows(const fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const int G = p->heads / p->kv_heads, nrows = p->n_q * G, VLM = c->strip, BK = c->t.block_c;
    for (int g = 0; g < p->kv_heads; g++)
        for (int r0 = 0; r0 < nrows; r0 += VLM) {
            const int nr = nrows - r0 < VLM ? nrows - r0 : VLM;
            rows_in(c, g, r0, nr);
            const int full = attn_kv_end(p, r0 / G), end = attn_kv_end(p, (r0 + nr - 1) / G);
            for (int j0 = 0; j0 < end; j0 += BK) {
                const int j1 = j0 + BK < end ? j0 + BK : end;
                rows_blk(c, g, nr, j0, j1, full, j0 == 0, j1 == end);
            }
            rows_out(c, g, r0, nr);
        }
}
#undef RK
#undef RD
