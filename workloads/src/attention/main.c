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

#include "attention/main_args.h"

#include "attention/main_output.h"

/* One function on purpose: the workload's steps in the order they run. Every attention
 * binary's bytes are part of the id of every stored run made with it, and splitting
 * main moves code (tried with clang 19 on ggml's workload: helpers, even always_inline
 * ones, change the bytes), so it is split when the archives are next regenerated. */
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
