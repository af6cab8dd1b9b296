/* fa-v in fp16, the rows regime: included once by fa_v_f16.c (one translation unit, as
 * fp32's regimes are). */
/* ---------------------------------------------------------------- rows (prefill) ----
 * Vectors span up to VLMAX(e16 m1, or m2 with --lmul 2) query rows of one kv head
 * (token-major: row t*G + u is token t, head g*G + u), as fp32's rows regime: scores
 * S[key][row] by vfwmacc.vf (scalar k, vector of Q^T in fp16) into e32 m2 (m4),
 * elementwise softmax, O^T[d][row] by vfmacc.vf at
 * e16 (scalar v, vector of P in fp16) per key block, added to the fp32 O^T. Q^T and O^T
 * are copied by tiles in registers (fa_v_tile.h) or with strided accesses. */

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

#define LH m1
#define LW m2
#define RK16 8
#include "attention/fa_v_f16_rows_blk.h"
#undef LH
#undef LW
#undef RK16
#define LH m2
#define LW m4
#define RK16 4
#include "attention/fa_v_f16_rows_blk.h"
#undef LH
#undef LW
#undef RK16

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
                if (c->t.lmul == 2)
                    rows_blk_m2(c, g, nr, j0, j1, full, j0 == 0, j1 == end);
                else
                    rows_blk_m1(c, g, nr, j0, j1, full, j0 == 0, j1 == end);
            }
            rows_out(c, g, r0, nr);
        }
}
