/* The sublayers of the layer workload: what runs inside the regions of interest.
 *
 * The linear layers and attention are the kernels of the q8 and attention workloads,
 * called as their own workloads call them. The small operations follow ggml's CPU code
 * (ggml-cpu ops.cpp / vec.cpp / vec.h of the ggml in workloads/ggml) in what they compute
 * and in which precision, written here in plain C; they run scalar in both builds (our
 * builds do not auto-vectorise). ggml has RVV code for some of them (the activation
 * quantiser quantize_row_q8_0, SiLU/SwiGLU with a vector exp, LayerNorm's centred sum of
 * squares), which we do not port: see workloads/README.md, "layer". */
#include <math.h>
#include <string.h>

#include "common/f16.h"
#include "layer/layer.h"
#if LAYER_FP16
#include <riscv_vector.h>
#endif

static const char *const SUBLAYER_NAMES[N_SUB] = {
    [SUB_ATTN_NORM] = "attn_norm", [SUB_QKV] = "qkv", [SUB_ROPE] = "rope",
    [SUB_ATTENTION] = "attention", [SUB_O_PROJ] = "o_proj", [SUB_FFN_NORM] = "ffn_norm",
    [SUB_FFN_UP_GATE] = "ffn_up_gate", [SUB_FFN_ACT] = "ffn_act", [SUB_FFN_DOWN] = "ffn_down",
};

/* the same nine regions for every block; GPT-NeoX's FFN has no gate */
const char *sublayer_name(const layer_t *s, int i) {
    return s->neox && i == SUB_FFN_UP_GATE ? "ffn_up" : SUBLAYER_NAMES[i];
}

/* ggml's mul_mat walks the output in blocks of 16 weight rows x 16 tokens (blck_0,
 * blck_1 in ggml_compute_forward_mul_mat_one_chunk) and calls the row's vec_dot for each
 * (row, token) of a block: with Q8_0 weights on RISC-V there is no GEMM kernel (no
 * llamafile/tinyBLAS path for Q8_0, one row per vec_dot), so a prefill GEMM is that GEMV
 * per token, over blocks that keep 16 rows' weights in the cache for 16 tokens. We call
 * our GEMV kernels the same way: per block of rows (16, or one q8-split tile, which is
 * that layout's unit of rows), per token of a block of 16 tokens. */
#define TOKEN_BLOCK 16
#define ROW_BLOCK 16

size_t layer_row_block(const layer_t *s, const linear_t *L) {
#if VLSCALE_VECTOR
    if (s->linear == LIN_SPLIT) return L->split.tile;
#else
    (void)s, (void)L;
#endif
    return ROW_BLOCK;
}

/* rows r0 .. r0 + nr - 1 of y = W xq (one token) */
static void lin_rows(const layer_t *s, const linear_t *L, size_t r0, size_t nr,
                     const block_q8 *xq, float *y) {
    const q8_problem p = {.rows = nr, .cols = L->cols, .nb = L->nb, .w = L->w + r0 * L->nb,
                          .xq = xq, .f16tab = s->f16tab};
    switch (s->linear) {
    case LIN_SCALAR: q8_scalar(&p, y); break;
#if VLSCALE_VECTOR
    case LIN_GGML: q8_ggml(&p, y); break;
    case LIN_PACKED: q8_packed(&p, y, 0, s->xbuf); break; /* pack_x row: x packed per row */
    case LIN_SPLIT: {
        /* r0 is a multiple of the tile: a view of the tiles from r0 on */
        q8_split_layout v = L->split;
        v.rows = nr;
        v.wq += r0 * L->cols;
        v.ws += r0 * L->nb;
        q8_split(&v, xq, s->f16tab, 0, y);
        break;
    }
#endif
    default: break;
    }
}

/* y[t] = W xq[t] (+ bias) for every token; y is [ntok][rows] */
static void lin_run(const layer_t *s, const linear_t *L, const block_q8 *xq, float *y) {
    const size_t ntok = s->ntok, rows = L->rows;
    if (ntok == 1) {
        lin_rows(s, L, 0, rows, xq, y);
    } else {
        const size_t rb = layer_row_block(s, L);
        for (size_t t0 = 0; t0 < ntok; t0 += TOKEN_BLOCK) {
            const size_t t1 = ntok - t0 < TOKEN_BLOCK ? ntok : t0 + TOKEN_BLOCK;
            for (size_t r0 = 0; r0 < rows; r0 += rb) {
                const size_t nr = rows - r0 < rb ? rows - r0 : rb;
                for (size_t t = t0; t < t1; t++)
                    lin_rows(s, L, r0, nr, xq + t * L->nb, y + t * rows + r0);
            }
        }
    }
    if (L->bias) /* ggml_add of the bias row (Qwen2's q, k, v; every GPT-NeoX linear) */
        for (size_t t = 0; t < ntok; t++)
            for (size_t r = 0; r < rows; r++) y[t * rows + r] += L->bias[r];
}

/* ggml quantises a linear layer's fp32 input rows to Q8_0 (its vec_dot_type) first */
static void quantize_rows(const layer_t *s, const float *x, size_t cols, block_q8 *xq) {
    for (size_t t = 0; t < s->ntok; t++) quantize_q8(x + t * cols, xq + t * (cols / QK), cols);
}

/* RMSNorm as ggml_rms_norm then ggml_mul by the norm weight: the sum of squares in double
 * (ggml_float), mean and scale in fp32, y = (x * scale) * w */
static void rms_norm(const layer_t *s, const float *x, const float *w, float *y) {
    const size_t n = s->H;
    for (size_t t = 0; t < s->ntok; t++) {
        const float *xr = x + t * n;
        float *yr = y + t * n;
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) sum += (double)(xr[i] * xr[i]);
        const float mean = (float)(sum / (double)n);
        const float scale = 1.0f / sqrtf(mean + s->lp->norm_eps);
        for (size_t i = 0; i < n; i++) yr[i] = (xr[i] * scale) * w[i];
    }
}

/* LayerNorm as ggml_norm then ggml_mul by the weight and ggml_add of the bias: the sum in
 * double rounded to an fp32 mean; the centred values in fp32, their squares summed in
 * double (ggml_vec_cvar_f32), the variance and scale in fp32;
 * y = ((x - mean) * scale) * w + b */
static void layer_norm(const layer_t *s, const float *x, const float *w, const float *b,
                       float *y) {
    const size_t n = s->H;
    for (size_t t = 0; t < s->ntok; t++) {
        const float *xr = x + t * n;
        float *yr = y + t * n;
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) sum += (double)xr[i];
        const float mean = (float)sum / (float)n;
        double sq = 0.0;
        for (size_t i = 0; i < n; i++) {
            const float c = xr[i] - mean;
            yr[i] = c;
            sq += (double)(c * c);
        }
        const float var = (float)(sq / (double)n);
        const float scale = 1.0f / sqrtf(var + s->lp->norm_eps);
        for (size_t i = 0; i < n; i++) {
            const float yw = yr[i] * scale * w[i]; /* own statement: no fused multiply-add */
            yr[i] = yw + b[i];                     /* (ggml's mul and add are two ops) */
        }
    }
}

void sub_attn_norm(layer_t *s) {
    if (s->neox) layer_norm(s, s->x, s->w_attn_norm, s->b_attn_norm, s->xn);
    else rms_norm(s, s->x, s->w_attn_norm, s->xn);
}

/* GPT-NeoX: one fused GEMV (q, k, v are views of its rows, as llama.cpp's build_qkv) */
void sub_qkv(layer_t *s) {
    quantize_rows(s, s->xn, s->H, s->xq_attn);
    if (s->neox) {
        lin_run(s, &s->wqkv, s->xq_attn, s->qkv);
        return;
    }
    lin_run(s, &s->wq, s->xq_attn, s->q);
    lin_run(s, &s->wk, s->xq_attn, s->k);
    lin_run(s, &s->wv, s->xq_attn, s->v);
}

/* cos and sin of one position for every rotated pair, as ggml's rope cache: the angle of
 * pair i is pos * theta_scale^i, made by repeated fp32 multiplication, divided by the
 * pair's frequency factor (Llama 3's rope_freqs) */
static void rope_angles(const layer_t *s, int pos) {
    float theta = (float)pos;
    for (int i = 0; i < s->n_rot / 2; i++) {
        const float a = s->rope_ff ? theta / s->rope_ff[i] : theta;
        s->rope_cache[2 * i] = cosf(a);
        s->rope_cache[2 * i + 1] = sinf(a);
        theta *= s->rope_theta_scale;
    }
}

/* rotate one token's heads: NORM mode pairs (2i, 2i+1), NEOX mode (i, i + n_rot/2);
 * dimensions from n_rot on are copied (partial rotary: Pythia rotates 16 of 64) */
static void rope_heads(const layer_t *s, const float *src, float *dst, int nh) {
    const int D = s->D, nr = s->n_rot, half = nr / 2;
    const float *cs = s->rope_cache;
    for (int h = 0; h < nh; h++) {
        const float *a = src + (size_t)h * D;
        float *b = dst + (size_t)h * D;
        for (int i = 0; i < half; i++) {
            const int i0 = s->lp->rope_neox ? i : 2 * i, i1 = s->lp->rope_neox ? i + half : 2 * i + 1;
            const float x0 = a[i0], x1 = a[i1], c = cs[2 * i], sn = cs[2 * i + 1];
            b[i0] = x0 * c - x1 * sn;
            b[i1] = x0 * sn + x1 * c;
        }
        for (int i = nr; i < D; i++) b[i] = a[i];
    }
}

#if LAYER_FP16
/* fp32 -> fp16, as ggml's cpy into an F16 cache converts a row (ggml_cpu_fp32_to_fp16 with
 * Zvfh: e32 m2 loads narrowed to e16 m1, round to nearest even) */
static void row_to_f16(const float *x, attn_f16 *y, size_t n) {
    for (size_t i = 0; i < n;) {
        const size_t vl = __riscv_vsetvl_e32m2(n - i);
        const vfloat16m1_t h = __riscv_vfncvt_f_f_w_f16m1(__riscv_vle32_v_f32m2(x + i, vl), vl);
        __riscv_vse16_v_f16m1((_Float16 *)(y + i), h, vl);
        i += vl;
    }
}

/* fp16 -> fp32 (exact): e16 m1 loads widened to e32 m2 */
static void row_to_f32(const attn_f16 *x, float *y, size_t n) {
    for (size_t i = 0; i < n;) {
        const size_t vl = __riscv_vsetvl_e16m1(n - i);
        const vfloat16m1_t h = __riscv_vle16_v_f16m1((const _Float16 *)(x + i), vl);
        __riscv_vse32_v_f32m2(y + i, __riscv_vfwcvt_f_f_v_f32m2(h, vl), vl);
        i += vl;
    }
}
#endif

/* RoPE on q and k, and the new k and v stored in the KV cache (llama.cpp's cpy into the
 * cache; fp32 here, fp16 in the layer-fp16 binary) */
void sub_rope(layer_t *s) {
    for (size_t t = 0; t < s->ntok; t++) {
        const int pos = s->pos0 + (int)t;
        rope_angles(s, pos);
        rope_heads(s, s->q + t * s->q_ld, s->qr + t * s->qd, s->heads);
#if LAYER_FP16 /* rope's fp32 k, then the cpy of k and v into the F16 cache */
        rope_heads(s, s->k + t * s->kv_ld, s->kr, s->kvh);
        row_to_f16(s->kr, s->kc + (size_t)pos * s->kvd, s->kvd);
        row_to_f16(s->v + t * s->kv_ld, s->vc + (size_t)pos * s->kvd, s->kvd);
#else
        rope_heads(s, s->k + t * s->kv_ld, s->kc + (size_t)pos * s->kvd, s->kvh);
        memcpy(s->vc + (size_t)pos * s->kvd, s->v + t * s->kv_ld, s->kvd * sizeof(float));
#endif
    }
}

#if LAYER_FP16
/* The fp16 kernels over the F16 cache. They write O in fp16 (the attention workload's
 * output); ggml writes its flash attention's O in fp32, so the rounding to fp16 and this
 * widening pass are ours, an extra pass over heads x D values per token. */
void sub_attention(layer_t *s) {
    switch (s->attn) {
    case ATT_GGML_SCALAR: attn_ggml_scalar_f16(&s->apf); break;
    case ATT_GGML_VEC: attn_ggml_vec_f16(&s->apf); break;
    case ATT_FA_V: /* its query in fp16 first (the attention workload makes it before its
                    * region of interest from a query that is already fp16; here q is new) */
        row_to_f16(s->qr, s->fav16.q16, s->ntok * s->qd);
        attn_fa_v_f16(&s->fav16);
        break;
    default: break;
    }
    row_to_f32(s->apf.o, s->ao, s->ntok * s->qd);
}
#else
void sub_attention(layer_t *s) {
    switch (s->attn) {
    case ATT_GGML_SCALAR: attn_ggml_scalar(&s->ap); break;
#if VLSCALE_VECTOR
    case ATT_GGML_VEC: attn_ggml_vec(&s->ap, &s->at); break;
    case ATT_FA_V: attn_fa_v(&s->fav); break;
#endif
    default: break;
    }
}
#endif

static void add_rows(const float *a, const float *b, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* GPT-NeoX's parallel residual adds the attention output at the end (sub_ffn_down) */
void sub_o_proj(layer_t *s) {
    quantize_rows(s, s->ao, s->qd, s->xq_o);
    lin_run(s, &s->wo, s->xq_o, s->ov);
    if (!s->neox) add_rows(s->x, s->ov, s->h, s->ntok * s->H); /* residual */
}

/* GPT-NeoX (parallel residual): the FFN's norm reads the layer's input x, not x + attn */
void sub_ffn_norm(layer_t *s) {
    if (s->neox) layer_norm(s, s->x, s->w_ffn_norm, s->b_ffn_norm, s->hn);
    else rms_norm(s, s->h, s->w_ffn_norm, s->hn);
}

void sub_ffn_up_gate(layer_t *s) {
    quantize_rows(s, s->hn, s->H, s->xq_ffn);
    if (!s->neox) lin_run(s, &s->wgate, s->xq_ffn, s->g);
    lin_run(s, &s->wup, s->xq_ffn, s->u);
}

/* GELU as ggml's CPU backend computes it for fp32 (GGML_GELU_FP16, ggml_vec_gelu_f32): 0 at
 * and below -10, x at and above 10, else the input rounded to fp16 (inline, one fp32 add
 * rounds, as ggml's conversion without Zfh) indexes a table of the tanh GELU of every fp16
 * value, stored as fp16 and widened through the fp16 -> fp32 table as ggml widens halves */
static void gelu_table(const layer_t *s, const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (x[i] <= -10.0f) y[i] = 0.0f;
        else if (x[i] >= 10.0f) y[i] = x[i];
        else y[i] = s->f16tab[s->gelu_tab[f32_to_f16(x[i])]];
    }
}

/* SwiGLU: silu(gate) * up, silu(x) = x / (1 + exp(-x)) in fp32 (ggml_silu_f32);
 * GPT-NeoX: GELU(up) */
void sub_ffn_act(layer_t *s) {
    const size_t n = s->ntok * s->I;
    if (s->neox) {
        gelu_table(s, s->u, s->act, n);
        return;
    }
    for (size_t i = 0; i < n; i++) s->act[i] = s->g[i] / (1.0f + expf(-s->g[i])) * s->u[i];
}

/* residual: h + ffn; GPT-NeoX's parallel residual (ffn + x) + attn, llama.cpp's order */
void sub_ffn_down(layer_t *s) {
    quantize_rows(s, s->act, s->I, s->xq_act);
    lin_run(s, &s->wdown, s->xq_act, s->dn);
    if (s->neox) {
        add_rows(s->dn, s->x, s->out, s->ntok * s->H);
        add_rows(s->out, s->ov, s->out, s->ntok * s->H);
    } else {
        add_rows(s->h, s->dn, s->out, s->ntok * s->H);
    }
}
