/* fa-v in fp16 (--precision fp16; Zvfh, build with -march=rv64gcv_zvfh). Q, K, V and O are
 * binary16 in memory (Q converted once, outside the region of interest). Regimes: rows
 * (prefill), blocked (GQA decode) and heads (MHA decode): the three --regime auto picks;
 * and dot. packed is refused in fp16 (main.c).
 *
 * Where the arithmetic is fp16 and where it stays fp32:
 *  - scores q.k: fp16 products widened and summed in fp32 (vfwmacc / vfwmul, e16 -> e32):
 *    a dot of D terms in fp16 would lose ~sqrt(D) 2^-11 of a score, and exp() turns a
 *    score's absolute error into the probability's relative error;
 *  - softmax state (running max M, sum S), exp and the rescale factor: fp32, as in fp32 fa-v;
 *  - probabilities P: computed in fp32, rounded once to fp16 (like ggml's vs) to feed the
 *    P V product; S sums the fp32 values;
 *  - O accumulator: P V of one key block accumulates in fp16 (vfmacc at e16: twice the
 *    elements of an fp32 register, the paper's fp16 gain), then is widened and added to an
 *    fp32 accumulator that carries the rescale across key blocks (vfwadd.wv). The fp16 sum
 *    is at most one key block long (16..256 keys), so its rounding does not grow with the
 *    sequence, unlike a whole-row fp16 accumulator (ggml's VKQ16); the fp32 step costs one
 *    widening add per block and D elements, against block_c fp16 multiply-adds.
 * Register grouping: fp16 vectors are e16 m1 and the fp32 sums beside them e32 m2 (the same
 * element count); --lmul takes auto or 1 only. No VLEN is compiled in. */
#if VLSCALE_VECTOR
#include <math.h>
#include <riscv_vector.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "attention/attn.h"

#define LM m1
#define MB 32
#include "attention/rvv_lmul.h"
#undef LM
#undef MB
#define LM m2
#define MB 16
#include "attention/rvv_lmul.h"
#undef LM
#undef MB
#define LM m4
#define MB 8
#include "attention/rvv_lmul.h"
#undef LM
#undef MB

typedef _Float16 h16;
static inline const h16 *H(const attn_f16 *x) { return (const h16 *)x; }
static inline h16 *HW(attn_f16 *x) { return (h16 *)x; }

/* --regime auto, fp32 fa-v's rule (fa_v.c) with fp16's register: rows when a kv head has
 * enough query rows for a strip, heads for MHA once an e16 register holds whole heads,
 * else blocked. Not yet re-measured in gem5 for fp16. */
#define F16_ROWS_AUTO_MIN_ROWS 64
#define F16_ROWS_AUTO_STRIP 128
#define F16_ROWS_AUTO_BLOCK_C 32
#define F16_HEADS_AUTO_BLOCK_C 64
#define F16_MASKED (-1e30f) /* a score no real one reaches (exp underflows to ~0) */

static int is_pow2(int x) { return x >= 1 && !(x & (x - 1)); }
static int ilog2(int x) {
    int lg = 0;
    while ((1 << lg) < x) lg++;
    return lg;
}
static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* ---------------------------------------------------------------- rows (prefill) ----
 * Vectors span up to VLMAX(e16 m1) query rows of one kv head (token-major: row t*G + u is
 * token t, head g*G + u), as fp32's rows regime: scores S[key][row] by vfwmacc.vf (scalar
 * k, vector of Q^T in fp16) into e32 m2, elementwise softmax, O^T[d][row] by vfmacc.vf at
 * e16 (scalar v, vector of P in fp16) per key block, added to the fp32 O^T. Q^T and O^T
 * are copied with strided accesses. */
#define RK 8
#define RD 8
#define REP8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

static void rows_in(const fav16_ctx *c, int g, int r0, int nr) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, G = Hh / p->kv_heads;
    const size_t VLM = (size_t)c->strip;
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
    const int Hh = p->heads, D = p->head_dim, G = Hh / p->kv_heads;
    const size_t VLM = (size_t)c->strip;
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

/* ------------------------------------------------------------ blocked (decode GQA) ----
 * fp32's blocked regime in fp16: the key block transposed (K^T, fp16) so that scores are
 * vectorised across keys (vfwmacc.vf into e32 m2), NREP heads unrolled with the K^T and V
 * rows of a kv head loaded once for its heads; the block's P V in fp16 per strip of D,
 * added to the fp32 accumulator (one per query row of the row block and head). */
__attribute__((noinline)) static void transpose_k16(const fav16_ctx *c, int c0, int c1) {
    const attn_problem *p = c->pf->p;
    const size_t BC = (size_t)c->t.block_c, kv_row = (size_t)p->kv_heads * p->head_dim;
    for (int j = c0; j < c1; j++) {
        const h16 *krow = H(c->pf->k) + (size_t)j * kv_row;
        for (size_t gd = 0; gd < kv_row;) {
            const size_t vl = __riscv_vsetvl_e16m4(kv_row - gd);
            __riscv_vsse16_v_f16m4(HW(c->kt) + gd * BC + (size_t)(j - c0), (ptrdiff_t)(BC * 2),
                                   __riscv_vle16_v_f16m4(krow + gd, vl), vl);
            gd += vl;
        }
    }
}

#define NREP 1
#include "attention/fa_v_f16_blocked.h"
#undef NREP
#define NREP 2
#include "attention/fa_v_f16_blocked.h"
#undef NREP
#define NREP 4
#include "attention/fa_v_f16_blocked.h"
#undef NREP
#define NREP 8
#include "attention/fa_v_f16_blocked.h"
#undef NREP

static void fav16_blocked(const fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, BR = c->t.block_r, BC = c->t.block_c, U = c->t.unroll;
    for (int r0 = 0; r0 < p->n_q; r0 += BR) {
        const int r1 = r0 + BR < p->n_q ? r0 + BR : p->n_q;
        const int kmax = attn_kv_end(p, r1 - 1);
        for (int c0 = 0; c0 < kmax; c0 += BC) {
            transpose_k16(c, c0, c0 + BC < kmax ? c0 + BC : kmax);
            for (int h0 = 0; h0 < Hh; h0 += U) {
                const int nh = Hh - h0 < U ? Hh - h0 : U;
                for (int i = r0; i < r1; i++) {
                    const int end = attn_kv_end(p, i);
                    if (c0 >= end) continue;
                    const int j1 = c0 + BC < end ? c0 + BC : end;
                    const int first = c0 == 0, last = j1 == end;
                    const size_t row = (size_t)(i - r0) * Hh;
                    float *mrow = c->m + row, *srow = c->s + row, *arow = c->acc + row * D;
                    for (int h = h0, left = nh; left > 0;) {
                        const int n = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
                        switch (n) {
                        case 8: blk16_8(c, i, h, c0, j1, mrow + h, srow + h, arow, first, last); break;
                        case 4: blk16_4(c, i, h, c0, j1, mrow + h, srow + h, arow, first, last); break;
                        case 2: blk16_2(c, i, h, c0, j1, mrow + h, srow + h, arow, first, last); break;
                        default: blk16_1(c, i, h, c0, j1, mrow + h, srow + h, arow, first, last); break;
                        }
                        h += n, left -= n;
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------------- heads (decode MHA) ----
 * fp32's heads regime with an e16 m1 register: E = VLMAX(e16 m1) elements hold P = E / D
 * heads (E >= D) or an E-part of one head. Products q k by vfwmul (e16 -> e32 m2), the
 * reduction tree's unzip-adds on e32 m2 pairs (read as e64 m4, narrowed by vnsrl), scores
 * [key][head] in fp32; softmax in fp32 over the block; P V in fp16 per block (P expanded
 * over each head's segment by vrgather at e16) into the fp32 accumulator. */
static inline vfloat32m2_t uzadd2(vfloat32m2_t a, vfloat32m2_t b, size_t e) {
    const vuint64m4_t w = __riscv_vreinterpret_v_u32m4_u64m4(
        __riscv_vreinterpret_v_f32m4_u32m4(__riscv_vcreate_v_f32m2_f32m4(a, b)));
    return __riscv_vfadd(__riscv_vreinterpret_v_u32m2_f32m2(__riscv_vnsrl_wx_u32m2(w, 0, e)),
                         __riscv_vreinterpret_v_u32m2_f32m2(__riscv_vnsrl_wx_u32m2(w, 32, e)), e);
}

/* one kv row (D halves) replicated to len elements by vslideup doubling */
static inline vfloat16m1_t rep16(const h16 *row, int D, size_t len) {
    vfloat16m1_t t = __riscv_vle16_v_f16m1(row, (size_t)D);
    for (size_t cur = (size_t)D; cur < len;) {
        const size_t nx = 2 * cur < len ? 2 * cur : len;
        t = __riscv_vslideup_tu(t, t, cur, nx);
        cur = nx;
    }
    return t;
}

/* K or V of one position laid out like the query heads of register r */
static inline vfloat16m1_t kv16(const fav16_ctx *c, const h16 *row, int r, size_t vl) {
    const int D = c->pf->p->head_dim;
    if (c->pf->p->kv_heads == c->pf->p->heads) return __riscv_vle16_v_f16m1(row + (size_t)r * c->pack * D, vl);
    const int *sg = c->seg + 2 * c->seg_start[r], nseg = c->seg_start[r + 1] - c->seg_start[r];
    vfloat16m1_t out = rep16(row + (size_t)sg[0] * D, D, (size_t)sg[1] * D);
    size_t off = (size_t)sg[1] * D;
    for (int s = 1; s < nseg; s++) {
        const size_t len = (size_t)sg[2 * s + 1] * D;
        out = __riscv_vslideup_tu(out, rep16(row + (size_t)sg[2 * s] * D, D, len), off, off + len);
        off += len;
    }
    return out;
}

#define TSLOT(k, OP)                                                                         \
    switch (k) {                                                                             \
    case 0: OP(s0); break;                                                                   \
    case 1: OP(s1); break;                                                                   \
    case 2: OP(s2); break;                                                                   \
    case 3: OP(s3); break;                                                                   \
    case 4: OP(s4); break;                                                                   \
    case 5: OP(s5); break;                                                                   \
    case 6: OP(s6); break;                                                                   \
    case 7: OP(s7); break;                                                                   \
    default: OP(s8); break;                                                                  \
    }
#define TCOMBINE(slot) x_ = uzadd2(slot, x_, e)
#define TSTORE(slot) slot = x_
#define TPUSH(x)                                                                             \
    do {                                                                                     \
        vfloat32m2_t x_ = (x);                                                               \
        int k_ = 0;                                                                          \
        while (k_ < levels && (n >> k_) & 1u) {                                              \
            TSLOT(k_, TCOMBINE)                                                              \
            k_++;                                                                            \
        }                                                                                    \
        if (k_ == levels) __riscv_vse32_v_f32m2(c->sc + (size_t)(n >> levels) * e, x_, e);   \
        else TSLOT(k_, TSTORE)                                                               \
        n++;                                                                                 \
    } while (0)

__attribute__((noinline)) static void heads_scores(const fav16_ctx *c, int j0, int nk) {
    const attn_problem *p = c->pf->p;
    const int D = p->head_dim, Hh = p->heads, G = Hh / p->kv_heads, B = c->hb;
    const size_t e = __riscv_vsetvlmax_e16m1(), kv_row = (size_t)p->kv_heads * D;
    const int levels = c->tree_levels;
    const vfloat32m2_t zero = __riscv_vfmv_v_f_f32m2(0.0f, e);
    vfloat32m2_t s0 = zero, s1 = zero, s2 = zero, s3 = zero, s4 = zero, s5 = zero, s6 = zero,
                 s7 = zero, s8 = zero;
    unsigned n = 0;
    const h16 *qs = H(c->qs16);
    if ((int)e >= D) {
        const vfloat16m1_t hz = __riscv_vfmv_v_f_f16m1(0, e);
        for (int j = j0; j < j0 + B; j++) {
            const h16 *krow = H(c->pf->k) + (size_t)j * kv_row;
            vfloat16m1_t kk = hz;
            for (int r = 0; r < c->n_regs; r++) {
                if (j >= nk) {
                    TPUSH(zero);
                    continue;
                }
                if (r == 0 || !c->same_prev[r]) kk = kv16(c, krow, r, (size_t)c->pk_vl[r]);
                TPUSH(__riscv_vfwmul_vv_f32m2(__riscv_vle16_v_f16m1(qs + (size_t)r * e, e), kk, e));
            }
        }
        return;
    }
    const int parts = D / (int)e;
    for (int j = j0; j < j0 + B; j++) {
        const h16 *krow = H(c->pf->k) + (size_t)j * kv_row;
        for (int h = 0; h < Hh; h++) {
            if (j >= nk) {
                TPUSH(zero);
                continue;
            }
            const h16 *kr = krow + (size_t)(h / G) * D, *qr = qs + (size_t)h * D;
            vfloat32m2_t x = __riscv_vfwmul_vv_f32m2(__riscv_vle16_v_f16m1(qr, e),
                                                     __riscv_vle16_v_f16m1(kr, e), e);
            for (int q = 1; q < parts; q++)
                x = __riscv_vfwmacc_vv_f32m2(x, __riscv_vle16_v_f16m1(qr + q * e, e),
                                             __riscv_vle16_v_f16m1(kr + q * e, e), e);
            TPUSH(x);
        }
    }
}
#undef TSLOT
#undef TCOMBINE
#undef TSTORE
#undef TPUSH

/* softmax of one block's scores ([key][head], scaled here), in fp32; P to c->pr in fp16 */
__attribute__((noinline)) static void heads_softmax(const fav16_ctx *c, int nb, int first, int last) {
    const int HP = c->hp, B = c->hb;
    const float scale = c->pf->p->scale;
    for (int h = 0; h < HP;) {
        const size_t vl = __riscv_vsetvl_e32m4((size_t)(HP - h));
        vfloat32m4_t mb = __riscv_vfmv_v_f_f32m4(-1e30f, vl);
        for (int j = 0; j < nb; j++)
            mb = __riscv_vfmax(mb, __riscv_vle32_v_f32m4(c->sc + (size_t)j * HP + h, vl), vl);
        mb = __riscv_vfmul(mb, scale, vl);
        const vfloat32m4_t mold = first ? __riscv_vfmv_v_f_f32m4(-1e30f, vl)
                                        : __riscv_vle32_v_f32m4(c->m + h, vl);
        const vfloat32m4_t mnew = __riscv_vfmax(mold, mb, vl);
        __riscv_vse32(c->alpha + h, vexp_m4(__riscv_vfsub(mold, mnew, vl), vl), vl);
        __riscv_vse32(c->m + h, mnew, vl);
        for (int j = 0; j < B; j++)
            __riscv_vse32(c->mrep + (size_t)j * HP + h, j < nb ? mnew : __riscv_vfmv_v_f_f32m4(1e30f, vl), vl);
        h += (int)vl;
    }
    const size_t total = (size_t)B * HP;
    for (size_t x = 0; x < total;) {
        const size_t vl = __riscv_vsetvl_e32m4(total - x);
        const vfloat32m4_t ex = vexp_m4(
            __riscv_vfsub(__riscv_vfmul(__riscv_vle32_v_f32m4(c->sc + x, vl), scale, vl),
                          __riscv_vle32_v_f32m4(c->mrep + x, vl), vl), vl);
        __riscv_vse32(c->sc + x, ex, vl);
        __riscv_vse16_v_f16m2(HW(c->pr) + x, __riscv_vfncvt_f_f_w_f16m2(ex, vl), vl);
        x += vl;
    }
    for (int h = 0; h < HP;) {
        const size_t vl = __riscv_vsetvl_e32m4((size_t)(HP - h));
        vfloat32m4_t l = first ? __riscv_vfmv_v_f_f32m4(0.0f, vl)
                               : __riscv_vfmul(__riscv_vle32_v_f32m4(c->s + h, vl),
                                               __riscv_vle32_v_f32m4(c->alpha + h, vl), vl);
        for (int j = 0; j < nb; j++)
            l = __riscv_vfadd(l, __riscv_vle32_v_f32m4(c->sc + (size_t)j * HP + h, vl), vl);
        __riscv_vse32(c->s + h, l, vl);
        if (last) __riscv_vse32(c->inv + h, __riscv_vfrdiv(l, 1.0f, vl), vl);
        h += (int)vl;
    }
}

/* acc (fp32, [head][D]) = acc * alpha + the block's P V (fp16); to O after the last block */
static inline void heads_acc(float *ad, attn_f16 *o, vfloat16m1_t a, vfloat32m2_t al,
                             vfloat32m2_t inv, int first, int last, size_t e, size_t n_out) {
    const vfloat32m2_t w = first ? __riscv_vfwcvt_f_f_v_f32m2(a, e)
                                 : __riscv_vfwadd_wv_f32m2(
                                       __riscv_vfmul_vv_f32m2(__riscv_vle32_v_f32m2(ad, e), al, e), a, e);
    if (last)
        __riscv_vse16_v_f16m1(HW(o), __riscv_vfncvt_f_f_w_f16m1(__riscv_vfmul_vv_f32m2(w, inv, e), e), n_out);
    else
        __riscv_vse32_v_f32m2(ad, w, e);
}

__attribute__((noinline)) static void heads_pv(const fav16_ctx *c, int i, int j0, int nb,
                                               int first, int last) {
    const attn_problem *p = c->pf->p;
    const int D = p->head_dim, Hh = p->heads, G = Hh / p->kv_heads, HP = c->hp;
    const size_t e = __riscv_vsetvlmax_e16m1(), kv_row = (size_t)p->kv_heads * D;
    const h16 *pr = H(c->pr);
    if ((int)e >= D) {
        const int P = c->pack;
        const vuint16m1_t seg16 = __riscv_vsrl(__riscv_vid_v_u16m1(e), (size_t)c->lg_d, e);
        const vuint32m2_t seg32 = __riscv_vsrl(__riscv_vid_v_u32m2(e), (size_t)c->lg_d, e);
        for (int r = 0; r < c->n_regs; r++) {
            vfloat16m1_t a = __riscv_vfmv_v_f_f16m1(0, e);
            for (int j = 0; j < nb; j++) {
                const vfloat16m1_t vv = kv16(c, H(c->pf->v) + (size_t)(j0 + j) * kv_row, r, (size_t)c->pk_vl[r]);
                const vfloat16m1_t pe = __riscv_vrgather_vv_f16m1(
                    __riscv_vle16_v_f16m1(pr + (size_t)j * HP + (size_t)r * P, (size_t)P), seg16, e);
                a = __riscv_vfmacc_vv_f16m1(a, pe, vv, e);
            }
            const vfloat32m2_t al = __riscv_vrgather_vv_f32m2(
                __riscv_vle32_v_f32m2(c->alpha + r * P, (size_t)P), seg32, e);
            const vfloat32m2_t inv = last ? __riscv_vrgather_vv_f32m2(
                                                __riscv_vle32_v_f32m2(c->inv + r * P, (size_t)P), seg32, e)
                                          : al;
            heads_acc(c->acc + (size_t)r * e, c->pf->o + ((size_t)i * Hh + (size_t)r * P) * D, a, al,
                      inv, first, last, e, (size_t)c->pk_vl[r]);
        }
        return;
    }
    for (int h = 0; h < Hh; h++) { /* E < D: a scalar weight per head and key */
        const vfloat32m2_t al = __riscv_vfmv_v_f_f32m2(c->alpha[h], e);
        const vfloat32m2_t inv = __riscv_vfmv_v_f_f32m2(last ? c->inv[h] : 1.0f, e);
        const h16 *vh = H(c->pf->v) + (size_t)j0 * kv_row + (size_t)(h / G) * D;
        for (int d = 0; d < D; d += (int)e) {
            vfloat16m1_t a = __riscv_vfmv_v_f_f16m1(0, e);
            for (int j = 0; j < nb; j++)
                a = __riscv_vfmacc_vf_f16m1(a, pr[(size_t)j * HP + h],
                                            __riscv_vle16_v_f16m1(vh + (size_t)j * kv_row + d, e), e);
            heads_acc(c->acc + (size_t)h * D + d, c->pf->o + ((size_t)i * Hh + h) * D + d, a, al, inv,
                      first, last, e, e);
        }
    }
}

static void fav16_heads(const fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const size_t hd = (size_t)p->heads * p->head_dim;
    for (int i = 0; i < p->n_q; i++) {
        const h16 *qi = H(c->q16) + (size_t)i * hd;
        for (size_t x = 0; x < hd;) { /* this token's q (padding heads stay 0) */
            const size_t vl = __riscv_vsetvl_e16m4(hd - x);
            __riscv_vse16_v_f16m4(HW(c->qs16) + x, __riscv_vle16_v_f16m4(qi + x, vl), vl);
            x += vl;
        }
        const int nk = attn_kv_end(p, i);
        for (int j0 = 0; j0 < nk; j0 += c->hb) {
            const int nb = nk - j0 < c->hb ? nk - j0 : c->hb, last = j0 + nb == nk;
            heads_scores(c, j0, nk);
            heads_softmax(c, nb, j0 == 0, last);
            heads_pv(c, i, j0, nb, j0 == 0, last);
        }
    }
}

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

/* ------------------------------------------------------------------ prepare / run ---- */
static int heads_prepare(fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, E = (int)__riscv_vsetvlmax_e16m1(), G = Hh / p->kv_heads;
    c->lg_d = ilog2(D);
    c->pack = E >= D ? E / D : 1;
    c->n_regs = (Hh + c->pack - 1) / c->pack;
    c->hp = c->n_regs * c->pack;
    c->tree_levels = ilog2(E < D ? E : D);
    const int unit = E / gcd(E, c->hp), want = c->t.block_c_auto ? F16_HEADS_AUTO_BLOCK_C : c->t.block_c;
    c->hb = (want + unit - 1) / unit * unit;
    c->t.block_c = c->hb;
    if (E >= D) { /* per register: runs of heads sharing a kv head, and repeats */
        c->seg = malloc((size_t)2 * Hh * sizeof(int));
        c->seg_start = malloc((size_t)(c->n_regs + 1) * sizeof(int));
        c->same_prev = calloc((size_t)c->n_regs, 1);
        c->pk_vl = malloc((size_t)c->n_regs * sizeof(int));
        if (!c->seg || !c->seg_start || !c->same_prev || !c->pk_vl) return -1;
        int ns = 0;
        for (int r = 0; r < c->n_regs; r++) {
            c->seg_start[r] = ns;
            const int hb = r * c->pack, he = hb + c->pack < Hh ? hb + c->pack : Hh;
            c->pk_vl[r] = (he - hb) * D;
            for (int h = hb; h < he;) {
                const int kv = h / G, stop = (kv + 1) * G < he ? (kv + 1) * G : he;
                c->seg[2 * ns] = kv, c->seg[2 * ns + 1] = stop - h;
                ns++, h = stop;
            }
            if (r > 0 && ns - c->seg_start[r] == 1 && c->seg_start[r] - c->seg_start[r - 1] == 1 &&
                c->seg[2 * (ns - 1)] == c->seg[2 * (ns - 2)])
                c->same_prev[r] = 1;
        }
        c->seg_start[c->n_regs] = ns;
    }
    const size_t hd = (size_t)c->hp * D, blk = (size_t)c->hb * c->hp;
    c->qs16 = calloc(hd, sizeof(attn_f16));
    c->acc = malloc(hd * sizeof(float));
    c->m = malloc((size_t)c->hp * sizeof(float));
    c->s = malloc((size_t)c->hp * sizeof(float));
    c->alpha = malloc((size_t)c->hp * sizeof(float));
    c->inv = malloc((size_t)c->hp * sizeof(float));
    c->sc = malloc(blk * sizeof(float));
    c->mrep = malloc(blk * sizeof(float));
    c->pr = malloc(blk * sizeof(attn_f16));
    return c->qs16 && c->acc && c->m && c->s && c->alpha && c->inv && c->sc && c->mrep && c->pr ? 0 : -1;
}

int fav16_prepare(fav16_ctx *c, const attn_problem_f16 *pf, const attn_tunables *t) {
    const attn_problem *p = pf->p;
    const int Hh = p->heads, D = p->head_dim, G = Hh / p->kv_heads;
    const size_t nq_el = (size_t)p->n_q * Hh * D;
    *c = (fav16_ctx){.pf = pf, .t = *t};
    c->t.lmul = 1;
    c->vlmax = (int)__riscv_vsetvlmax_e16m1();
    if (c->t.regime == FAV_AUTO)
        c->t.regime = p->n_q * G >= F16_ROWS_AUTO_MIN_ROWS              ? FAV_ROWS
                      : G == 1 && c->vlmax >= D && is_pow2(D)          ? FAV_HEADS
                                                                        : FAV_BLOCKED;
    if (c->t.regime == FAV_HEADS && !is_pow2(D)) c->t.regime = FAV_BLOCKED; /* as fp32 */
    if (c->t.regime == FAV_PACKED) return -2; /* refused by main before this */
    c->q16 = malloc(nq_el * sizeof(attn_f16)); /* Q holds fp16 values: exact */
    if (!c->q16) return -1;
    for (size_t x = 0; x < nq_el; x++) HW(c->q16)[x] = (h16)p->q[x];
    if (c->t.regime == FAV_HEADS) return heads_prepare(c);
    if (c->t.regime == FAV_DOT) {
        if (t->block_c_auto) c->t.block_c = DOT_AUTO_BLOCK_C;
        c->sc = malloc((size_t)c->t.block_c * sizeof(float));
        c->pr = malloc((size_t)c->t.block_c * sizeof(attn_f16));
        c->acc = malloc((size_t)D * sizeof(float));
        return c->sc && c->pr && c->acc ? 0 : -1;
    }
    if (c->t.regime == FAV_ROWS) {
        if (t->block_c_auto) c->t.block_c = F16_ROWS_AUTO_BLOCK_C;
        int want = t->strip > 0 ? t->strip : F16_ROWS_AUTO_STRIP;
        if (t->strip == 0 && want > p->n_q * G) want = p->n_q * G;
        c->strip = want < c->vlmax ? want : c->vlmax;
        const size_t VLM = (size_t)c->strip, BK = (size_t)c->t.block_c;
        c->m = malloc(VLM * sizeof(float));
        c->s = malloc(VLM * sizeof(float));
        c->sc = malloc(BK * VLM * sizeof(float));
        c->pr = malloc(BK * VLM * sizeof(attn_f16));
        c->qt = malloc((size_t)D * VLM * sizeof(attn_f16));
        c->acct = malloc((size_t)D * VLM * sizeof(float));
        c->lim = malloc(VLM * sizeof(int));
        return c->m && c->s && c->sc && c->pr && c->qt && c->acct && c->lim ? 0 : -1;
    }
    /* blocked: U fp32 score accumulators (e32 m2) in registers, U <= 8 */
    if (c->t.unroll > 8) c->t.unroll = 8;
    const size_t per = (size_t)c->t.block_r * Hh, BC = (size_t)c->t.block_c;
    c->m = malloc(per * sizeof(float));
    c->s = malloc(per * sizeof(float));
    c->acc = malloc(per * D * sizeof(float));
    c->sc = malloc(8 * BC * sizeof(float));
    c->pr = malloc(8 * BC * sizeof(attn_f16));
    c->kt = malloc((size_t)p->kv_heads * D * BC * sizeof(attn_f16));
    return c->m && c->s && c->acc && c->sc && c->pr && c->kt ? 0 : -1;
}

void attn_fa_v_f16(const fav16_ctx *c) {
    switch (c->t.regime) {
    case FAV_ROWS: fav16_rows(c); break;
    case FAV_HEADS: fav16_heads(c); break;
    case FAV_DOT: fav16_dot(c); break;
    default: fav16_blocked(c); break;
    }
}

void fav16_release(fav16_ctx *c) {
    free(c->q16), free(c->qs16), free(c->qt), free(c->kt), free(c->pr);
    free(c->m), free(c->s), free(c->sc), free(c->acc), free(c->acct), free(c->alpha);
    free(c->inv), free(c->mrep), free(c->lim);
    free(c->seg), free(c->seg_start), free(c->same_prev), free(c->pk_vl);
}
#endif
