/* Q8_0 kernels on a core with half-precision hardware (Zfhmin, Zvfh): `--fp16 zvfh`.
 * Built into the q8 binary only (-march=rv64gcv_zvfh); the layer and q8-scalar builds
 * keep the software decode of q8.h. Same int32 block sums and fp32 scale products as the
 * other kernels; see README.md, "fp16 scales in hardware". */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "q8/q8.h"

/* q8-ggml: each block scale by one scalar fcvt.s.h, as ggml converts with Zfhmin. */
void q8_ggml_zvfh(const q8_problem *p, float *y);

/* q8-packed: the same packed registers; the blocks' scales as a vector (strided fp16 load,
 * vfwcvt), the block sums by an unzip-add tree into one lane per block, one fused
 * multiply-add per register and one reduction per row. xs: nb floats of scratch (the x
 * scales converted once per call when pack_x_once). */
void q8_packed_zvfh(const q8_problem *p, float *y, int pack_x_once, int8_t *xbuf, float *xs);

/* q8-split with the weight scales kept in fp16 (half the scale bytes), widened per block
 * by vfwcvt. */
typedef struct {
    size_t rows, cols, nb, tile;
    int8_t *wq;   /* as q8_split_layout */
    uint16_t *ws; /* per tile: nb blocks of tr fp16 scales (the blocks' own bits) */
} q8_split16_layout;

void q8_split16_convert(const q8_problem *p, q8_split16_layout *s);
void q8_split16_free(q8_split16_layout *s);
void q8_split_zvfh(const q8_split16_layout *s, const block_q8 *xq, int sext, float *y);
