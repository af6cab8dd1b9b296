/* Vector steps shared by the kernels that decode fp16 scales in software (q8_kernels.c)
 * and those that use Zfhmin / Zvfh (q8_zvfh.c): q8-packed's packing, q8-split's block. */
#pragma once
#include <riscv_vector.h>
#include <stddef.h>
#include <stdint.h>

#include "q8/q8.h"

#define Q8_BLOCK_AI static inline __attribute__((always_inline))

/* q8-packed: n blocks' quants side by side in one register (unit-stride loads of vl 32,
 * each slid up into place) */
static inline vint8m2_t pack_blocks(const block_q8 *blk, size_t n) {
    vint8m2_t v = __riscv_vle8_v_i8m2(blk[0].qs, QK);
    for (size_t j = 1; j < n; j++) {
        vint8m2_t t = __riscv_vle8_v_i8m2(blk[j].qs, QK);
        v = __riscv_vslideup_vx_i8m2(v, t, j * QK, (j + 1) * QK);
    }
    return v;
}

/* int32 sums of one 32-column block for the vl rows of a tile, "pair" form: per column
 * pair int8 x int8 -> int16 at SEW 8, then widen-add into int32 at SEW 16. */
Q8_BLOCK_AI vint32m4_t split_block_pair(const int8_t *wb, const int8_t *xb, size_t vl) {
    vint32m4_t isum = __riscv_vmv_v_x_i32m4(0, vl);
    /* 8 columns per step: the four SEW=8 pair products first, then the four SEW=16
     * widen-adds, so vtype changes twice per 8 columns, not twice per pair. Kept
     * rolled: a full unroll makes clang hoist all products and spill registers. */
#pragma clang loop unroll(disable)
    for (int k = 0; k < QK; k += 8) {
        const int8_t *c = wb + (size_t)k * vl;
        vint16m2_t p0 = __riscv_vwmul_vx_i16m2(__riscv_vle8_v_i8m1(c, vl), xb[k], vl);
        p0 = __riscv_vwmacc_vx_i16m2(p0, xb[k + 1], __riscv_vle8_v_i8m1(c + vl, vl), vl);
        vint16m2_t p1 =
            __riscv_vwmul_vx_i16m2(__riscv_vle8_v_i8m1(c + 2 * vl, vl), xb[k + 2], vl);
        p1 = __riscv_vwmacc_vx_i16m2(p1, xb[k + 3], __riscv_vle8_v_i8m1(c + 3 * vl, vl), vl);
        vint16m2_t p2 =
            __riscv_vwmul_vx_i16m2(__riscv_vle8_v_i8m1(c + 4 * vl, vl), xb[k + 4], vl);
        p2 = __riscv_vwmacc_vx_i16m2(p2, xb[k + 5], __riscv_vle8_v_i8m1(c + 5 * vl, vl), vl);
        vint16m2_t p3 =
            __riscv_vwmul_vx_i16m2(__riscv_vle8_v_i8m1(c + 6 * vl, vl), xb[k + 6], vl);
        p3 = __riscv_vwmacc_vx_i16m2(p3, xb[k + 7], __riscv_vle8_v_i8m1(c + 7 * vl, vl), vl);
        isum = __riscv_vwadd_wv_i32m4(isum, p0, vl);
        isum = __riscv_vwadd_wv_i32m4(isum, p1, vl);
        isum = __riscv_vwadd_wv_i32m4(isum, p2, vl);
        isum = __riscv_vwadd_wv_i32m4(isum, p3, vl);
    }
    return isum;
}

/* The same sums, "sext" form: every op at SEW 16 (no vtype change at all): sign-extend
 * the int8 column to int16, then int16 x scalar int16 -> int32 multiply-accumulate.
 * More element-bits of work per column (16 + 32 vs 16 + 16 + 16 per pair), no toggles. */
Q8_BLOCK_AI vint32m4_t split_block_sext(const int8_t *wb, const int8_t *xb, size_t vl) {
    vint32m4_t isum = __riscv_vmv_v_x_i32m4(0, vl);
#pragma clang loop unroll(disable)
    for (int k = 0; k < QK; k += 4) {
        const int8_t *c = wb + (size_t)k * vl;
        for (int u = 0; u < 4; u++) {
            vint16m2_t w16 = __riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(c + u * vl, vl), vl);
            isum = __riscv_vwmacc_vx_i32m4(isum, xb[k + u], w16, vl);
        }
    }
    return isum;
}
