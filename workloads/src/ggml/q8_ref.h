/* The q8 workload's shapes, inputs and double-precision reference, as a library.
 * q8/q8_main.c keeps its own copies (moving them would change the q8 binaries and the ids
 * of their stored runs); the tests check that both binaries dump identical inputs. */
#pragma once
#include <stddef.h>

#include "common/harness.h"
#include "q8/q8.h"

/* rows x cols of projection q|k|v|o|gate|up|down of a model. */
void q8_proj_shape(const model_shape *m, const char *proj, long *rows, long *cols);
/* x first (cols floats, nb = cols/32 blocks), then W row by row, from one rng. */
void q8_make_x(rng_t *rng, float *x, size_t nb);
void q8_make_w(rng_t *rng, block_q8 *w, size_t nblocks);
/* y = W xq in double from the same int8 quants and fp32 block-scale products, and per row
 * the sum of |terms| (what bounds the fp32 rounding of a kernel). */
void q8_reference(const q8_problem *p, double *yref, double *abssum);
