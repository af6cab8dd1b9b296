/* ggml-vec (fp32): ggml's one-row FlashAttention kernel with its RVV vector helpers.
 * Vector code only in the three O(D) loops (dot, rescale, multiply-add), each strip-mined
 * with vsetvl over D; exp and the max/sum bookkeeping stay scalar; no KV blocking. */
#if VLSCALE_VECTOR
#include <math.h>

#include "attention/attn.h"

#define LMUL_IMPL "attention/ggml_vec_impl.h"
#include "attention/each_lmul.h"
#undef LMUL_IMPL

void attn_ggml_vec(const attn_problem *p, const attn_tunables *t) {
    switch (t->lmul) {
    case 1: ggml_vec_run_m1(p); break;
    case 2: ggml_vec_run_m2(p); break;
    default: ggml_vec_run_m4(p); break;
    }
}
#endif
