/* Q8_0 GEMV kernels: y[r] = sum_b fp32(d_w[r,b]) * fp32(d_x[b]) * sum_j q_w[r,b,j] * q_x[b,j].
 * Every kernel forms the same int32 block sums and the same fp32 scale products; only the
 * fp32 summation order over blocks may differ. */
#include <stdlib.h>

#include "common/harness.h"
#include "q8/q8.h"

#if VLSCALE_VECTOR
#include <riscv_vector.h>

#include "q8/q8_blocks.h"
#endif

#define Q8_AI static inline __attribute__((always_inline))

/* Each kernel is written once with use_tab as a parameter and instantiated twice, so
 * the scale decode is specialised (no per-block test of which decode to use). */
#define Q8_DISPATCH(name, impl)                                                     \
    void name(const q8_problem *p, float *y) {                                      \
        if (p->f16tab) impl(p, y, p->f16tab, 1);                                    \
        else impl(p, y, NULL, 0);                                                   \
    }

Q8_AI void scalar_impl(const q8_problem *p, float *y, const float *tab, int use_tab) {
    const size_t nb = p->nb;
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * nb;
        float sumf = 0.0f;
        for (size_t b = 0; b < nb; b++) {
            int32_t sumi = 0;
            for (int j = 0; j < QK; j++) sumi += (int32_t)w[b].qs[j] * (int32_t)p->xq[b].qs[j];
            sumf += (float)sumi * (q8_scale(w[b].d, tab, use_tab) *
                                   q8_scale(p->xq[b].d, tab, use_tab));
        }
        y[r] = sumf;
    }
}
Q8_DISPATCH(q8_scalar, scalar_impl)

#if VLSCALE_VECTOR

/* ---- q8-ggml: ggml's RVV dot, one block per iteration, vl = 32 whatever VLEN is.
 * e8m2 gives VLMAX >= 32 already at VLEN 128; the products widen to i16m4. */
Q8_AI void ggml_impl(const q8_problem *p, float *y, const float *tab, int use_tab) {
    const size_t nb = p->nb;
    const size_t vl = QK;
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * nb;
        float sumf = 0.0f;
        for (size_t b = 0; b < nb; b++) {
            vint8m2_t vw = __riscv_vle8_v_i8m2(w[b].qs, vl);
            vint8m2_t vx = __riscv_vle8_v_i8m2(p->xq[b].qs, vl);
            vint16m4_t prod = __riscv_vwmul_vv_i16m4(vw, vx, vl);
            vint32m1_t zero = __riscv_vmv_v_x_i32m1(0, vl);
            vint32m1_t red = __riscv_vwredsum_vs_i16m4_i32m1(prod, zero, vl);
            int32_t sumi = __riscv_vmv_x_s_i32m1_i32(red);
            sumf += (float)sumi * (q8_scale(w[b].d, tab, use_tab) *
                                   q8_scale(p->xq[b].d, tab, use_tab));
        }
        y[r] = sumf;
    }
}
Q8_DISPATCH(q8_ggml, ggml_impl)

/* ---- q8-packed: the paper's long-VL attempt. VLMAX(e8m2)/32 blocks share a register:
 * each block's 32 quants are loaded (unit stride, vl 32) and slid up into place; one
 * widening multiply covers all of them; then one masked widening reduction per block
 * (mask = lanes of that block) and the scalar scale product. */
size_t q8_packed_blocks_per_reg(void) { return __riscv_vsetvlmax_e8m2() / QK; }

Q8_AI void packed_impl(const q8_problem *p, float *y, int pack_x_once, int8_t *xbuf,
                       const float *tab, int use_tab) {
    const size_t nb = p->nb;
    const size_t vlmax = __riscv_vsetvlmax_e8m2();
    const size_t bpr = vlmax / QK;
    /* lane i belongs to block i / 32 of the register */
    const vuint16m4_t grp = __riscv_vsrl_vx_u16m4(__riscv_vid_v_u16m4(vlmax), 5, vlmax);
    const vint32m1_t zero = __riscv_vmv_v_x_i32m1(0, __riscv_vsetvlmax_e32m1());
    if (pack_x_once) /* x quants without their scales, contiguous: one load per group */
        for (size_t b = 0; b < nb; b++)
            __riscv_vse8_v_i8m2(xbuf + b * QK, __riscv_vle8_v_i8m2(p->xq[b].qs, QK), QK);
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * nb;
        float sumf = 0.0f;
        for (size_t b0 = 0; b0 < nb; b0 += bpr) {
            const size_t nblk = nb - b0 < bpr ? nb - b0 : bpr;
            const size_t vl = nblk * QK;
            vint8m2_t vw = pack_blocks(w + b0, nblk);
            vint8m2_t vx = pack_x_once ? __riscv_vle8_v_i8m2(xbuf + b0 * QK, vl)
                                       : pack_blocks(p->xq + b0, nblk);
            vint16m4_t prod = __riscv_vwmul_vv_i16m4(vw, vx, vl);
            for (size_t j = 0; j < nblk; j++) {
                vbool4_t m = __riscv_vmseq_vx_u16m4_b4(grp, (uint16_t)j, vl);
                vint32m1_t red = __riscv_vwredsum_vs_i16m4_i32m1_m(m, prod, zero, vl);
                int32_t sumi = __riscv_vmv_x_s_i32m1_i32(red);
                sumf += (float)sumi * (q8_scale(w[b0 + j].d, tab, use_tab) *
                                       q8_scale(p->xq[b0 + j].d, tab, use_tab));
            }
        }
        y[r] = sumf;
    }
}

void q8_packed(const q8_problem *p, float *y, int pack_x_once, int8_t *xbuf) {
    if (p->f16tab) packed_impl(p, y, pack_x_once, xbuf, p->f16tab, 1);
    else packed_impl(p, y, pack_x_once, xbuf, NULL, 0);
}

/* ---- q8-split: row-interleaved tiles of T = VLMAX(e8m1) rows. Inside a tile, column k
 * holds the int8 weights of the tile's rows contiguously; the scales live apart, per
 * (tile, block), as float32 over the rows. Each lane is one output row: per column pair,
 * int8 weights x scalar int8 activation -> int16 (two products of at most 127*127 fit),
 * widened into int32 row sums; per block, int32 -> f32 and a fused multiply-add with
 * (row scales * d_x). No packing, no reduction, unit-stride loads only. */
size_t q8_split_tile_rows(void) { return __riscv_vsetvlmax_e8m1(); }

void q8_split_convert(const q8_problem *p, q8_split_layout *s) {
    const size_t rows = p->rows, cols = p->cols, nb = p->nb, T = q8_split_tile_rows();
    s->rows = rows;
    s->cols = cols;
    s->nb = nb;
    s->tile = T;
    s->wq = xaligned(rows * cols);
    s->ws = xaligned(rows * nb * sizeof(float));
    for (size_t t0 = 0; t0 < rows; t0 += T) {
        const size_t tr = rows - t0 < T ? rows - t0 : T; /* the last tile may be short */
        int8_t *wt = s->wq + t0 * cols;
        float *st = s->ws + t0 * nb;
        for (size_t i = 0; i < tr; i++) {
            const block_q8 *w = p->w + (t0 + i) * nb;
            for (size_t b = 0; b < nb; b++) {
                st[b * tr + i] = fp16_to_fp32(w[b].d);
                for (int j = 0; j < QK; j++) wt[(b * QK + (size_t)j) * tr + i] = w[b].qs[j];
            }
        }
    }
}

void q8_split_free(q8_split_layout *s) {
    free(s->wq);
    free(s->ws);
    s->wq = NULL;
    s->ws = NULL;
}

Q8_AI void split_impl(const q8_split_layout *s, const block_q8 *xq, float *y,
                      const float *tab, int use_tab, int sext) {
    const size_t rows = s->rows, cols = s->cols, nb = s->nb, T = s->tile;
    for (size_t t0 = 0; t0 < rows; t0 += T) {
        /* rows in this tile: <= VLMAX, so vsetvl grants exactly that */
        const size_t vl = __riscv_vsetvl_e8m1(rows - t0 < T ? rows - t0 : T);
        const int8_t *wt = s->wq + t0 * cols;
        const float *st = s->ws + t0 * nb;
        vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, vl);
        for (size_t b = 0; b < nb; b++) {
            const int8_t *wb = wt + b * QK * vl;
            vint32m4_t isum = sext ? split_block_sext(wb, xq[b].qs, vl)
                                   : split_block_pair(wb, xq[b].qs, vl);
            vfloat32m4_t fsum = __riscv_vfcvt_f_x_v_f32m4(isum, vl);
            vfloat32m4_t sc = __riscv_vle32_v_f32m4(st + b * vl, vl);
            sc = __riscv_vfmul_vf_f32m4(sc, q8_scale(xq[b].d, tab, use_tab), vl);
            acc = __riscv_vfmacc_vv_f32m4(acc, fsum, sc, vl);
        }
        __riscv_vse32_v_f32m4(y + t0, acc, vl);
    }
}

void q8_split(const q8_split_layout *s, const block_q8 *xq, const float *f16tab, int sext,
              float *y) {
    if (f16tab && sext) split_impl(s, xq, y, f16tab, 1, 1);
    else if (f16tab) split_impl(s, xq, y, f16tab, 1, 0);
    else if (sext) split_impl(s, xq, y, NULL, 0, 1);
    else split_impl(s, xq, y, NULL, 0, 0);
}

#endif /* VLSCALE_VECTOR */
