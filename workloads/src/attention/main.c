/* attention: one transformer attention layer (prefill or decode) with a chosen kernel.
 * args -> deterministic Q/K/V -> [ROI] kernel [/ROI] -> double-precision reference ->
 * element-wise check -> one JSON line -> exit 0 (correct), 1 (wrong), 2 (bad arguments). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/reference.h"
#include "common/harness.h"

/* Which kernels this binary holds. A kernel family gets a binary of its own
 * (attention-fa-v, attention-ggml-vec, attention-scalar) so that its bytes, and the ids of
 * the runs made with it, change only when its own code or the shared harness changes;
 * `attention` holds every vector kernel, for use by hand and in the tests. */
#ifndef ATTN_HAS_FAV
#define ATTN_HAS_FAV VLSCALE_VECTOR
#endif
#ifndef ATTN_HAS_GGML_VEC
#define ATTN_HAS_GGML_VEC VLSCALE_VECTOR
#endif
#ifndef ATTN_HAS_GGML_SCALAR
#define ATTN_HAS_GGML_SCALAR 1
#endif
#ifndef ATTN_BINARY
#define ATTN_BINARY "attention"
#endif
/* Which precisions it holds. The fp16 kernels get binaries of their own too
 * (attention-ggml-vec-fp16, attention-scalar-fp16, built with ATTN_HAS_FP32=0): every fp16
 * line of this file is inside #if ATTN_HAS_FP16, so the fp32 family binaries are the same
 * bytes with or without it, and a change to fp16 code re-ids no fp32 run. `attention` holds
 * both. fa-v in fp16 (fa_v_f16.c) is in the binaries built with ATTN_HAS_FAV_F16=1:
 * attention-fa-v-fp16 and `attention`. */
#ifndef ATTN_HAS_FP32
#define ATTN_HAS_FP32 1
#endif
#ifndef ATTN_HAS_FP16
#define ATTN_HAS_FP16 0
#endif
#ifndef ATTN_HAS_FAV_F16
#define ATTN_HAS_FAV_F16 0
#endif
#if ATTN_HAS_FP16
#include "common/f16.h"
#endif

/* Tolerances (fp32 kernel vs double reference). The output is a convex combination of V
 * rows with |V| <= 1. fp32 rounding in a dot of D <= 256 terms, the online rescaling over
 * up to a few thousand keys and the polynomial exp (~2e-7 relative) stay around 1e-6
 * absolute; ATOL 1e-5 + RTOL 1e-4 leaves an order of magnitude of margin while any real bug
 * (wrong head, wrong key, missing rescale) moves outputs by 1e-3 or more. */
#define ATOL 1e-5
#define RTOL 1e-4
#define REL_FLOOR 1e-3 /* max_rel denominators below this are clamped (near-zero outputs) */
#if ATTN_HAS_FP16
/* fp16 tolerances. The reference sees exactly the kernel's inputs (the fp16-rounded
 * values), so what is left is the kernel's own rounding, at fp16 resolution (2^-11
 * relative): the output's rounding to fp16 (<= 2^-11 |o|) and the fp16 value accumulator,
 * rounded to half an ulp of its magnitude at every key; in output units that is about
 * 2^-11 |acc| / S per key, largest in a row's first keys (S ~ 1, |acc| up to ~2), while
 * over many keys the roundings of zero-mean V partly cancel as S grows (ggml-vec's fp16
 * ms and vs add 2^-11 relative). Measured (workloads/fp16_error_survey.py: both kernels,
 * 704 runs, 7 models and D 8..256, prefill N 12..512, decode L 40..8192, VLEN 128..1024,
 * 3 seeds): max |o - ref| 1.15e-3, max |o - ref| - 2^-11 |ref| 1.01e-3, no growth with
 * length (7.3e-4 at 8192 keys). Hence |o - ref| <= 2e-3 + 1e-3 |ref|: twice the worst
 * measured error, and two output roundings relative. A wrong kv or query head and a missed
 * rescale move outputs by ~1e-2 or more at every length we run; one dropped key moves them
 * by about 1.5 / L, so in decode it is caught up to L ~ 700 only (workloads/README.md). */
#define ATOL_F16 2e-3
#define RTOL_F16 1e-3
#define TOL_ABS(r) ((r)->fp16 ? ATOL_F16 : ATOL)
#define TOL_REL(r) ((r)->fp16 ? RTOL_F16 : RTOL)
#else
#define TOL_ABS(r) ATOL
#define TOL_REL(r) RTOL
#endif

/* --block-c auto (the default), from the gem5 study in results/reference-block-c: fa-v keeps
 * one transposed key block of every kv head, kv_heads x D x block_c fp32. In decode it is
 * reused least, so it should fit the L1D (Llama 3.2: 32 keys, 13-19% fewer cycles than 64;
 * Pythia: 16 keys, 12-14%); in prefill 64 query rows reuse it and longer score vectors
 * win (128 keys: up to 18% fewer cycles at 4096 bits) unless the block grows past four
 * L1Ds (Pythia, 30% slower with 128 at 512 bits). The L1D is the 64 KiB of every shipped
 * uarch (configs/uarch); --block-c N overrides. */
#define AUTO_L1D_BYTES (64L * 1024)
static int auto_block_c(int kv_heads, int head_dim, int decode) {
    const long per_key = (long)kv_heads * head_dim * (long)sizeof(float);
    if (!decode) return per_key * 128 <= 4 * AUTO_L1D_BYTES ? 128 : 64;
    for (int bc = 64; bc > 16; bc /= 2)
        if (per_key * bc <= AUTO_L1D_BYTES) return bc;
    return 16;
}

static void fill(rng_t *r, float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = rng_uniform(r, -1.0f, 1.0f);
}

/* the dump's dtype: a parameter only where fp16 exists */
#if ATTN_HAS_FP16
#define META_DTYPE_PARAM , const char *dtype
#define META_DTYPE "%s"
#define META_DTYPE_ARG dtype,
#define META_F32 , "float32"
#else
#define META_DTYPE_PARAM
#define META_DTYPE "float32"
#define META_DTYPE_ARG
#define META_F32
#endif
static void write_meta(const char *dir, const char *kernel, const attn_problem *p,
                       long seed META_DTYPE_PARAM) {
    FILE *f = dump_open(dir, "meta.json");
    fprintf(f,
            "{\"kernel\": \"%s\", \"dtype\": \"" META_DTYPE "\", \"layout\": \"ggml\", \"seed\": %ld,\n"
            " \"heads\": %d, \"kv_heads\": %d, \"head_dim\": %d, \"n_q\": %d, \"n_kv\": %d,\n"
            " \"causal\": %s, \"scale\": %.9g,\n"
            " \"shapes\": {\"q\": [%d, %d, %d], \"k\": [%d, %d, %d], \"v\": [%d, %d, %d],"
            " \"o\": [%d, %d, %d]}}\n",
            kernel, META_DTYPE_ARG seed, p->heads, p->kv_heads, p->head_dim, p->n_q, p->n_kv,
            p->causal ? "true" : "false", (double)p->scale, p->n_q, p->heads, p->head_dim,
            p->n_kv, p->kv_heads, p->head_dim, p->n_kv, p->kv_heads, p->head_dim, p->n_q,
            p->heads, p->head_dim);
    if (fclose(f) != 0) {
        fprintf(stderr, "error: --dump: cannot write %s/meta.json\n", dir);
        exit(EXIT_BADARG);
    }
}

/* What a kernel reports besides its result: the regime it ran and the choices it made. */
typedef struct {
    const char *regime, *regime_asked; /* "row" for the ggml kernels */
    const char *transpose; /* fa-v's K^T, Q^T, O^T copies: "tile", "strided" or "none" */
    int vlmax, pack, step, strip, r, unroll; /* step: heads processed per inner iteration */
    int tile_rows; /* rows per transpose tile (0: none or strided) */
#if ATTN_HAS_FAV
    fav_ctx fav;
#endif
#if ATTN_HAS_FAV_F16
    fav16_ctx fav16;
#endif
} kernel_state;

/* The kernels of this workload, in the order of the kernel registry (workloads/kernels.py,
 * family attention); the enum names their rows. A binary holds its family's kernels
 * (ATTN_HAS_*). `prepare` makes every choice and allocation before the region of interest,
 * `release` frees what it took; the call itself is in main's region of interest (a direct
 * call: nothing else may run there). Adding a kernel: a row here, its call in main, its
 * entry in the registry. */
enum { GGML_SCALAR, GGML_VEC, FA_V };

typedef struct {
    const char *name;
    int built;
    void (*prepare)(kernel_state *k, const attn_problem *p, attn_tunables *t,
                    const char *regime_asked);
    void (*release)(kernel_state *k);
} attn_kernel;

/* ggml kernels: one (token, head) row at a time */
static void prepare_row(kernel_state *k, const attn_problem *p, attn_tunables *t,
                        const char *regime_asked) {
    (void)regime_asked;
#if VLSCALE_VECTOR
    if (t->lmul == 0) t->lmul = attn_auto_lmul(p->head_dim);
#else
    (void)p;
    if (t->lmul == 0) t->lmul = 1; /* no vector code: nothing to choose */
#endif
    k->regime = k->regime_asked = "row";
    k->transpose = "none";
    k->vlmax = k->strip = k->tile_rows = 0;
    k->pack = k->step = 1;
    k->r = t->r, k->unroll = t->unroll;
}

#if ATTN_HAS_FAV && ATTN_HAS_FP32
/* fa-v decides its regime, LMUL and block sizes here, with the scratch it needs */
static void prepare_fav(kernel_state *k, const attn_problem *p, attn_tunables *t,
                        const char *regime_asked) {
    fav_ctx *fc = &k->fav;
    if (fav_prepare(fc, p, t) != 0) die_arg("out of memory");
    k->regime = fc->heads  ? "heads"
                : fc->rows ? "rows"
                : fc->dot  ? "dot"
                : fc->packed ? "packed"
                             : "blocked";
    /* the rows and blocked regimes make transposed copies (tiles in registers or strided) */
    k->transpose = fc->rows || !(fc->packed || fc->dot || fc->heads)
                       ? (fc->tile_rows ? "tile" : "strided")
                       : "none";
    k->tile_rows = fc->tile_rows;
    k->regime_asked = regime_asked;
    t->lmul = fc->t.lmul;       /* as the regime resolved it */
    t->block_c = fc->t.block_c; /* as the regime resolved it */
    k->vlmax = fc->vlmax;
    k->strip = fc->rows ? fc->strip : 0;
    k->pack = fc->pack;
    k->r = fc->t.r;           /* capped by the register file and the number of heads */
    k->unroll = fc->t.unroll; /* capped by the register file */
    k->step = fc->dot ? 1 : fc->heads ? p->heads /* a key's scores for every head at once */
              : fc->rows ? p->heads / p->kv_heads /* a strip shares one kv head */
              : fc->packed ? fc->pack * fc->t.r : fc->t.unroll; /* packed: U = (VLMAX / D) * R */
}

static void release_fav(kernel_state *k) { fav_release(&k->fav); }
#define FAV ATTN_HAS_FAV, prepare_fav, release_fav
#else /* fa-v-fp16 holds fa-v in fp16 only: prepared in main (prepare_fav16) */
#define FAV ATTN_HAS_FAV, prepare_row, NULL
#endif

static const attn_kernel KERNELS[] = {
    [GGML_SCALAR] = {"ggml-scalar", ATTN_HAS_GGML_SCALAR, prepare_row, NULL},
    [GGML_VEC] = {"ggml-vec", ATTN_HAS_GGML_VEC, prepare_row, NULL},
    [FA_V] = {"fa-v", FAV},
};
#define N_KERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))

/* --kernel: one of the table's names, and in this binary */
static const attn_kernel *parse_kernel(args_t *a) {
    const char *names[N_KERNELS + 1];
    for (int i = 0; i < N_KERNELS; i++) names[i] = KERNELS[i].name;
    names[N_KERNELS] = NULL;
    const char *name = arg_choice(a, "kernel", NULL, names);
    const attn_kernel *k = KERNELS;
    while (strcmp(k->name, name) != 0) k++;
    if (!k->built) {
        char built[128] = "";
        for (int i = 0; i < N_KERNELS; i++)
            if (KERNELS[i].built) {
                strncat(built, " ", sizeof built - strlen(built) - 1);
                strncat(built, KERNELS[i].name, sizeof built - strlen(built) - 1);
            }
        die_arg("--kernel: '%s' is not in this binary (%s, %s: only%s)", name, ATTN_BINARY,
                VLSCALE_VECTOR ? "rv64gcv" : "rv64gc", built);
    }
    return k;
}

typedef struct {
    const char *model; /* NULL for a custom shape */
    int heads, kv_heads, head_dim;
} shape;

/* --model, or a custom shape (--heads, --kv-heads, --head-dim) */
static shape parse_shape(args_t *a) {
    shape s = {arg_str(a, "model", NULL), 0, 0, 0};
    const char *sh = arg_str(a, "heads", NULL), *skv = arg_str(a, "kv-heads", NULL),
               *sd = arg_str(a, "head-dim", NULL);
    if (s.model) {
        if (sh || skv || sd) die_arg("--model: give either --model or --heads/--kv-heads/--head-dim");
        const model_shape *m = find_model(s.model);
        if (!m) {
            char list[512] = "";
            for (int i = 0; i < N_MODELS; i++) {
                strncat(list, MODELS[i].name, sizeof list - strlen(list) - 1);
                if (i + 1 < N_MODELS) strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            die_arg("--model: unknown model '%s' (expected one of: %s)", s.model, list);
        }
        s.heads = m->heads, s.kv_heads = m->kv_heads, s.head_dim = m->head_dim;
        return s;
    }
    if (!sh || !skv || !sd)
        die_arg("--model: missing (or give all of --heads, --kv-heads and --head-dim)");
    s.heads = (int)arg_long(a, "heads", 0, 1, 1024);
    s.kv_heads = (int)arg_long(a, "kv-heads", 0, 1, 1024);
    s.head_dim = (int)arg_long(a, "head-dim", 0, 1, 4096);
    if (s.heads % s.kv_heads)
        die_arg("--kv-heads: %d does not divide --heads %d", s.kv_heads, s.heads);
    return s;
}

/* an integer option that may also be "auto" (0) */
static int arg_auto(args_t *a, const char *key) {
    const char *v = arg_str(a, key, "auto");
    if (!strcmp(v, "auto")) return 0;
    char *end = NULL;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > (1 << 16))
        die_arg("--%s: expected auto or an integer in [1, 65536], got '%s'", key, v);
    return (int)n;
}

/* the tunables; --regime as given (auto or a regime) in *regime_asked */
static attn_tunables parse_tunables(args_t *a, const shape *s, int decode,
                                    const char **regime_asked) {
    static const char *const regimes[] = {"auto", "blocked", "packed", "rows", "dot", "heads", NULL};
    static const char *const transposes[] = {"auto", "tile", "strided", NULL};
    attn_tunables t;
    t.block_r = (int)arg_long(a, "block-r", 64, 1, 1 << 16);
    t.block_c = arg_auto(a, "block-c");
    t.block_c_auto = t.block_c == 0;
    if (t.block_c_auto) t.block_c = auto_block_c(s->kv_heads, s->head_dim, decode);
    *regime_asked = arg_choice(a, "regime", "auto", regimes);
    t.regime = !strcmp(*regime_asked, "blocked") ? FAV_BLOCKED
               : !strcmp(*regime_asked, "packed") ? FAV_PACKED
               : !strcmp(*regime_asked, "rows") ? FAV_ROWS
               : !strcmp(*regime_asked, "dot") ? FAV_DOT
               : !strcmp(*regime_asked, "heads") ? FAV_HEADS : FAV_AUTO;
    t.unroll = (int)arg_long(a, "unroll", 4, 1, 8);
    t.strip = arg_auto(a, "strip");
    const char *tr = arg_choice(a, "transpose", "auto", transposes);
    t.transpose = !strcmp(tr, "tile")      ? FAV_TRANSPOSE_TILE
                  : !strcmp(tr, "strided") ? FAV_TRANSPOSE_STRIDED
                                           : FAV_TRANSPOSE_AUTO;
    t.r = (int)arg_long(a, "r", 4, 1, 4);
    /* LMUL: auto (the default) = the smallest of 1, 2, 4 whose VLMAX holds D fp32 elements */
    const char *lmul_arg = arg_str(a, "lmul", "auto");
    if (!strcmp(lmul_arg, "auto")) t.lmul = 0;
    else if (!strcmp(lmul_arg, "1") || !strcmp(lmul_arg, "2") || !strcmp(lmul_arg, "4"))
        t.lmul = atoi(lmul_arg);
    else die_arg("--lmul: expected auto, 1, 2 or 4, got '%s'", lmul_arg);
    return t;
}

typedef struct {
    const attn_kernel *kernel;
    shape shape;
    const char *phase, *precision, *regime_asked, *dump, *ref_in, *ref_out;
    int decode, n_q, n_kv, perturb;
    long seed;
    roi_mode roi;
    attn_tunables t;
#if ATTN_HAS_FP16
    int fp16; /* --precision fp16 */
#endif
} run_args;

static run_args parse(int argc, char **argv) {
    static const char *const phases[] = {"prefill", "decode", NULL};
    static const char *const precisions[] = {"fp32", "fp16", NULL};
    args_t a;
    args_init(&a, argc, argv);
    run_args r;
    r.kernel = parse_kernel(&a);
    r.shape = parse_shape(&a);
    r.phase = arg_choice(&a, "phase", "prefill", phases);
    r.decode = strcmp(r.phase, "decode") == 0;
    if (r.decode) {
        if (arg_str(&a, "n", NULL)) die_arg("--n: not used with --phase decode (use --l)");
        r.n_kv = (int)arg_long(&a, "l", 256, 1, 1 << 20);
        r.n_q = 1;
    } else {
        if (arg_str(&a, "l", NULL)) die_arg("--l: not used with --phase prefill (use --n)");
        r.n_q = r.n_kv = (int)arg_long(&a, "n", 64, 1, 1 << 16);
    }
#if ATTN_HAS_FP16
    r.precision = arg_choice(&a, "precision", ATTN_HAS_FP32 ? "fp32" : "fp16", precisions);
    r.fp16 = strcmp(r.precision, "fp16") == 0;
    if (!r.fp16 && !ATTN_HAS_FP32)
        die_arg("--precision: fp32 is not in this binary (%s: fp16 kernels only; fp32 runs "
                "from the binary without -fp16)", ATTN_BINARY);
    if (r.fp16 && r.kernel - KERNELS == FA_V && !ATTN_HAS_FAV_F16)
        die_arg("--precision: fp16 is not implemented for fa-v yet (fp16 kernels: "
                "ggml-scalar, ggml-vec)");
#else
    r.precision = arg_choice(&a, "precision", "fp32", precisions);
    if (strcmp(r.precision, "fp16") == 0)
        die_arg("--precision: fp16 is not supported in this build (needs zvfh; fp32 only)");
#endif
    r.seed = arg_long(&a, "seed", 1, 0, 0x7fffffffL);
    r.roi = parse_roi(&a);
    r.t = parse_tunables(&a, &r.shape, r.decode, &r.regime_asked);
#if ATTN_HAS_FAV_F16
    if (r.fp16 && r.kernel - KERNELS == FA_V) {
        if (r.t.regime == FAV_PACKED)
            die_arg("--regime: %s is not implemented for fa-v in fp16 (fp16 regimes: auto, "
                    "rows, blocked, heads, dot)", r.regime_asked);
        if (r.t.lmul > 1)
            die_arg("--lmul: fa-v in fp16 runs e16 m1 with fp32 sums in e32 m2; only auto or "
                    "1, got %d", r.t.lmul);
    }
#endif
#if ATTN_HAS_FP16
    if (r.fp16 && r.kernel - KERNELS == GGML_VEC && r.t.lmul != 0)
        die_arg("--lmul: ggml-vec in fp16 keeps ggml's own register grouping (e16 m1 for "
                "the dot, e16 m4 for rescale and update); only auto, got %d", r.t.lmul);
#endif
    r.dump = arg_str(&a, "dump", NULL);
    r.ref_in = arg_str(&a, "ref", NULL);       /* read the reference from here */
    r.ref_out = arg_str(&a, "make-ref", NULL); /* only write the reference */
    r.perturb = arg_flag(&a, "test-perturb");
    args_finish(&a);
    if (r.ref_in && r.ref_out) die_arg("--ref and --make-ref: give one of them");
    return r;
}

static void report(const run_args *r, const kernel_state *k, const err_stats *e, int ok) {
    json_begin();
    json_str("workload", "attention");
    json_str("kernel", r->kernel->name);
    json_str("model", r->shape.model ? r->shape.model : "custom");
    json_int("heads", r->shape.heads);
    json_int("kv_heads", r->shape.kv_heads);
    json_int("head_dim", r->shape.head_dim);
    json_str("phase", r->phase);
    json_int(r->decode ? "l" : "n", r->decode ? r->n_kv : r->n_q);
    json_str("precision", r->precision);
    json_int("seed", r->seed);
    json_str("roi", r->roi == ROI_M5 ? "m5" : "none");
    json_int("vlen", (long)vlen_bits());
    json_int("block_r", r->t.block_r);
    json_int("block_c", r->t.block_c);
    json_int("unroll", k->unroll);
    json_int("r", k->r);
    json_int("lmul", r->t.lmul);
    json_str("regime", k->regime);
    json_str("regime_asked", k->regime_asked);
    json_int("vlmax", k->vlmax);
    json_int("strip", k->strip);
    json_str("transpose", k->transpose);
    json_int("tile_rows", k->tile_rows);
    json_int("pack", k->pack);
    json_int("heads_per_step", k->step);
    json_errors(e);
    json_num("atol", TOL_ABS(r));
    json_num("rtol", TOL_REL(r));
    json_bool("pass", ok);
    json_end();
}

static void dump_all(const run_args *r, const attn_problem *p, size_t nq_el, size_t nkv_el) {
    dump_array(r->dump, "q", p->q, nq_el * sizeof(float));
    dump_array(r->dump, "k", p->k, nkv_el * sizeof(float));
    dump_array(r->dump, "v", p->v, nkv_el * sizeof(float));
    dump_array(r->dump, "o", p->o, nq_el * sizeof(float));
    write_meta(r->dump, r->kernel->name, p, r->seed META_F32);
}

#if ATTN_HAS_FP16
/* fp16 runs: the ggml kernels' inputs and output as the fp16 family sees them, with one
 * row's scratch and ggml-scalar's conversion table, allocated outside the region of
 * interest. Q, K and V are the fp32 draws rounded to fp16 in place (q, k and v then hold
 * exactly the kernel's inputs, so the reference sees them too); K and V go to the kernel
 * as fp16 words, Q as fp32 (ggml's Q is F32). */
static attn_problem_f16 prepare_f16(const attn_problem *p, float *q, float *k, float *v,
                                    size_t nq_el, size_t nkv_el, int scalar) {
    attn_f16 *k16 = xaligned(nkv_el * sizeof(attn_f16)), *v16 = xaligned(nkv_el * sizeof(attn_f16));
    for (size_t i = 0; i < nq_el; i++) q[i] = f16_to_f32(f32_to_f16(q[i]));
    for (size_t i = 0; i < nkv_el; i++) {
        k16[i] = f32_to_f16(k[i]), k[i] = f16_to_f32(k16[i]);
        v16[i] = f32_to_f16(v[i]), v[i] = f16_to_f32(v16[i]);
    }
    attn_problem_f16 f = {.p = p, .k = k16, .v = v16,
                          .o = xaligned(nq_el * sizeof(attn_f16)),
                          .q_row = xaligned((size_t)p->head_dim * sizeof(attn_f16)),
                          .acc16 = xaligned((size_t)p->head_dim * sizeof(attn_f16)),
                          .acc32 = xaligned((size_t)p->head_dim * sizeof(float))};
    if (scalar) {
        float *tab = xaligned(65536 * sizeof(float));
        for (uint32_t w = 0; w < 65536; w++) tab[w] = f16_to_f32((uint16_t)w);
        f.f16_table = tab;
    }
    return f;
}

#if ATTN_HAS_FAV_F16
/* fa-v in fp16: its regime (rows, blocked or heads), block sizes and scratch */
static void prepare_fav16(kernel_state *k, const attn_problem_f16 *pf, attn_tunables *t,
                          const char *regime_asked) {
    fav16_ctx *fc = &k->fav16;
    if (fav16_prepare(fc, pf, t) != 0) die_arg("out of memory");
    const int rows = fc->t.regime == FAV_ROWS, heads = fc->t.regime == FAV_HEADS;
    const int dot = fc->t.regime == FAV_DOT;
    k->regime = rows ? "rows" : heads ? "heads" : dot ? "dot" : "blocked";
    k->regime_asked = regime_asked;
    k->transpose = heads || dot ? "none" : "strided";
    k->tile_rows = 0;
    t->lmul = fc->t.lmul;
    t->block_c = fc->t.block_c;
    k->vlmax = fc->vlmax; /* e16 elements */
    k->strip = rows ? fc->strip : 0;
    k->pack = heads ? fc->pack : 1;
    k->r = fc->t.r;
    k->unroll = fc->t.unroll;
    k->step = heads ? pf->p->heads : rows ? pf->p->heads / pf->p->kv_heads : dot ? 1 : fc->t.unroll;
}
#endif

static void release_f16(attn_problem_f16 *f) {
    free((void *)f->k), free((void *)f->v), free(f->o);
    free(f->q_row), free(f->acc16), free(f->acc32), free((void *)f->f16_table);
}

/* raw binary16 words; Q as the fp16 words of its rounded values */
static void dump_all_f16(const run_args *r, const attn_problem *p, const attn_problem_f16 *f,
                         size_t nq_el, size_t nkv_el) {
    attn_f16 *q16 = xaligned(nq_el * sizeof(attn_f16));
    for (size_t i = 0; i < nq_el; i++) q16[i] = f32_to_f16(p->q[i]);
    dump_array(r->dump, "q", q16, nq_el * sizeof(attn_f16));
    dump_array(r->dump, "k", f->k, nkv_el * sizeof(attn_f16));
    dump_array(r->dump, "v", f->v, nkv_el * sizeof(attn_f16));
    dump_array(r->dump, "o", f->o, nq_el * sizeof(attn_f16));
    write_meta(r->dump, r->kernel->name, p, r->seed, "float16");
    free(q16);
}
#endif

int main(int argc, char **argv) {
    run_args r = parse(argc, argv);
    const shape *s = &r.shape;
    const size_t nq_el = (size_t)r.n_q * s->heads * s->head_dim,
                 nkv_el = (size_t)r.n_kv * s->kv_heads * s->head_dim;
    float *q = xaligned(nq_el * sizeof(float)), *k = xaligned(nkv_el * sizeof(float)),
          *v = xaligned(nkv_el * sizeof(float)), *o = xaligned(nq_el * sizeof(float));
    rng_t rng;
    rng_seed(&rng, (uint64_t)r.seed);
    fill(&rng, q, nq_el);
    fill(&rng, k, nkv_el);
    fill(&rng, v, nkv_el);
    const attn_problem p = {.heads = s->heads, .kv_heads = s->kv_heads, .head_dim = s->head_dim,
                            .n_q = r.n_q, .n_kv = r.n_kv, .causal = !r.decode,
                            .scale = 1.0f / sqrtf((float)s->head_dim),
                            .q = q, .k = k, .v = v, .o = o};
#if ATTN_HAS_FP16 /* rounds q, k and v in place: before the reference sees them */
    attn_problem_f16 p16 = {0};
    if (r.fp16) p16 = prepare_f16(&p, q, k, v, nq_el, nkv_el, r.kernel - KERNELS == GGML_SCALAR);
#endif
    double *ref = malloc(nq_el * sizeof(double));
    if (!ref) die_arg("out of memory");
    const ref_header ref_hdr = ref_header_of(&p, r.seed, nq_el, nkv_el);
    if (r.ref_out) { /* no kernel: compute the reference, write it, report */
        attn_reference(&p, ref);
        ref_write(r.ref_out, &ref_hdr, ref);
        printf("{\"workload\": \"attention\", \"make_ref\": \"%s\", \"count\": %zu}\n",
               r.ref_out, nq_el);
        return EXIT_OK;
    }

    kernel_state ks;
#if ATTN_HAS_FAV_F16
    const int fav16 = r.fp16 && r.kernel - KERNELS == FA_V;
    if (fav16) prepare_fav16(&ks, &p16, &r.t, r.regime_asked);
    else
#endif
    r.kernel->prepare(&ks, &p, &r.t, r.regime_asked);
#if ATTN_HAS_FP16
    if (r.fp16 && r.kernel - KERNELS == GGML_VEC) r.t.lmul = 1; /* ggml's dot: e16 m1 */
#endif
    roi_begin(r.roi); /* the region of interest holds the kernel call and nothing else */
#if ATTN_HAS_FP16
    if (r.fp16) {
        switch (r.kernel - KERNELS) {
#if ATTN_HAS_GGML_SCALAR
        case GGML_SCALAR: attn_ggml_scalar_f16(&p16); break;
#endif
#if ATTN_HAS_GGML_VEC
        case GGML_VEC: attn_ggml_vec_f16(&p16); break;
#endif
#if ATTN_HAS_FAV_F16 /* the hook for fa-v in fp16; its preparation goes where fa-v's does */
        case FA_V: attn_fa_v_f16(&ks.fav16); break;
#endif
        default: break;
        }
    } else
#endif
    switch (r.kernel - KERNELS) {
#if ATTN_HAS_GGML_SCALAR && ATTN_HAS_FP32
    case GGML_SCALAR: attn_ggml_scalar(&p); break;
#endif
#if ATTN_HAS_GGML_VEC && ATTN_HAS_FP32
    case GGML_VEC: attn_ggml_vec(&p, &r.t); break;
#endif
#if ATTN_HAS_FAV && ATTN_HAS_FP32
    case FA_V: attn_fa_v(&ks.fav); break;
#endif
    default: break;
    }
    roi_end(r.roi);
#if ATTN_HAS_FAV_F16
    if (fav16) fav16_release(&ks.fav16);
    else
#endif
    if (r.kernel->release) r.kernel->release(&ks);
#if ATTN_HAS_FP16
    if (r.fp16) { /* the check reads O widened to fp32 (exact) */
        if (r.perturb) p16.o[nq_el / 2] = f32_to_f16(f16_to_f32(p16.o[nq_el / 2]) + 0.5f);
        for (size_t i = 0; i < nq_el; i++) o[i] = f16_to_f32(p16.o[i]);
    } else if (r.perturb) {
        o[nq_el / 2] += 0.5f;
    }
#else
    if (r.perturb) o[nq_el / 2] += 0.5f; /* self-test of the checker: must be caught */
#endif

    if (r.ref_in) ref_read(r.ref_in, &ref_hdr, ref);
    else attn_reference(&p, ref);
    err_stats e;
    err_reset(&e);
    for (size_t i = 0; i < nq_el; i++)
        err_add(&e, o[i], ref[i], TOL_ABS(&r), TOL_REL(&r), REL_FLOOR);
    const int ok = e.n_bad == 0;
#if ATTN_HAS_FP16
    if (r.dump && r.fp16) dump_all_f16(&r, &p, &p16, nq_el, nkv_el);
    else
#endif
    if (r.dump) dump_all(&r, &p, nq_el, nkv_el);
    report(&r, &ks, &e, ok);
    free(ref);
    free(q), free(k), free(v), free(o);
#if ATTN_HAS_FP16
    if (r.fp16) release_f16(&p16);
#endif
    return ok ? EXIT_OK : EXIT_WRONG;
}
