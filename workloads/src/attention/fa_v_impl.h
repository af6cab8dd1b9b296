/* fa-v for one LMUL (included by fa_v.c after rvv_lmul.h). */

/* One kv row (D floats), loaded once and replicated to len elements by vslideup doubling. */
static inline VF FN(fav_rep)(const float *row, int D, size_t len) {
    VF t = VLE(row, (size_t)D);
    for (size_t cur = (size_t)D; cur < len;) {
        const size_t nx = 2 * cur < len ? 2 * cur : len;
        t = __riscv_vslideup_tu(t, t, cur, nx);
        cur = nx;
    }
    return t;
}

/* K or V of one position, laid out like the query heads of packed register r. */
static inline VF FN(fav_kv)(const fav_ctx *c, const float *row, int r, size_t vl) {
    const int D = c->p->head_dim;
    if (c->p->kv_heads == c->p->heads) /* MHA: the heads' rows are contiguous */
        return VLE(row + (size_t)r * c->pack * D, vl);
    const int *sg = c->seg + 2 * c->seg_start[r];
    const int nseg = c->seg_start[r + 1] - c->seg_start[r];
    VF out = FN(fav_rep)(row + (size_t)sg[0] * D, D, (size_t)sg[1] * D);
    size_t off = (size_t)sg[1] * D;
    for (int g = 1; g < nseg; g++) { /* a register spanning several kv heads */
        const size_t len = (size_t)sg[2 * g + 1] * D;
        out = __riscv_vslideup_tu(out, FN(fav_rep)(row + (size_t)sg[2 * g] * D, D, len), off,
                                  off + len);
        off += len;
    }
    return out;
}

#include "attention/fa_v_rows_impl.h"
#include "attention/fa_v_dot_impl.h"

#define NREP 1
#include "attention/fa_v_blocked_impl.h"
#include "attention/fa_v_packed_impl.h"
#undef NREP
#define NREP 2
#include "attention/fa_v_blocked_impl.h"
#include "attention/fa_v_packed_impl.h"
#undef NREP
#define NREP 4
#include "attention/fa_v_blocked_impl.h"
#include "attention/fa_v_packed_impl.h"
#undef NREP
#define NREP 8
#include "attention/fa_v_blocked_impl.h"
#undef NREP

/* Blocked regime, one key block [c0, c0 + BC) of row block [r0, r1): head groups of U
 * heads outermost so that one kv head's K^T and V rows stay in L1 across the block's rows,
 * the group's heads innermost (contiguous in Q and O). */
static void FN(fav_blocked)(const fav_ctx *c, int r0, int r1, int c0) {
    const attn_problem *p = c->p;
    const int H = p->heads, BC = c->t.block_c, U = c->t.unroll;
    for (int h0 = 0; h0 < H; h0 += U) {
        const int nh = H - h0 < U ? H - h0 : U;
        for (int i = r0; i < r1; i++) {
            const int end = attn_kv_end(p, i);
            if (c0 >= end) continue; /* causal: this key block is all masked */
            const int j1 = c0 + BC < end ? c0 + BC : end;
            const int first = c0 == 0, last = j1 == end;
            float *mrow = c->m + (size_t)(i - r0) * H, *srow = c->s + (size_t)(i - r0) * H;
            for (int h = h0, left = nh; left > 0;) {
                if (left >= 8) {
                    RVV_CAT(FN(fav_blk), _8)(c, i, h, c0, j1, mrow + h, srow + h, first, last);
                    h += 8; left -= 8;
                } else if (left >= 4) {
                    RVV_CAT(FN(fav_blk), _4)(c, i, h, c0, j1, mrow + h, srow + h, first, last);
                    h += 4; left -= 4;
                } else if (left >= 2) {
                    RVV_CAT(FN(fav_blk), _2)(c, i, h, c0, j1, mrow + h, srow + h, first, last);
                    h += 2; left -= 2;
                } else {
                    RVV_CAT(FN(fav_blk), _1)(c, i, h, c0, j1, mrow + h, srow + h, first, last);
                    h += 1; left -= 1;
                }
            }
        }
    }
}

static void FN(fav_run)(const fav_ctx *c) {
    const attn_problem *p = c->p;
    const int BR = c->t.block_r, BC = c->t.block_c;
    if (c->rows) {
        FN(fav_rows)(c);
        return;
    }
    if (c->dot) {
        FN(fav_dot)(c);
        return;
    }
    for (int r0 = 0; r0 < p->n_q; r0 += BR) {
        const int r1 = r0 + BR < p->n_q ? r0 + BR : p->n_q;
        const int kmax = attn_kv_end(p, r1 - 1); /* keys seen by the block's last token */
        for (int c0 = 0; c0 < kmax; c0 += BC) {
            if (!c->packed) {
                if (!fav_keys_kept(c))
                    fav_transpose_k(c, c0, c0 + BC < kmax ? c0 + BC : kmax);
                FN(fav_blocked)(c, r0, r1, c0);
                continue;
            }
            for (int i = r0; i < r1; i++) {
                const int end = attn_kv_end(p, i);
                if (c0 >= end) continue; /* causal: this key block is all masked */
                const int j1 = c0 + BC < end ? c0 + BC : end;
                const int first = c0 == 0, last = j1 == end;
                const int R = c->t.r;
                for (int g0 = 0; g0 < c->n_regs; g0 += R) {
                    int left = c->n_regs - g0 < R ? c->n_regs - g0 : R, reg = g0;
                    while (left > 0) { /* R registers per step; tails in halves */
                        if (left >= 4) {
                            RVV_CAT(FN(fav_pk), _4)(c, i, reg, c0, j1, r0, first, last); reg += 4; left -= 4;
                        } else if (left >= 2) {
                            RVV_CAT(FN(fav_pk), _2)(c, i, reg, c0, j1, r0, first, last); reg += 2; left -= 2;
                        } else {
                            RVV_CAT(FN(fav_pk), _1)(c, i, reg, c0, j1, r0, first, last); reg += 1; left -= 1;
                        }
                    }
                }
            }
        }
    }
}
