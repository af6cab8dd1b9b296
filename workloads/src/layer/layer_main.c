/* layer workload: one transformer decoder layer of a model (llama, qwen2 and GPT-NeoX
 * blocks, as llama.cpp builds them) as llama.cpp runs it on a CPU, with Q8_0 weights in a
 * chosen layout (--linear) and a chosen attention kernel (--attn).
 * args -> deterministic inputs and weights (set-up) -> nine sublayers, each its own region
 * of interest (one gem5 stats dump each with --roi m5) -> double-precision reference of
 * every sublayer's output -> check -> one JSON line -> exit 0 (correct), 1 (wrong),
 * 2 (bad arguments). See workloads/README.md, "layer". */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/m5op.h"
#if VLSCALE_VECTOR
#include <riscv_vector.h>
#endif
#include "layer/layer.h"
#if LAYER_FP16
#include "common/f16.h"
#endif

/* The kernels of this workload (workloads/kernels.py, family layer): the vector build
 * (binary `layer`) and the scalar one (`layer-scalar`, rv64gc: q8-scalar and ggml-scalar
 * only). */
static const char *const KERNELS[] = {"layer", "layer-scalar", NULL};
#if VLSCALE_VECTOR
#define THIS_KERNEL "layer"
#define DEFAULT_LINEAR "q8-ggml"
#define DEFAULT_ATTN "ggml-vec"
#else
#define THIS_KERNEL "layer-scalar"
#define DEFAULT_LINEAR "q8-scalar"
#define DEFAULT_ATTN "ggml-scalar"
#endif
#if LAYER_FP16
/* The layer-fp16 binary is the vector build with an F16 KV cache and the fp16 attention
 * kernels; the fp32 binaries take no --precision at all. */
#define THIS_BINARY "layer-fp16"
#endif
/* in enum order (layer.h); the vector ones need the vector build */
static const char *const LINEARS[] = {"q8-scalar", "q8-ggml", "q8-packed", "q8-split", NULL};
static const char *const ATTNS[] = {"ggml-scalar", "ggml-vec", "fa-v", NULL};
/* the K cache fa-v reads (attention workload's --k-cache): ggml's rows, or kept transposed */
static const char *const K_CACHES[] = {"ggml", "transposed", NULL};

/* Tolerances: every element of a sublayer's output within TOL x RMS of that output's
 * reference (layer_ref.c), each sublayer checked on the kernel's own inputs to it. The
 * same for every block but GPT-NeoX's GELU (GELU_TOL); Pythia-410M's errors are under the
 * llama/qwen2 maxima below (workloads/README.md, "layer: check").
 * Measured (python3 -m workloads.layer_error_survey: 210 runs, the six llama/qwen2 models,
 * decode L = 1..2048, prefill N = 1..17, VLEN 128 and 1024, every layout and attention
 * kernel), largest error / RMS: attn_norm 4.4e-7, qkv 2.1e-6, rope 3.2e-4 (at position
 * 2047), attention 7.7e-6 (2048 keys), o_proj 1.3e-6, ffn_norm 5.8e-7, ffn_up_gate 1.9e-6,
 * ffn_act 1.6e-6, ffn_down 1.3e-6. Hence 1e-5 (at least 5x) for the sublayers whose error
 * does not depend on the sequence, 1e-4 for attention (13x at 2048 keys; the online
 * softmax's error grows slowly with the keys), and for rope 1e-5 + ROPE_TOL_PER_POS x the
 * last position: ggml's angles are pos x theta_scale^i made by repeated fp32 products,
 * whose error, and so the rotated values', grows in proportion to the position (measured
 * at most 2.7e-7 per position, 1.9e-7 at position 4095; 1e-6 per position is 3.7x). A bug
 * (wrong row, head, pair, position or block) moves a sublayer's output by O(1) of its RMS. */
#define ROPE_TOL_PER_POS 1e-6
/* GPT-NeoX's GELU is ggml's fp16 table (layer_ops.c): its output is stored in fp16, so an
 * element is off by up to half an fp16 ulp of itself (at most 2^-8 below 10, where the
 * table is used), which the reference (the tanh GELU in double of the kernel's
 * fp16-rounded input) does not have. Measured on Pythia-410M (35 survey runs and 8 more
 * seeds): at most 1.8e-3 of the output's RMS (an error of 2^-10 on outputs in [2, 4)); the
 * bound 2^-8 / RMS is 7e-3 for these inputs; 1e-2 is 5.6x the measured maximum. */
#define GELU_TOL 1e-2
static double TOL[N_SUB] = {
    [SUB_ATTN_NORM] = 1e-5, [SUB_QKV] = 1e-5, [SUB_ROPE] = 1e-5, [SUB_ATTENTION] = 1e-4,
    [SUB_O_PROJ] = 1e-5, [SUB_FFN_NORM] = 1e-5, [SUB_FFN_UP_GATE] = 1e-5,
    [SUB_FFN_ACT] = 1e-5, [SUB_FFN_DOWN] = 1e-5,
};

/* fa-v's --block-c auto as the attention workload resolves it (attention/main.c,
 * auto_block_c: workloads/README.md, --block-c): in decode the largest of 64, 32, 16 keys
 * whose K^T block fits a 64 KiB L1D, in prefill 128 keys unless the block exceeds four */
static int fav_block_c(int kvh, int D, int decode) {
    const long per_key = (long)kvh * D * (long)sizeof(float), l1d = 64L * 1024;
    if (!decode) return per_key * 128 <= 4 * l1d ? 128 : 64;
    for (int bc = 64; bc > 16; bc /= 2)
        if (per_key * bc <= l1d) return bc;
    return 16;
}

typedef struct {
    const char *model, *phase, *linear, *attn;
    int decode, n, l, perturb, k_transposed;
    long seed;
    roi_mode roi;
} run_args;

static int index_of(const char *const *list, const char *s) {
    int i = 0;
    while (strcmp(list[i], s) != 0) i++;
    return i;
}

static run_args parse(int argc, char **argv) {
    static const char *const phases[] = {"decode", "prefill", NULL};
    args_t a;
    args_init(&a, argc, argv);
    run_args r;
    const char *kernel = arg_choice(&a, "kernel", THIS_KERNEL, KERNELS);
    if (strcmp(kernel, THIS_KERNEL) != 0)
        die_arg("--kernel: '%s' is not this binary (this is %s)", kernel, THIS_KERNEL);
    r.model = arg_str(&a, "model", NULL);
    if (!r.model) die_arg("--model is required (a key of workloads/models.yaml)");
    r.phase = arg_choice(&a, "phase", "decode", phases);
    r.decode = strcmp(r.phase, "decode") == 0;
    r.n = r.l = 0;
    if (r.decode) {
        if (arg_str(&a, "n", NULL)) die_arg("--n: not used with --phase decode (use --l)");
        r.l = (int)arg_long(&a, "l", 256, 1, 1 << 20);
    } else {
        if (arg_str(&a, "l", NULL)) die_arg("--l: not used with --phase prefill (use --n)");
        r.n = (int)arg_long(&a, "n", 8, 1, 1 << 16);
    }
    r.linear = arg_choice(&a, "linear", DEFAULT_LINEAR, LINEARS);
    r.attn = arg_choice(&a, "attn", DEFAULT_ATTN, ATTNS);
    r.k_transposed = !strcmp(arg_choice(&a, "k-cache", "ggml", K_CACHES), "transposed");
    if (r.k_transposed && strcmp(r.attn, "fa-v") != 0)
        die_arg("--k-cache transposed: only fa-v reads a transposed K cache (--attn fa-v)");
#if !VLSCALE_VECTOR
    if (strcmp(r.linear, "q8-scalar") != 0)
        die_arg("--linear: '%s' needs the vector build (layer); this is layer-scalar", r.linear);
    if (strcmp(r.attn, "ggml-scalar") != 0)
        die_arg("--attn: '%s' needs the vector build (layer); this is layer-scalar", r.attn);
#endif
#if LAYER_FP16
    static const char *const precisions[] = {"fp32", "fp16", NULL};
    if (strcmp(arg_choice(&a, "precision", "fp16", precisions), "fp16") != 0)
        die_arg("--precision: fp32 is the layer binary; this is %s (fp16 only)", THIS_BINARY);
#endif
    r.seed = arg_long(&a, "seed", 1, 0, 0x7fffffffL);
    r.roi = parse_roi(&a);
    r.perturb = arg_flag(&a, "test-perturb");
    args_finish(&a);
    return r;
}

/* ---- inputs: from the seed only (not the kernels, not VLEN) ---- */
static float *uniform(rng_t *rng, size_t n, float lo, float hi) {
    float *p = xaligned(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = rng_uniform(rng, lo, hi);
    return p;
}

/* The weights are most of the set-up, which gem5 simulates too (on its atomic core, but
 * still about 3/4 of a decode run's host time with one rng_u64 call per 8 quants and a
 * modulo per quant). They are drawn in batches instead, to the same values: the k-th
 * draw after state s is rng_mix(s + k * RNG_GAMMA) (harness.h), so a batch's words are
 * computed independently of each other, with vectors in the vector build. */

/* the next n draws of rng, as n rng_u64 calls would give them */
static void rng_words(rng_t *rng, uint64_t *out, size_t n) {
    const uint64_t s0 = rng->s;
#if VLSCALE_VECTOR
    for (size_t i = 0; i < n;) {
        const size_t vl = __riscv_vsetvl_e64m2(n - i);
        vuint64m2_t z = __riscv_vadd_vx_u64m2(__riscv_vid_v_u64m2(vl), i + 1, vl);
        z = __riscv_vadd_vx_u64m2(__riscv_vmul_vx_u64m2(z, RNG_GAMMA, vl), s0, vl);
        z = __riscv_vmul_vx_u64m2(__riscv_vxor_vv_u64m2(z, __riscv_vsrl_vx_u64m2(z, 30, vl), vl),
                                  RNG_MUL1, vl);
        z = __riscv_vmul_vx_u64m2(__riscv_vxor_vv_u64m2(z, __riscv_vsrl_vx_u64m2(z, 27, vl), vl),
                                  RNG_MUL2, vl);
        z = __riscv_vxor_vv_u64m2(z, __riscv_vsrl_vx_u64m2(z, 31, vl), vl);
        __riscv_vse64_v_u64m2(out + i, z, vl);
        i += vl;
    }
#else
    for (size_t i = 0; i < n; i++) out[i] = rng_mix(s0 + (uint64_t)(i + 1) * RNG_GAMMA);
#endif
    rng->s = s0 + (uint64_t)n * RNG_GAMMA;
}

/* a[i] = rng_uniform(lo, hi), b[i] = rng_uniform(lo, hi), alternately, for i < n */
static void uniform_pairs(rng_t *rng, float *a, float *b, size_t n, float lo, float hi) {
    enum { BATCH = 256 }; /* pairs per batch of draws */
    uint64_t words[2 * BATCH];
    for (size_t i0 = 0; i0 < n; i0 += BATCH) {
        const size_t np = n - i0 < BATCH ? n - i0 : BATCH;
        rng_words(rng, words, 2 * np);
#if VLSCALE_VECTOR
        /* rng_word_uniform's operations, rounded alike: (z >> 11) and its scaling by 2^-53 are
         * exact in double, then one fused multiply-add and one rounding to float */
        const double span = (double)(hi - lo); /* a float difference, as in rng_word_uniform */
        for (int half = 0; half < 2; half++) {
            float *dst = (half ? b : a) + i0;
            for (size_t i = 0; i < np;) {
                const size_t vl = __riscv_vsetvl_e64m2(np - i);
                vuint64m2_t z = __riscv_vlse64_v_u64m2(words + 2 * i + half, 16, vl);
                vfloat64m2_t u = __riscv_vfcvt_f_xu_v_f64m2(__riscv_vsrl_vx_u64m2(z, 11, vl), vl);
                u = __riscv_vfmul_vf_f64m2(u, RNG_UNIT, vl);
                vfloat64m2_t x = __riscv_vfmv_v_f_f64m2((double)lo, vl);
                x = __riscv_vfmacc_vf_f64m2(x, span, u, vl);
                __riscv_vse32_v_f32m1(dst + i, __riscv_vfncvt_f_f_w_f32m1(x, vl), vl);
                i += vl;
            }
        }
#else
        for (size_t i = 0; i < np; i++) {
            a[i0 + i] = rng_word_uniform(words[2 * i], lo, hi);
            b[i0 + i] = rng_word_uniform(words[2 * i + 1], lo, hi);
        }
#endif
    }
}

/* 32 quants in [-127, 127] (ggml's quantiser never gives -128) from four draws, byte b
 * of a draw for quant 8j + b: (byte % 255) - 127, i.e. byte - 127 wrapped to int8 with
 * -128 (byte 255) raised to -127 */
static void quants_from_words(int8_t *qs, const uint64_t w[4]) {
#if VLSCALE_VECTOR
    const int8_t *bytes = (const int8_t *)w; /* little-endian: byte b of word j at 8j + b */
    for (size_t i = 0; i < QK;) {
        const size_t vl = __riscv_vsetvl_e8m2(QK - i);
        vint8m2_t q = __riscv_vsub_vx_i8m2(__riscv_vle8_v_i8m2(bytes + i, vl), 127, vl);
        __riscv_vse8_v_i8m2(qs + i, __riscv_vmax_vx_i8m2(q, -127, vl), vl);
        i += vl;
    }
#else
    for (int j = 0; j < QK; j += 8) {
        uint64_t r = w[j / 8];
        for (int b = 0; b < 8; b++, r >>= 8) qs[j + b] = (int8_t)((int)((r & 255u) % 255u) - 127);
    }
#endif
}

/* Q8_0 weights of a plausible magnitude: block scales d around 2 / (127 sqrt(cols)) x
 * [0.25, 1] (so an output has about the magnitude of an input), quants uniform in
 * [-127, 127]; per block one draw for d, then four for the quants */
static void make_linear(rng_t *rng, linear_t *L, size_t rows, size_t cols, int bias) {
    enum { BATCH = 64, DRAWS = 5 }; /* blocks per batch of draws; draws per block */
    L->rows = rows, L->cols = cols, L->nb = cols / QK;
    const size_t nblk = rows * L->nb;
    L->w = xaligned(nblk * sizeof(block_q8));
    const float d0 = 2.0f / (127.0f * sqrtf((float)cols));
    uint64_t words[BATCH * DRAWS];
    for (size_t i0 = 0; i0 < nblk; i0 += BATCH) {
        const size_t nb = nblk - i0 < BATCH ? nblk - i0 : BATCH;
        rng_words(rng, words, nb * DRAWS);
        for (size_t b = 0; b < nb; b++) {
            const uint64_t *w = words + b * DRAWS;
            L->w[i0 + b].d = fp32_to_fp16(d0 * rng_word_uniform(w[0], 0.25f, 1.0f));
            quants_from_words(L->w[i0 + b].qs, w + 1);
        }
    }
    L->bias = bias ? uniform(rng, rows, -0.5f, 0.5f) : NULL;
}

static void free_linear(linear_t *L) {
    free(L->w), free(L->bias);
#if VLSCALE_VECTOR
    q8_split_free(&L->split);
#endif
}

static const layer_params *find_params(const char *name) {
    for (int i = 0; i < N_LAYER_PARAMS; i++)
        if (!strcmp(LAYER_PARAMS[i].name, name)) return &LAYER_PARAMS[i];
    return NULL;
}

/* Llama 3's rope_freqs (llama.cpp computes them from rope_scaling when it converts the
 * model): 1 for short wavelengths, the factor for long ones, a smooth blend between */
static float *llama3_freq_factors(const layer_params *lp, int n_rot) {
    float *ff = xaligned((size_t)(n_rot / 2) * sizeof(float));
    const double lo_wl = lp->rs_orig / lp->rs_low, hi_wl = lp->rs_orig / lp->rs_high;
    for (int i = 0; i < n_rot / 2; i++) {
        const double freq = pow((double)lp->rope_theta, -2.0 * i / n_rot);
        const double wl = 2.0 * 3.14159265358979323846 / freq; /* 2 pi / freq */
        double f = 1.0;
        if (wl > lo_wl) f = lp->rs_factor;
        else if (wl >= hi_wl) {
            const double smooth = (lp->rs_orig / wl - lp->rs_low) / (lp->rs_high - lp->rs_low);
            f = 1.0 / ((1.0 - smooth) / lp->rs_factor + smooth);
        }
        ff[i] = (float)f;
    }
    return ff;
}

/* the model's shape and parameters, the phase and the chosen kernels */
static void setup_shape(layer_t *s, const run_args *r) {
    memset(s, 0, sizeof *s);
    s->m = find_model(r->model);
    s->lp = find_params(r->model);
    if (!s->m || !s->lp) {
        char list[512] = "";
        for (int i = 0; i < N_MODELS; i++) {
            strncat(list, MODELS[i].name, sizeof list - strlen(list) - 1);
            if (i + 1 < N_MODELS) strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        die_arg("--model: unknown model '%s' (expected one of: %s)", r->model, list);
    }
    const model_shape *m = s->m;
    s->neox = s->lp->arch == LAYER_ARCH_GPTNEOX;
    s->H = (size_t)m->hidden, s->I = (size_t)m->intermediate;
    s->heads = m->heads, s->kvh = m->kv_heads, s->D = m->head_dim, s->n_rot = s->lp->rope_dims;
    s->qd = (size_t)s->heads * s->D, s->kvd = (size_t)s->kvh * s->D;
    s->decode = r->decode;
    s->ntok = r->decode ? 1 : (size_t)r->n;
    s->pos0 = r->decode ? r->l - 1 : 0; /* decode: the token is the L-th position */
    s->n_kv = s->pos0 + (int)s->ntok;
    s->linear = index_of(LINEARS, r->linear);
    s->attn = index_of(ATTNS, r->attn);
    s->k_transposed = r->k_transposed;
}

/* the weights of a llama or qwen2 block: separate q, k, v (Qwen2: with biases), SwiGLU */
static void make_llama_weights(layer_t *s, rng_t *rng) {
    const size_t H = s->H, I = s->I;
    const int bias = s->lp->arch == LAYER_ARCH_QWEN2; /* Qwen2: q, k, v biases */
    make_linear(rng, &s->wq, s->qd, H, bias);
    make_linear(rng, &s->wk, s->kvd, H, bias);
    make_linear(rng, &s->wv, s->kvd, H, bias);
    make_linear(rng, &s->wo, H, s->qd, 0);
    make_linear(rng, &s->wgate, I, H, 0);
    make_linear(rng, &s->wup, I, H, 0);
    make_linear(rng, &s->wdown, H, I, 0);
}

/* the weights of a GPT-NeoX block: the norms' biases; q, k, v fused in one matrix (rows q,
 * then k, then v: llama.cpp's converter regroups Hugging Face's per-head interleaving so);
 * a bias on every linear layer; no gate */
static void make_neox_weights(layer_t *s, rng_t *rng) {
    const size_t H = s->H, I = s->I;
    s->b_attn_norm = uniform(rng, H, -0.5f, 0.5f);
    s->b_ffn_norm = uniform(rng, H, -0.5f, 0.5f);
    make_linear(rng, &s->wqkv, s->qd + 2 * s->kvd, H, 1);
    make_linear(rng, &s->wo, H, s->qd, 1);
    make_linear(rng, &s->wup, I, H, 1);
    make_linear(rng, &s->wdown, H, I, 1);
}

/* ggml's GELU table (ggml_cpu_init): the tanh GELU in fp32 of every fp16 value, rounded to
 * fp16. The expression is ggml_gelu_f32's, so that the compiler contracts it the same way. */
static uint16_t *make_gelu_table(const float *f16tab) {
    const float a = 0.044715f, sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    uint16_t *tab = xaligned(65536 * sizeof(uint16_t));
    for (uint32_t w = 0; w < 65536; w++) {
        const float x = f16tab[w];
        tab[w] = fp32_to_fp16(0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + a * x * x))));
    }
    return tab;
}

/* the input, the weights and the KV cache, from the seed; RoPE's tables */
static void setup_inputs(layer_t *s, const run_args *r) {
    const size_t N = s->ntok, H = s->H;
    rng_t rng;
    rng_seed(&rng, (uint64_t)r->seed);
    s->x = uniform(&rng, N * H, -1.0f, 1.0f);
    s->w_attn_norm = uniform(&rng, H, 0.5f, 1.5f);
    s->w_ffn_norm = uniform(&rng, H, 0.5f, 1.5f);
    if (s->neox) make_neox_weights(s, &rng);
    else make_llama_weights(s, &rng);
    /* the KV cache: earlier positions (decode) hold values in [-1, 1] */
    s->kc = xaligned((size_t)s->n_kv * s->kvd * sizeof(kv_elem));
    s->vc = xaligned((size_t)s->n_kv * s->kvd * sizeof(kv_elem));
#if LAYER_FP16 /* the fp32 binary's values rounded to fp16 (round to nearest even) */
    const size_t cached = (size_t)s->pos0 * s->kvd;
    float *k32 = xaligned((cached ? cached : 1) * sizeof(float));
    float *v32 = xaligned((cached ? cached : 1) * sizeof(float));
    uniform_pairs(&rng, k32, v32, cached, -1.0f, 1.0f);
    for (size_t i = 0; i < cached; i++) s->kc[i] = f32_to_f16(k32[i]), s->vc[i] = f32_to_f16(v32[i]);
    free(k32), free(v32);
#else
    uniform_pairs(&rng, s->kc, s->vc, (size_t)s->pos0 * s->kvd, -1.0f, 1.0f);
#endif

    /* ggml's CPU backend decodes fp16 scales from a table it fills at init */
    float *tab = xaligned(65536 * sizeof(float));
    for (uint32_t w = 0; w < 65536; w++) tab[w] = fp16_to_fp32((uint16_t)w);
    s->f16tab = tab;
    if (s->neox) s->gelu_tab = make_gelu_table(tab);
    s->rope_ff = s->lp->rs_factor > 0 ? llama3_freq_factors(s->lp, s->n_rot) : NULL;
    s->rope_theta_scale = powf(s->lp->rope_theta, -2.0f / (float)s->n_rot);
    s->rope_cache = xaligned((size_t)s->n_rot * sizeof(float));
}

/* the linear layers of the block (GPT-NeoX: wqkv, wo, wup, wdown); returns how many */
static int block_linears(layer_t *s, linear_t *out[7]) {
    linear_t *llama[] = {&s->wq, &s->wk, &s->wv, &s->wo, &s->wgate, &s->wup, &s->wdown};
    linear_t *neox[] = {&s->wqkv, &s->wo, &s->wup, &s->wdown};
    const int n = s->neox ? 4 : 7;
    for (int i = 0; i < n; i++) out[i] = s->neox ? neox[i] : llama[i];
    return n;
}

/* activations and quantised activations of every sublayer; the weights' layout */
static void setup_buffers(layer_t *s) {
    const size_t N = s->ntok, H = s->H, I = s->I, qd = s->qd, kvd = s->kvd;
    s->xn = xaligned(N * H * sizeof(float)), s->h = xaligned(N * H * sizeof(float));
    s->hn = xaligned(N * H * sizeof(float)), s->ov = xaligned(N * H * sizeof(float));
    s->dn = xaligned(N * H * sizeof(float)), s->out = xaligned(N * H * sizeof(float));
    if (s->neox) { /* q, k, v: views of the fused projection's rows */
        s->qkv = xaligned(N * (qd + 2 * kvd) * sizeof(float));
        s->q = s->qkv, s->k = s->qkv + qd, s->v = s->qkv + qd + kvd;
        s->q_ld = s->kv_ld = qd + 2 * kvd;
        s->qr = xaligned(N * qd * sizeof(float));
    } else {
        s->q = xaligned(N * qd * sizeof(float)), s->qr = xaligned(N * qd * sizeof(float));
        s->q_ld = qd, s->kv_ld = kvd;
    }
    s->ao = xaligned(N * qd * sizeof(float));
    if (!s->neox)
        s->k = xaligned(N * kvd * sizeof(float)), s->v = xaligned(N * kvd * sizeof(float));
    s->g = xaligned(N * I * sizeof(float)), s->u = xaligned(N * I * sizeof(float));
    s->act = xaligned(N * I * sizeof(float));
    s->xq_attn = xaligned(N * (H / QK) * sizeof(block_q8));
    s->xq_ffn = xaligned(N * (H / QK) * sizeof(block_q8));
    s->xq_o = xaligned(N * (qd / QK) * sizeof(block_q8));
    s->xq_act = xaligned(N * (I / QK) * sizeof(block_q8));

#if VLSCALE_VECTOR
    if (s->linear == LIN_PACKED) s->xbuf = xaligned(I > H ? I : H);
    if (s->linear == LIN_SPLIT) { /* layout conversion: set-up (done at model load) */
        linear_t *all[7];
        const int n = block_linears(s, all);
        for (int i = 0; i < n; i++) {
            const q8_problem p = {.rows = all[i]->rows, .cols = all[i]->cols,
                                  .nb = all[i]->nb, .w = all[i]->w};
            q8_split_convert(&p, &all[i]->split);
        }
    }
#endif
}

/* attention over the cache: as the attention workload's decode (1 query over L keys) or
 * prefill (N queries over N keys, causal) */
static void setup_attention(layer_t *s) {
    const size_t N = s->ntok;
    s->ap = (attn_problem){.heads = s->heads, .kv_heads = s->kvh, .head_dim = s->D,
                           .n_q = (int)N, .n_kv = s->n_kv, .causal = !s->decode,
                           .scale = 1.0f / sqrtf((float)s->D),
                           .q = s->qr, .k = KV_AS_F32(s->kc), .v = KV_AS_F32(s->vc),
                           .o = s->ao};
    s->at = (attn_tunables){.block_r = 64, .block_c = fav_block_c(s->kvh, s->D, s->decode),
                            .block_c_auto = 1, .unroll = 4, .r = 4, .lmul = 0,
                            .regime = FAV_AUTO, .strip = 0, .transpose = FAV_TRANSPOSE_AUTO};
#if VLSCALE_VECTOR
    if (s->k_transposed) /* fa-v reads the kept pages in its blocked regime only */
        s->at.k_cache = FAV_KC_TRANSPOSED, s->at.regime = FAV_BLOCKED;
#if LAYER_FP16 /* the F16 cache, O in fp16, ggml's one-row scratch (its wdata) */
    const size_t D = (size_t)s->D;
    s->kr = xaligned(s->kvd * sizeof(float));
    s->apf = (attn_problem_f16){.p = &s->ap, .k = s->kc, .v = s->vc,
                                .o = xaligned(N * s->qd * sizeof(attn_f16)),
                                .q_row = xaligned(D * sizeof(attn_f16)),
                                .acc16 = xaligned(D * sizeof(attn_f16)),
                                .acc32 = xaligned(D * sizeof(float)), .f16_table = s->f16tab};
    if (s->attn == ATT_GGML_VEC) s->at.lmul = 1; /* ggml's fp16 dot: e16 m1 */
    if (s->attn == ATT_FA_V && fav16_prepare(&s->fav16, &s->apf, &s->at) != 0)
        die_arg("out of memory");
#else
    if (s->attn == ATT_GGML_VEC) s->at.lmul = attn_auto_lmul(s->D);
    if (s->attn == ATT_FA_V && fav_prepare(&s->fav, &s->ap, &s->at) != 0) die_arg("out of memory");
#endif
#endif
}

static void setup(layer_t *s, const run_args *r) {
    setup_shape(s, r);
    setup_inputs(s, r);
    setup_buffers(s);
    setup_attention(s);
}

static void release(layer_t *s) {
#if LAYER_FP16
    if (s->attn == ATT_FA_V) fav16_release(&s->fav16);
    free(s->apf.o), free(s->apf.q_row), free(s->apf.acc16), free(s->apf.acc32), free(s->kr);
#elif VLSCALE_VECTOR
    if (s->attn == ATT_FA_V) fav_release(&s->fav);
#endif
    linear_t *all[7];
    const int n = block_linears(s, all);
    for (int i = 0; i < n; i++) free_linear(all[i]);
    if (s->neox) s->q = s->k = s->v = NULL; /* views of qkv */
    float *f[] = {s->x, s->xn, s->q, s->k, s->v, s->qkv, s->qr, s->ao, s->ov, s->h, s->hn,
                  s->g, s->u, s->act, s->dn, s->out, (float *)s->kc, (float *)s->vc,
                  s->rope_cache, s->rope_ff,
                  s->w_attn_norm, s->w_ffn_norm, s->b_attn_norm, s->b_ffn_norm,
                  (float *)s->f16tab};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) free(f[i]);
    free((void *)s->gelu_tab);
    free(s->xq_attn), free(s->xq_o), free(s->xq_ffn), free(s->xq_act), free(s->xbuf);
}

/* what the attention kernel ran (fa-v decides before the regions of interest) */
static const char *attn_regime(const layer_t *s) {
#if LAYER_FP16
    if (s->attn == ATT_FA_V) {
        const int regime = s->fav16.t.regime;
        return regime == FAV_HEADS ? "heads" : regime == FAV_ROWS ? "rows"
               : regime == FAV_DOT ? "dot" : "blocked";
    }
#elif VLSCALE_VECTOR
    if (s->attn == ATT_FA_V)
        return s->fav.heads ? "heads" : s->fav.rows ? "rows" : s->fav.dot ? "dot"
               : s->fav.packed ? "packed" : "blocked";
#else
    (void)s;
#endif
    return "row";
}

static void report(const run_args *r, const layer_t *s, const err_stats *e,
                   const double stage_err[N_SUB], int ok) {
    json_begin();
    json_str("workload", "layer");
    /* the sublayers in region-of-interest order: gem5 stats dump i is sublayer i */
    fputs(", \"sublayers\": [", stdout);
    for (int i = 0; i < N_SUB; i++) printf("%s\"%s\"", i ? ", " : "", sublayer_name(s, i));
    fputc(']', stdout);
    json_str("kernel", THIS_KERNEL);
    json_str("model", r->model);
    json_str("arch", LAYER_ARCH_NAMES[s->lp->arch]);
    json_str("norm", s->neox ? "layernorm" : "rmsnorm");
    json_str("qkv", s->neox ? "fused" : "separate");
    json_str("residual", s->neox ? "parallel" : "sequential");
    json_str("ffn", s->neox ? "gelu" : "swiglu");
    if (s->neox) json_str("gelu", "fp16 table");
    json_int("hidden", (long)s->H);
    json_int("intermediate", (long)s->I);
    json_int("heads", s->heads);
    json_int("kv_heads", s->kvh);
    json_int("head_dim", s->D);
    json_str("phase", r->phase);
    json_int(r->decode ? "l" : "n", r->decode ? r->l : r->n);
    json_str("linear", r->linear);
    json_str("attn", r->attn);
    json_str("k_cache", r->k_transposed ? "transposed" : "ggml");
#if LAYER_FP16
    json_str("precision", "fp16");
    json_str("attention_bound", ATTN_F16_BOUND);
#endif
    json_int("seed", r->seed);
    json_str("roi", r->roi == ROI_M5 ? "m5" : "none");
    json_int("vlen", (long)vlen_bits());
    json_str("rope", s->lp->rope_neox ? "neox" : "norm");
    json_int("rope_dims", s->n_rot);
    json_bool("rope_freq_factors", s->rope_ff != NULL);
    json_str("fp16", "table");
    json_str("gemm", s->ntok == 1 ? "gemv" : "gemv per token, 16-token blocks");
    json_int("row_block", s->ntok == 1 ? 0 : (long)layer_row_block(s, &s->wo));
    json_str("attn_regime", attn_regime(s));
    json_int("attn_lmul", s->attn == ATT_GGML_SCALAR ? 0
#if LAYER_FP16
                          : s->attn == ATT_FA_V ? s->fav16.t.lmul
#elif VLSCALE_VECTOR
                          : s->attn == ATT_FA_V ? s->fav.t.lmul
#endif
                          : s->at.lmul);
#if VLSCALE_VECTOR
    if (s->linear == LIN_SPLIT) json_int("tile_rows", (long)s->wo.split.tile);
    if (s->linear == LIN_PACKED) json_int("blocks_per_reg", (long)q8_packed_blocks_per_reg());
#endif
    fputs(", \"stage_err\": {", stdout);
    for (int i = 0; i < N_SUB; i++)
        printf("%s\"%s\": %.6g", i ? ", " : "", sublayer_name(s, i), stage_err[i]);
    fputs("}, \"stage_tol\": {", stdout);
    for (int i = 0; i < N_SUB; i++)
        printf("%s\"%s\": %.6g", i ? ", " : "", sublayer_name(s, i), TOL[i]);
    fputc('}', stdout);
    json_errors(e);
    json_bool("pass", ok);
    json_end();
}

int main(int argc, char **argv) {
    const run_args r = parse(argc, argv);
    layer_t s;
    setup(&s, &r);

    /* one region of interest per sublayer: roi_next dumps the stats of the one that ends
     * and resets them for the next (gem5 stats dump i = sublayer_name(i - 1)) */
    roi_begin(r.roi);
    sub_attn_norm(&s);
    roi_next(r.roi);
    sub_qkv(&s);
    roi_next(r.roi);
    sub_rope(&s);
    roi_next(r.roi);
    sub_attention(&s);
    roi_next(r.roi);
    sub_o_proj(&s);
    roi_next(r.roi);
    sub_ffn_norm(&s);
    roi_next(r.roi);
    sub_ffn_up_gate(&s);
    roi_next(r.roi);
    sub_ffn_act(&s);
    roi_next(r.roi);
    sub_ffn_down(&s);
    roi_end(r.roi);

    TOL[SUB_ROPE] += ROPE_TOL_PER_POS * (double)(s.pos0 + (int)s.ntok - 1);
    if (s.neox) TOL[SUB_FFN_ACT] = GELU_TOL;
#if LAYER_FP16 /* attention's error in units of its fp16 bound (layer_ref.c) */
    TOL[SUB_ATTENTION] = 1.0;
#endif
    err_stats e;
    double stage_err[N_SUB];
    const int ok = layer_check(&s, r.perturb, &e, stage_err, TOL);
    report(&r, &s, &e, stage_err, ok);
    release(&s);
    return ok ? EXIT_OK : EXIT_WRONG;
}
