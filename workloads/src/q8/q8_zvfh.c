/* Q8_0 kernels with half-precision hardware (`--fp16 zvfh`): the scales are converted by
 * Zfhmin's fcvt.s.h (scalars) or Zvfh's vfwcvt.f.f.v (vectors) instead of q8.h's software
 * decode. The int32 block sums and the fp32 scale products are the other kernels'; only
 * q8-packed's fp32 summation order over blocks differs (lanes per block, then one
 * reduction per row). */
#include <stdlib.h>
#include <string.h>

#include "common/harness.h"
#include "q8/q8_blocks.h"
#include "q8/q8_zvfh.h"

#define Q8Z_AI static inline __attribute__((always_inline))

/* fcvt.s.h: exact, like the software decode (every half is an fp32) */
Q8Z_AI float half_to_f32(uint16_t bits) {
    _Float16 h;
    memcpy(&h, &bits, sizeof h);
    return (float)h;
}

/* ---- q8-ggml: ggml's RVV dot; its scalar scale conversion is what ggml does on a core
 * with Zfhmin (GGML_CPU_FP16_TO_FP32 by fcvt.s.h). */
void q8_ggml_zvfh(const q8_problem *p, float *y) {
    const size_t nb = p->nb, vl = QK;
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * nb;
        float sumf = 0.0f;
        for (size_t b = 0; b < nb; b++) {
            vint16m4_t prod = __riscv_vwmul_vv_i16m4(__riscv_vle8_v_i8m2(w[b].qs, vl),
                                                     __riscv_vle8_v_i8m2(p->xq[b].qs, vl), vl);
            vint32m1_t red =
                __riscv_vwredsum_vs_i16m4_i32m1(prod, __riscv_vmv_v_x_i32m1(0, vl), vl);
            sumf += (float)__riscv_vmv_x_s_i32m1_i32(red) *
                    (half_to_f32(w[b].d) * half_to_f32(p->xq[b].d));
        }
        y[r] = sumf;
    }
}

/* ---- q8-packed: with the scales of a register's blocks in a vector, the blocks' int32
 * sums are wanted in a vector too, one lane per block, instead of one masked reduction per
 * block. A tree of unzip-adds makes them: read two adjacent elements as one element of
 * twice the width, narrow it to its low and its high half (vnsra by 0 and by SEW) and add;
 * five levels turn the 32 products of block j into lane j. */

/* i32 lanes 2k and 2k+1 -> lane k, for the n/2 results of n lanes of one register */
Q8Z_AI vint32m1_t pair_sums_m1(vint32m1_t v, size_t half) {
    const vint64m1_t d = __riscv_vreinterpret_v_i32m1_i64m1(v);
    return __riscv_vlmul_ext_v_i32mf2_i32m1(
        __riscv_vadd_vv_i32mf2(__riscv_vnsra_wx_i32mf2(d, 0, half),
                               __riscv_vnsra_wx_i32mf2(d, 32, half), half));
}

/* nblk * 32 int16 products (block j in lanes 32j..32j+31) -> nblk int32 sums, lane j */
Q8Z_AI vint32m1_t block_sums(vint16m4_t prod, size_t nblk) {
    const size_t n = nblk * QK;
    const vint32m4_t w1 = __riscv_vreinterpret_v_i16m4_i32m4(prod);
    const vint32m4_t s1 = __riscv_vwadd_vv_i32m4(__riscv_vnsra_wx_i16m2(w1, 0, n / 2),
                                                 __riscv_vnsra_wx_i16m2(w1, 16, n / 2), n / 2);
    const vint64m4_t w2 = __riscv_vreinterpret_v_i32m4_i64m4(s1);
    const vint32m2_t s2 = __riscv_vadd_vv_i32m2(__riscv_vnsra_wx_i32m2(w2, 0, n / 4),
                                                __riscv_vnsra_wx_i32m2(w2, 32, n / 4), n / 4);
    const vint64m2_t w3 = __riscv_vreinterpret_v_i32m2_i64m2(s2);
    const vint32m1_t s3 = __riscv_vadd_vv_i32m1(__riscv_vnsra_wx_i32m1(w3, 0, n / 8),
                                                __riscv_vnsra_wx_i32m1(w3, 32, n / 8), n / 8);
    return pair_sums_m1(pair_sums_m1(s3, n / 16), n / 32);
}

/* The x scales of blocks b0 .. b0+n as fp32: converted once per call (pack_x_once) or, as
 * a vec_dot per row would, loaded with the packed blocks (strided, one block apart). */
Q8Z_AI vfloat32m1_t x_scales(const q8_problem *p, const float *xs, size_t b0, size_t n) {
    if (xs) return __riscv_vle32_v_f32m1(xs + b0, n);
    const vfloat16mf2_t h = __riscv_vlse16_v_f16mf2((const _Float16 *)&p->xq[b0].d,
                                                    (ptrdiff_t)sizeof(block_q8), n);
    return __riscv_vfwcvt_f_f_v_f32m1(h, n);
}

Q8Z_AI void packed_zvfh_impl(const q8_problem *p, float *y, int8_t *xbuf, float *xs) {
    const size_t nb = p->nb, bpr = __riscv_vsetvlmax_e8m2() / QK;
    const size_t lanes = nb < bpr ? nb : bpr; /* block lanes of the accumulator */
    const vfloat32m1_t fzero = __riscv_vfmv_v_f_f32m1(0.0f, __riscv_vsetvlmax_e32m1());
    if (xbuf) { /* x quants contiguous and x scales in fp32, once per call */
        for (size_t b = 0; b < nb; b++) {
            __riscv_vse8_v_i8m2(xbuf + b * QK, __riscv_vle8_v_i8m2(p->xq[b].qs, QK), QK);
            xs[b] = half_to_f32(p->xq[b].d);
        }
    }
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * nb;
        vfloat32m1_t acc = fzero;
        for (size_t b0 = 0; b0 < nb; b0 += bpr) {
            const size_t nblk = nb - b0 < bpr ? nb - b0 : bpr, vl = nblk * QK;
            const vint8m2_t vw = pack_blocks(w + b0, nblk);
            const vint8m2_t vx = xbuf ? __riscv_vle8_v_i8m2(xbuf + b0 * QK, vl)
                                      : pack_blocks(p->xq + b0, nblk);
            const vint32m1_t sums = block_sums(__riscv_vwmul_vv_i16m4(vw, vx, vl), nblk);
            const vfloat32m1_t ws = __riscv_vfwcvt_f_f_v_f32m1(
                __riscv_vlse16_v_f16mf2((const _Float16 *)&w[b0].d, (ptrdiff_t)sizeof(block_q8),
                                        nblk),
                nblk);
            const vfloat32m1_t sc =
                __riscv_vfmul_vv_f32m1(ws, x_scales(p, xbuf ? xs : NULL, b0, nblk), nblk);
            acc = __riscv_vfmacc_vv_f32m1_tu(acc, __riscv_vfcvt_f_x_v_f32m1(sums, nblk), sc,
                                             nblk);
        }
        float sum = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(acc, fzero, lanes));
        /* through an f register: else clang stores lane 0 by a vse32 under vsetivli (vl 1),
         * which flushes Minor's pipeline (v24.0 mispredicts every vsetivli) */
        __asm__("" : "+f"(sum));
        y[r] = sum;
    }
}

void q8_packed_zvfh(const q8_problem *p, float *y, int pack_x_once, int8_t *xbuf, float *xs) {
    if (pack_x_once) packed_zvfh_impl(p, y, xbuf, xs);
    else packed_zvfh_impl(p, y, NULL, NULL);
}

/* ---- q8-split: the weights' tiles as q8_split_convert makes them; the scales stay the
 * blocks' fp16 bits, in the same (tile, block, row) order. */
void q8_split16_convert(const q8_problem *p, q8_split16_layout *s) {
    q8_split_layout f = {0};
    q8_split_convert(p, &f); /* its fp32 scales are not used */
    free(f.ws);
    const size_t rows = p->rows, nb = p->nb, T = f.tile;
    *s = (q8_split16_layout){.rows = rows, .cols = p->cols, .nb = nb, .tile = T, .wq = f.wq,
                             .ws = xaligned(rows * nb * sizeof(uint16_t))};
    for (size_t t0 = 0; t0 < rows; t0 += T) {
        const size_t tr = rows - t0 < T ? rows - t0 : T;
        for (size_t i = 0; i < tr; i++)
            for (size_t b = 0; b < nb; b++)
                s->ws[t0 * nb + b * tr + i] = p->w[(t0 + i) * nb + b].d;
    }
}

void q8_split16_free(q8_split16_layout *s) {
    free(s->wq);
    free(s->ws);
    s->wq = NULL;
    s->ws = NULL;
}

Q8Z_AI void split_zvfh_impl(const q8_split16_layout *s, const block_q8 *xq, float *y,
                            int sext) {
    const size_t rows = s->rows, cols = s->cols, nb = s->nb, T = s->tile;
    for (size_t t0 = 0; t0 < rows; t0 += T) {
        const size_t vl = __riscv_vsetvl_e8m1(rows - t0 < T ? rows - t0 : T);
        const int8_t *wt = s->wq + t0 * cols;
        const uint16_t *st = s->ws + t0 * nb;
        vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, vl);
        for (size_t b = 0; b < nb; b++) {
            const int8_t *wb = wt + b * QK * vl;
            const vint32m4_t isum = sext ? split_block_sext(wb, xq[b].qs, vl)
                                         : split_block_pair(wb, xq[b].qs, vl);
            vfloat32m4_t sc = __riscv_vfwcvt_f_f_v_f32m4(
                __riscv_vle16_v_f16m2((const _Float16 *)(st + b * vl), vl), vl);
            sc = __riscv_vfmul_vf_f32m4(sc, half_to_f32(xq[b].d), vl);
            acc = __riscv_vfmacc_vv_f32m4(acc, __riscv_vfcvt_f_x_v_f32m4(isum, vl), sc, vl);
        }
        __riscv_vse32_v_f32m4(y + t0, acc, vl);
    }
}

void q8_split_zvfh(const q8_split16_layout *s, const block_q8 *xq, int sext, float *y) {
    if (sext) split_zvfh_impl(s, xq, y, 1);
    else split_zvfh_impl(s, xq, y, 0);
}
