/* layer workload: one transformer decoder layer as llama.cpp runs it on a CPU (llama,
 * qwen2 and GPT-NeoX blocks).
 * Shared declarations of layer_main.c (arguments, inputs, regions of interest, JSON),
 * layer_ops.c (what runs inside the regions) and layer_ref.c (the double-precision
 * reference and the check). The linear layers are the q8 kernels (src/q8), attention is
 * an attention kernel (src/attention): this workload links their sources. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "attention/attn.h"
#include "common/harness.h"
#include "layer_models.h"
#include "q8/q8.h"

/* --linear: which q8 kernel runs the linear layers (their names in the q8 workload) */
enum { LIN_SCALAR, LIN_GGML, LIN_PACKED, LIN_SPLIT, N_LIN };
/* --attn: which attention kernel (fp32; in the layer-fp16 binary their fp16 versions) */
enum { ATT_GGML_SCALAR, ATT_GGML_VEC, ATT_FA_V, N_ATT };

/* An element of the KV cache. The layer-fp16 binary (-DLAYER_FP16=1, Zvfh) keeps an F16
 * cache, llama.cpp's default, and runs the fp16 attention kernels over it. */
#if LAYER_FP16
typedef attn_f16 kv_elem;
/* fp16 attention's check: the attention workload's fp16 bound (attention/main.c, ATOL_F16,
 * RTOL_F16), whose absolute part was measured with |V| <= 1; the layer's new V rows are
 * projections, larger than 1, and the fp16 accumulator's error scales with them, so the
 * absolute part is scaled by the cache's largest |V| (layer_ref.c) */
#define ATTN_F16_ATOL 2e-3
#define ATTN_F16_RTOL 1e-3
#define ATTN_F16_BOUND "|o - ref| <= 2e-3 max(1, max |V|) + 1e-3 |ref|"
#define KV_AS_F32(p) ((const float *)NULL) /* the fp32 kernels' view: none */
#else
typedef float kv_elem;
#define KV_AS_F32(p) (p)
#endif

/* The sublayers, in the order they run; each is one region of interest (one gem5 stats
 * dump with --roi m5). A GPT-NeoX block has no gate: its SUB_FFN_UP_GATE is the up
 * projection alone, named "ffn_up" (sublayer_name). */
enum {
    SUB_ATTN_NORM, SUB_QKV, SUB_ROPE, SUB_ATTENTION, SUB_O_PROJ, SUB_FFN_NORM,
    SUB_FFN_UP_GATE, SUB_FFN_ACT, SUB_FFN_DOWN, N_SUB
};
typedef struct layer layer_t;
const char *sublayer_name(const layer_t *s, int i);

/* One weight matrix: rows x cols in ggml's block_q8_0 layout (rows x nb blocks), its
 * optional bias, and, for q8-split, the same weights in the split layout. */
typedef struct {
    size_t rows, cols, nb;
    block_q8 *w;
    float *bias; /* NULL: none */
#if VLSCALE_VECTOR
    q8_split_layout split;
#endif
} linear_t;

struct layer {
    /* the model */
    const model_shape *m;
    const layer_params *lp;
    size_t H, I, qd, kvd;  /* hidden, intermediate, heads x D, kv heads x D */
    int heads, kvh, D, n_rot;
    int neox; /* GPT-NeoX block: LayerNorm, fused qkv, biases, parallel residual, GELU */
    /* the problem: ntok tokens at positions pos0 .. pos0 + ntok - 1 over n_kv keys */
    size_t ntok;
    int pos0, n_kv, decode;
    /* choices */
    int linear, attn;
    int k_transposed; /* --k-cache transposed (fa-v only) */
    const float *f16tab; /* fp16 -> fp32 for the block scales, as ggml's CPU backend */
    int8_t *xbuf;        /* q8-packed scratch */
    /* weights */
    float *w_attn_norm, *w_ffn_norm; /* [H] */
    float *b_attn_norm, *b_ffn_norm; /* [H], LayerNorm's bias (GPT-NeoX), else NULL */
    linear_t wq, wk, wv, wo, wgate, wup, wdown; /* GPT-NeoX: no wq, wk, wv, wgate */
    linear_t wqkv;                   /* GPT-NeoX: q, k, v in one matrix, rows q | k | v */
    const uint16_t *gelu_tab;        /* GPT-NeoX: ggml's fp16 GELU of every fp16 value */
    float *rope_ff;                  /* llama3 frequency factors [n_rot/2], or NULL */
    float rope_theta_scale;          /* theta_base^(-2/n_rot) */
    /* activations: [ntok][width] row-major */
    float *x, *xn, *q, *k, *v, *qr, *ao, *ov, *h, *hn, *g, *u, *act, *dn, *out;
    float *qkv;                      /* GPT-NeoX: [ntok][qd + 2 kvd]; q, k, v point into it */
    size_t q_ld, kv_ld;              /* row strides of q and of k, v */
    kv_elem *kc, *vc;                /* the KV cache, [n_kv][kvd] */
    float *rope_cache;               /* [n_rot]: cos, sin of one position */
    block_q8 *xq_attn, *xq_o, *xq_ffn, *xq_act; /* the Q8_0 activations of the linears */
    /* attention */
    attn_problem ap;
    attn_tunables at;
#if VLSCALE_VECTOR
    fav_ctx fav;
#endif
#if LAYER_FP16
    attn_problem_f16 apf; /* the fp16 kernels' view: the F16 cache, O in fp16 */
    fav16_ctx fav16;
    float *kr;            /* rope: one token's rotated k in fp32, before the cache's cpy */
#endif
};

/* layer_ops.c: the sublayers (each runs inside its region of interest) */
void sub_attn_norm(layer_t *s);
void sub_qkv(layer_t *s);
void sub_rope(layer_t *s);
void sub_attention(layer_t *s);
void sub_o_proj(layer_t *s);
void sub_ffn_norm(layer_t *s);
void sub_ffn_up_gate(layer_t *s);
void sub_ffn_act(layer_t *s);
void sub_ffn_down(layer_t *s);
/* rows per block of the prefill GEMM (see lin_run) */
size_t layer_row_block(const layer_t *s, const linear_t *L);

/* layer_ref.c: the reference (double) of every sublayer's output and the check. Each
 * stage's error is max |got - ref| / RMS(ref) over its outputs; stage_err[i] gets it. */
int layer_check(const layer_t *s, int perturb, err_stats *e, double stage_err[N_SUB],
                const double tol[N_SUB]);
