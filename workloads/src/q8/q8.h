/* Q8_0 linear layer (GEMV y = W x) with ggml's block_q8_0 format.
 * Shared declarations of the q8 workload: data layout, fp16 helpers, kernels. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define QK 32 /* elements per Q8_0 block */

/* ggml's block_q8_0: IEEE half scale bits, then 32 int8 quants; value = d * q.
 * 34 bytes, no padding (ggml static-asserts the same size). */
typedef struct {
    uint16_t d;
    int8_t qs[QK];
} block_q8;
_Static_assert(sizeof(block_q8) == 34, "block_q8 must be 34 bytes like ggml's block_q8_0");

/* fp16 <-> fp32 by bit manipulation (rv64gc has no Zfh). Inline: the kernels call
 * fp16_to_fp32 for every block's scale, as ggml does without Zfhmin. */
static inline float q8_bits_to_f32(uint32_t u) {
    union { uint32_t u; float f; } v = {u};
    return v.f;
}

static inline uint32_t q8_f32_to_bits(float f) {
    union { float f; uint32_t u; } v = {f};
    return v.u;
}

/* Branch-free: the 15 magnitude bits moved to fp32 position read as a float that is the
 * half's value times 2^-112 (for normal and subnormal halves alike: fp32 keeps
 * subnormals), so one exact multiply by 2^112 rebiases it; exponent 31 (inf/nan) is
 * patched to 255; the sign is or-ed back. */
static inline float fp16_to_fp32(uint16_t h) {
    const uint32_t mag = (uint32_t)(h & 0x7fffu) << 13;
    const float scaled = q8_bits_to_f32(mag) * 0x1p112f;
    const uint32_t infnan = (h & 0x7c00u) == 0x7c00u ? 0x7f800000u : 0u;
    return q8_bits_to_f32(q8_f32_to_bits(scaled) | infnan | ((uint32_t)(h & 0x8000u) << 16));
}

/* Round to nearest, ties to even; overflow gives inf, tiny values half subnormals. */
uint16_t fp32_to_fp16(float f);

/* ggml's quantize_row_q8_0 reference semantics: per block amax, d = amax/127,
 * q = roundf(x * (1/d)) with d in fp32, d stored as fp16. n multiple of QK. */
void quantize_q8(const float *x, block_q8 *out, size_t n);

/* Problem: W is rows x (nb*QK) as rows*nb blocks (row-major), xq is nb blocks.
 * f16tab: NULL = the kernels decode block scales with fp16_to_fp32 (bits); else a
 * 65536-entry fp16 -> fp32 table, as ggml's CPU backend uses without Zfhmin. */
typedef struct {
    size_t rows, cols, nb;
    const block_q8 *w;
    const block_q8 *xq;
    const float *f16tab;
} q8_problem;

/* Scale decode inside the kernels; use_tab is a compile-time constant at every call. */
static inline __attribute__((always_inline)) float q8_scale(uint16_t h, const float *tab,
                                                            int use_tab) {
    return use_tab ? tab[h] : fp16_to_fp32(h);
}

/* Kernels: write y[0..rows). */
void q8_scalar(const q8_problem *p, float *y);

#if VLSCALE_VECTOR
/* ggml's RVV vec_dot, one row at a time, one 32-block per iteration. */
void q8_ggml(const q8_problem *p, float *y);

/* Paper's long-VL attempt: blocks packed side by side with vslideup, masked per-block
 * reductions. pack_x_once: x quants are made contiguous once per call instead of being
 * repacked for every row. Returns blocks per register. */
size_t q8_packed_blocks_per_reg(void);
void q8_packed(const q8_problem *p, float *y, int pack_x_once, int8_t *xbuf);

/* q8-split: row-interleaved tiles, scales kept apart (see README.md). */
typedef struct {
    size_t rows, cols, nb, tile; /* tile = rows per tile (VLMAX of e8m1) */
    int8_t *wq;                  /* per tile: cols columns of tr int8 (tr = rows in tile) */
    float *ws;                   /* per tile: nb blocks of tr float32 scales */
} q8_split_layout;

size_t q8_split_tile_rows(void);
/* Set-up (outside the ROI): ggml layout -> split layout. */
void q8_split_convert(const q8_problem *p, q8_split_layout *s);
void q8_split_free(q8_split_layout *s);
/* sext: 0 = int8 pair products widened to int32 (default), 1 = sign-extend + int16 MAC */
void q8_split(const q8_split_layout *s, const block_q8 *xq, const float *f16tab, int sext,
              float *y);
#endif
