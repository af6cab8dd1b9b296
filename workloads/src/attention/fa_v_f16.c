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
 * Register grouping: e16 m1 fp16 vectors beside e32 m2 fp32 sums (the same element count),
 * or in the rows regime e16 m2 beside e32 m4 (--lmul 2). No VLEN is compiled in. */
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

/* --regime auto: rows when a kv head has enough query rows for a strip, heads for MHA once
 * an e16 register holds whole heads, else blocked. fp32's rule before its dot regime became
 * block-major (fa_v.c); fp16's dot is still row-at-a-time, and the block-major order was
 * slower in fp16 (workloads/README.md, "attention: fp16"). */
#define F16_ROWS_AUTO_MIN_ROWS 64
#define F16_ROWS_AUTO_STRIP 128
/* Rows regime, --strip auto: with D <= 64, strips of 256 rows (gem5, paper-fixed, prefill
 * N = 128, TinyLlama, e16 m1: 4096 bit 2.80M cycles against 3.19M with 128 rows, 8192 bit
 * 2.66M against 3.19M); with D = 128 (Qwen2.5 3B, 8192 bit) 128 rows stay (2.72M against
 * 2.74M). Never more rows than a kv head has. */
#define F16_ROWS_AUTO_STRIP_LONG 256
#define F16_ROWS_LONG_MAX_D 64
/* Rows regime, --lmul auto: e16 m1 when its register holds the strip auto wants, else
 * e16 m2 (e32 m4 sums), which holds twice the rows: each K and V element, a scalar loaded
 * once per strip, then feeds twice the rows. gem5, paper-fixed, prefill N = 128, m1 / m2:
 * TinyLlama 512 bit 8.22M / 6.04M cycles (32 / 64 rows), 1024 bit 4.90M / 4.09M (64 / 128),
 * 2048 bit 3.07M / 2.92M (128 / 256); Qwen2.5 3B 512 bit 7.17M / 5.46M, 1024 bit with m2
 * 3.60M at 128 rows against 4.37M at 64. */
static int rows_auto_strip(const attn_problem *p, const attn_tunables *t) {
    if (t->strip > 0) return t->strip;
    const int rows = p->n_q * (p->heads / p->kv_heads);
    const int want = p->head_dim <= F16_ROWS_LONG_MAX_D ? F16_ROWS_AUTO_STRIP_LONG
                                                        : F16_ROWS_AUTO_STRIP;
    return want < rows ? want : rows;
}
#define F16_ROWS_AUTO_BLOCK_C 32
#define F16_HEADS_AUTO_BLOCK_C 64
#define F16_MASKED (-1e30f) /* a score no real one reaches (exp underflows to ~0) */

static int is_pow2(int x) { return x >= 1 && !(x & (x - 1)); }
static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* --transpose auto in the rows regime: tile transposes (fa_v_tile.h) once an e16
 * register holds this many elements, fp32's element count (gem5, paper-fixed, TinyLlama
 * prefill N = 128: 1024 bit 5.13M cycles against 4.90M strided, 2048 bit 3.07M / 3.40M,
 * 4096 bit 2.17M / 2.80M, 8192 bit 1.90M / 2.66M; workloads/README.md, "attention: fp16") */
#define F16_TILE_MIN_E 128

#define TILE_EW 16
#include "attention/fa_v_tile.h"
#include "attention/fa_v_f16_rows.h"

/* ------------------------------------------------------------ blocked (decode GQA) ----
 * fp32's blocked regime in fp16: the key block transposed (K^T, fp16) so that scores are
 * vectorised across keys (vfwmacc.vf into e32 m2), NREP heads unrolled with the K^T and V
 * rows of a kv head loaded once for its heads; the block's P V in fp16 per strip of D,
 * added to the fp32 accumulator (one per query row of the row block and head). */
/* Key row krow (all kv heads, kv_row halves) into column j of a K^T block or page whose
 * rows are ld keys long: one strided store per register group. */
static inline __attribute__((always_inline)) void store_key_col16(attn_f16 *col, size_t ld,
                                                                 const h16 *krow,
                                                                 size_t kv_row) {
    for (size_t gd = 0; gd < kv_row;) {
        const size_t vl = __riscv_vsetvl_e16m4(kv_row - gd);
        __riscv_vsse16_v_f16m4(HW(col) + gd * ld, (ptrdiff_t)(ld * 2),
                               __riscv_vle16_v_f16m4(krow + gd, vl), vl);
        gd += vl;
    }
}

__attribute__((noinline)) static void transpose_k16(const fav16_ctx *c, int c0, int c1) {
    const attn_problem *p = c->pf->p;
    const size_t BC = (size_t)c->t.block_c, kv_row = (size_t)p->kv_heads * p->head_dim;
    for (int j = c0; j < c1; j++)
        store_key_col16(c->kt + (size_t)(j - c0), BC, H(c->pf->k) + (size_t)j * kv_row, kv_row);
}

#if FAV_KCACHE
/* --k-cache transposed: fp32's kept K^T pages (fa_v.c) in fp16, [page][kv head][D][block_c];
 * the positions before the step's tokens written outside the region of interest, the
 * step's own keys appended inside it. */
static attn_f16 *kcache16_at(const fav16_ctx *c, size_t j) {
    const size_t B = (size_t)c->t.block_c, kv_row = (size_t)c->pf->p->kv_heads * c->pf->p->head_dim;
    return c->ktc + j / B * kv_row * B + j % B;
}

static int kcache16_prepare(fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const size_t n = (size_t)p->n_kv, kv_row = (size_t)p->kv_heads * p->head_dim;
    const size_t B = (size_t)c->t.block_c, pages = (n + B - 1) / B;
    c->ktc = malloc(pages * kv_row * B * sizeof(attn_f16));
    if (!c->ktc) return -1;
    for (size_t j = 0; j < n - (size_t)p->n_q; j++) {
        attn_f16 *col = kcache16_at(c, j);
        for (size_t gd = 0; gd < kv_row; gd++) col[gd * B] = c->pf->k[j * kv_row + gd];
    }
    return 0;
}

__attribute__((noinline)) static void kcache16_append(const fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const size_t n = (size_t)p->n_kv, kv_row = (size_t)p->kv_heads * p->head_dim;
    for (size_t j = n - (size_t)p->n_q; j < n; j++)
        store_key_col16(kcache16_at(c, j), (size_t)c->t.block_c, H(c->pf->k) + j * kv_row, kv_row);
}
#endif

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
#if FAV_KCACHE
            if (!c->ktc)
#endif
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

#include "attention/fa_v_f16_heads.h"
#include "attention/fa_v_f16_dot.h"

/* ------------------------------------------------------------------ prepare / run ---- */
static int heads_prepare(fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const int Hh = p->heads, D = p->head_dim, E = (int)__riscv_vsetvlmax_e16m1(), G = Hh / p->kv_heads;
    c->lg_d = fav_log2(D);
    c->pack = E >= D ? E / D : 1;
    c->n_regs = (Hh + c->pack - 1) / c->pack;
    c->hp = c->n_regs * c->pack;
    c->tree_levels = fav_log2(E < D ? E : D);
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
    const int e1 = (int)__riscv_vsetvlmax_e16m1();
    if (c->t.regime == FAV_AUTO)
        c->t.regime = p->n_q * G >= F16_ROWS_AUTO_MIN_ROWS     ? FAV_ROWS
                      : G == 1 && e1 >= D && is_pow2(D)       ? FAV_HEADS
                                                               : FAV_BLOCKED;
    if (c->t.regime == FAV_HEADS && !is_pow2(D)) c->t.regime = FAV_BLOCKED; /* as fp32 */
    if (c->t.regime == FAV_PACKED) return -2; /* refused by main before this */
    if (c->t.regime != FAV_ROWS && c->t.lmul > 1) return -3; /* only rows has e16 m2 */
    if (c->t.regime == FAV_ROWS && c->t.lmul == 0) c->t.lmul = e1 >= rows_auto_strip(p, t) ? 1 : 2;
    if (c->t.lmul == 0) c->t.lmul = 1;
    c->vlmax = c->t.lmul == 2 ? (int)__riscv_vsetvlmax_e16m2() : e1;
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
        const int want = rows_auto_strip(p, t);
        c->strip = want < c->vlmax ? want : c->vlmax;
        const size_t VLM = (size_t)c->strip, BK = (size_t)c->t.block_c;
        c->m = malloc(VLM * sizeof(float));
        c->s = malloc(VLM * sizeof(float));
        c->sc = malloc(BK * VLM * sizeof(float));
        c->pr = malloc(BK * VLM * sizeof(attn_f16));
        c->qt = malloc((size_t)D * VLM * sizeof(attn_f16));
        c->acct = malloc((size_t)D * VLM * sizeof(float));
        c->lim = malloc(VLM * sizeof(int));
        const int tr = fav16_tile_rows(D);
        c->tile_rows = t->transpose == FAV_TRANSPOSE_STRIDED                      ? 0
                       : t->transpose == FAV_TRANSPOSE_TILE || e1 >= F16_TILE_MIN_E ? tr
                                                                                  : 0;
        if (c->tile_rows && !(c->tile = malloc((size_t)c->tile_rows * D * sizeof(attn_f16))))
            return -1;
        return c->m && c->s && c->sc && c->pr && c->qt && c->acct && c->lim ? 0 : -1;
    }
    /* blocked: U fp32 score accumulators (e32 m2) in registers, U <= 8 */
    if (c->t.unroll > 8) c->t.unroll = 8;
#if FAV_KCACHE
    if (t->k_cache == FAV_KC_TRANSPOSED && t->block_c_auto)
        c->t.block_c = fav_kcache_page_keys((size_t)p->kv_heads * D * sizeof(attn_f16), c->vlmax);
#endif
    const size_t per = (size_t)c->t.block_r * Hh, BC = (size_t)c->t.block_c;
    c->m = malloc(per * sizeof(float));
    c->s = malloc(per * sizeof(float));
    c->acc = malloc(per * D * sizeof(float));
    c->sc = malloc(8 * BC * sizeof(float));
    c->pr = malloc(8 * BC * sizeof(attn_f16));
    if (!c->m || !c->s || !c->acc || !c->sc || !c->pr) return -1;
#if FAV_KCACHE
    if (t->k_cache == FAV_KC_TRANSPOSED) return kcache16_prepare(c); /* no block copy */
#endif
    c->kt = malloc((size_t)p->kv_heads * D * BC * sizeof(attn_f16));
    return c->kt ? 0 : -1;
}

void attn_fa_v_f16(const fav16_ctx *c) {
#if FAV_KCACHE
    if (c->ktc) kcache16_append(c);
#endif
    switch (c->t.regime) {
    case FAV_ROWS: fav16_rows(c); break;
    case FAV_HEADS: fav16_heads(c); break;
    case FAV_DOT: fav16_dot(c); break;
    default: fav16_blocked(c); break;
    }
}

void fav16_release(fav16_ctx *c) {
#if FAV_KCACHE
    free(c->ktc);
#endif
    free(c->q16), free(c->qs16), free(c->qt), free(c->kt), free(c->pr);
    free(c->m), free(c->s), free(c->sc), free(c->acc), free(c->acct), free(c->alpha);
    free(c->inv), free(c->mrep), free(c->lim), free(c->tile);
    free(c->seg), free(c->seg_start), free(c->same_prev), free(c->pk_vl);
}
#endif
