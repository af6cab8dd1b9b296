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

/* Tolerances (fp32 kernel vs double reference). The output is a convex combination of V
 * rows with |V| <= 1. fp32 rounding in a dot of D <= 256 terms, the online rescaling over
 * up to a few thousand keys and the polynomial exp (~2e-7 relative) stay around 1e-6
 * absolute; ATOL 1e-5 + RTOL 1e-4 leaves an order of magnitude of margin while any real bug
 * (wrong head, wrong key, missing rescale) moves outputs by 1e-3 or more. */
#define ATOL 1e-5
#define RTOL 1e-4
#define REL_FLOOR 1e-3 /* max_rel denominators below this are clamped (near-zero outputs) */

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

/* Converts n floats to double once: the reference then runs on doubles without a conversion
 * per use (it runs on gem5's atomic CPU after every measured kernel, so its instruction
 * count is a large part of a sweep's cost). */
static double *to_double(const float *x, size_t n) {
    double *d = malloc(n * sizeof(double));
    if (!d) die_arg("out of memory");
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static void reference(const attn_problem *p, double *out) {
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    double *w = malloc((size_t)p->n_kv * sizeof(double));
    double *qd = to_double(p->q, (size_t)p->n_q * H * D);
    double *kd = to_double(p->k, (size_t)p->n_kv * kv_row);
    double *vd = to_double(p->v, (size_t)p->n_kv * kv_row);
    if (!w) die_arg("out of memory");
    const double scale = 1.0 / sqrt((double)D);
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) {
            const double *q = qd + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < end; j++) {
                const double *k = kd + (size_t)j * kv_row + kvo;
                double s = 0.0;
                for (int d = 0; d < D; d++) s += q[d] * k[d];
                w[j] = s * scale;
                if (w[j] > mx) mx = w[j];
            }
            for (int j = 0; j < end; j++) sum += (w[j] = exp(w[j] - mx));
            double *o = out + ((size_t)i * H + h) * D;
            for (int d = 0; d < D; d++) o[d] = 0.0;
            for (int j = 0; j < end; j++) {
                const double *v = vd + (size_t)j * kv_row + kvo;
                const double wj = w[j];
                for (int d = 0; d < D; d++) o[d] += wj * v[d];
            }
            for (int d = 0; d < D; d++) o[d] /= sum;
        }
    }
    free(w);
    free(qd);
    free(kd);
    free(vd);
}

/* Reference files (--make-ref writes one, --ref reads one): the double-precision reference
 * depends only on the problem and the inputs, so a sweep computes it once per shape and seed
 * on a fast simulator instead of after every measured kernel. The header names the problem
 * and a checksum of the generated inputs; a file for anything else is refused. */
typedef struct {
    char magic[8];
    int32_t heads, kv_heads, head_dim, n_q, n_kv, causal;
    int64_t seed;
    uint64_t inputs; /* checksum of Q, K and V as generated */
    uint64_t count;  /* doubles that follow */
} ref_header;

static const char REF_MAGIC[8] = "VSREF01";

static uint64_t checksum(uint64_t h, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, &x[i], sizeof w);
        h = (h ^ w) * 0x100000001b3ULL; /* FNV-1a step per 32-bit word */
    }
    return h;
}

static ref_header ref_header_of(const attn_problem *p, long seed, size_t nq_el, size_t nkv_el) {
    ref_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, REF_MAGIC, sizeof h.magic);
    h.heads = p->heads, h.kv_heads = p->kv_heads, h.head_dim = p->head_dim;
    h.n_q = p->n_q, h.n_kv = p->n_kv, h.causal = p->causal, h.seed = seed;
    uint64_t c = 0xcbf29ce484222325ULL;
    c = checksum(c, p->q, nq_el);
    c = checksum(c, p->k, nkv_el);
    h.inputs = checksum(c, p->v, nkv_el);
    h.count = nq_el;
    return h;
}

static void ref_write(const char *path, const ref_header *h, const double *ref) {
    FILE *f = fopen(path, "wb");
    if (!f) die_arg("--make-ref: cannot write %s", path);
    const int ok = fwrite(h, sizeof *h, 1, f) == 1 &&
                   fwrite(ref, sizeof(double), h->count, f) == h->count;
    if (fclose(f) != 0 || !ok) die_arg("--make-ref: cannot write %s", path);
}

static void ref_read(const char *path, const ref_header *want, double *ref) {
    FILE *f = fopen(path, "rb");
    if (!f) die_arg("--ref: cannot read %s", path);
    ref_header got;
    if (fread(&got, sizeof got, 1, f) != 1 || memcmp(got.magic, REF_MAGIC, sizeof got.magic))
        die_arg("--ref: %s is not a reference file", path);
    if (memcmp(&got, want, sizeof got))
        die_arg("--ref: %s was written for another problem or inputs (shape %dx%dx%d, n_q %d, "
                "n_kv %d, seed %lld)", path, got.heads, got.kv_heads, got.head_dim, got.n_q,
                got.n_kv, (long long)got.seed);
    const int ok = fread(ref, sizeof(double), want->count, f) == want->count;
    fclose(f);
    if (!ok) die_arg("--ref: %s is truncated", path);
}

static void fill(rng_t *r, float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = rng_uniform(r, -1.0f, 1.0f);
}

static void write_meta(const char *dir, const char *kernel, const attn_problem *p, long seed) {
    FILE *f = dump_open(dir, "meta.json");
    fprintf(f,
            "{\"kernel\": \"%s\", \"dtype\": \"float32\", \"layout\": \"ggml\", \"seed\": %ld,\n"
            " \"heads\": %d, \"kv_heads\": %d, \"head_dim\": %d, \"n_q\": %d, \"n_kv\": %d,\n"
            " \"causal\": %s, \"scale\": %.9g,\n"
            " \"shapes\": {\"q\": [%d, %d, %d], \"k\": [%d, %d, %d], \"v\": [%d, %d, %d],"
            " \"o\": [%d, %d, %d]}}\n",
            kernel, seed, p->heads, p->kv_heads, p->head_dim, p->n_q, p->n_kv,
            p->causal ? "true" : "false", (double)p->scale, p->n_q, p->heads, p->head_dim,
            p->n_kv, p->kv_heads, p->head_dim, p->n_kv, p->kv_heads, p->head_dim, p->n_q,
            p->heads, p->head_dim);
    if (fclose(f) != 0) {
        fprintf(stderr, "error: --dump: cannot write %s/meta.json\n", dir);
        exit(EXIT_BADARG);
    }
}

int main(int argc, char **argv) {
    static const char *const kernels[] = {"ggml-scalar", "ggml-vec", "fa-v", NULL};
    static const char *const phases[] = {"prefill", "decode", NULL};
    static const char *const precisions[] = {"fp32", "fp16", NULL};
    args_t a;
    args_init(&a, argc, argv);

    const char *kernel = arg_choice(&a, "kernel", NULL, kernels);
    const int kid = strcmp(kernel, "fa-v") == 0 ? 2 : strcmp(kernel, "ggml-vec") == 0 ? 1 : 0;
    const int built[3] = {ATTN_HAS_GGML_SCALAR, ATTN_HAS_GGML_VEC, ATTN_HAS_FAV};
    if (!built[kid])
        die_arg("--kernel: '%s' is not in this binary (%s, %s: only%s%s%s)", kernel, ATTN_BINARY,
                VLSCALE_VECTOR ? "rv64gcv" : "rv64gc", built[0] ? " ggml-scalar" : "",
                built[1] ? " ggml-vec" : "", built[2] ? " fa-v" : "");
    const char *model = arg_str(&a, "model", NULL);
    const char *sh = arg_str(&a, "heads", NULL), *skv = arg_str(&a, "kv-heads", NULL),
               *sd = arg_str(&a, "head-dim", NULL);
    int heads, kv_heads, head_dim;
    if (model) {
        if (sh || skv || sd) die_arg("--model: give either --model or --heads/--kv-heads/--head-dim");
        const model_shape *m = find_model(model);
        if (!m) {
            char list[512] = "";
            for (int i = 0; i < N_MODELS; i++) {
                strncat(list, MODELS[i].name, sizeof list - strlen(list) - 1);
                if (i + 1 < N_MODELS) strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            die_arg("--model: unknown model '%s' (expected one of: %s)", model, list);
        }
        heads = m->heads, kv_heads = m->kv_heads, head_dim = m->head_dim;
    } else {
        if (!sh || !skv || !sd)
            die_arg("--model: missing (or give all of --heads, --kv-heads and --head-dim)");
        heads = (int)arg_long(&a, "heads", 0, 1, 1024);
        kv_heads = (int)arg_long(&a, "kv-heads", 0, 1, 1024);
        head_dim = (int)arg_long(&a, "head-dim", 0, 1, 4096);
        if (heads % kv_heads)
            die_arg("--kv-heads: %d does not divide --heads %d", kv_heads, heads);
    }
    const char *phase = arg_choice(&a, "phase", "prefill", phases);
    const int decode = strcmp(phase, "decode") == 0;
    int n_q, n_kv;
    if (decode) {
        if (arg_str(&a, "n", NULL)) die_arg("--n: not used with --phase decode (use --l)");
        n_kv = (int)arg_long(&a, "l", 256, 1, 1 << 20);
        n_q = 1;
    } else {
        if (arg_str(&a, "l", NULL)) die_arg("--l: not used with --phase prefill (use --n)");
        n_q = n_kv = (int)arg_long(&a, "n", 64, 1, 1 << 16);
    }
    const char *precision = arg_choice(&a, "precision", "fp32", precisions);
    if (strcmp(precision, "fp16") == 0)
        die_arg("--precision: fp16 is not supported in this build (needs zvfh; fp32 only)");
    const long seed = arg_long(&a, "seed", 1, 0, 0x7fffffffL);
    const roi_mode roi = parse_roi(&a);
    attn_tunables t;
    t.block_r = (int)arg_long(&a, "block-r", 64, 1, 1 << 16);
    const char *bc_arg = arg_str(&a, "block-c", "auto");
    t.block_c_auto = !strcmp(bc_arg, "auto");
    if (t.block_c_auto) {
        t.block_c = auto_block_c(kv_heads, head_dim, decode);
    } else {
        char *end = NULL;
        const long bc = strtol(bc_arg, &end, 10);
        if (end == bc_arg || *end || bc < 1 || bc > (1 << 16))
            die_arg("--block-c: expected auto or an integer in [1, 65536], got '%s'", bc_arg);
        t.block_c = (int)bc;
    }
    static const char *const regimes[] = {"auto", "blocked", "packed", "rows", "dot", "heads", NULL};
    const char *regime_arg = arg_choice(&a, "regime", "auto", regimes);
    t.regime = !strcmp(regime_arg, "blocked") ? FAV_BLOCKED
               : !strcmp(regime_arg, "packed") ? FAV_PACKED
               : !strcmp(regime_arg, "rows") ? FAV_ROWS
               : !strcmp(regime_arg, "dot") ? FAV_DOT
               : !strcmp(regime_arg, "heads") ? FAV_HEADS : FAV_AUTO;
    t.unroll = (int)arg_long(&a, "unroll", 4, 1, 8);
    const char *strip_arg = arg_str(&a, "strip", "auto");
    if (!strcmp(strip_arg, "auto")) t.strip = 0;
    else {
        char *end = NULL;
        const long sv = strtol(strip_arg, &end, 10);
        if (end == strip_arg || *end || sv < 1 || sv > (1 << 16))
            die_arg("--strip: expected auto or an integer in [1, 65536], got '%s'", strip_arg);
        t.strip = (int)sv;
    }
    static const char *const transposes[] = {"auto", "tile", "strided", NULL};
    const char *tr_arg = arg_choice(&a, "transpose", "auto", transposes);
    t.transpose = !strcmp(tr_arg, "tile")      ? FAV_TRANSPOSE_TILE
                  : !strcmp(tr_arg, "strided") ? FAV_TRANSPOSE_STRIDED
                                               : FAV_TRANSPOSE_AUTO;
    t.r = (int)arg_long(&a, "r", 4, 1, 4);
    /* LMUL: auto (the default) = the smallest of 1, 2, 4 whose VLMAX holds D fp32 elements */
    const char *lmul_arg = arg_str(&a, "lmul", "auto");
    if (!strcmp(lmul_arg, "auto")) t.lmul = 0;
    else if (!strcmp(lmul_arg, "1") || !strcmp(lmul_arg, "2") || !strcmp(lmul_arg, "4"))
        t.lmul = atoi(lmul_arg);
    else die_arg("--lmul: expected auto, 1, 2 or 4, got '%s'", lmul_arg);
    const char *dump = arg_str(&a, "dump", NULL);
    const char *ref_in = arg_str(&a, "ref", NULL);       /* read the reference from here */
    const char *ref_out = arg_str(&a, "make-ref", NULL); /* only write the reference */
    const int perturb = arg_flag(&a, "test-perturb");
    args_finish(&a);

    const size_t nq_el = (size_t)n_q * heads * head_dim, nkv_el = (size_t)n_kv * kv_heads * head_dim;
    float *q = xaligned(nq_el * sizeof(float)), *k = xaligned(nkv_el * sizeof(float)),
          *v = xaligned(nkv_el * sizeof(float)), *o = xaligned(nq_el * sizeof(float));
    rng_t rng;
    rng_seed(&rng, (uint64_t)seed);
    fill(&rng, q, nq_el);
    fill(&rng, k, nkv_el);
    fill(&rng, v, nkv_el);
    attn_problem p = {.heads = heads, .kv_heads = kv_heads, .head_dim = head_dim, .n_q = n_q,
                      .n_kv = n_kv, .causal = !decode, .scale = 1.0f / sqrtf((float)head_dim),
                      .q = q, .k = k, .v = v, .o = o};

    if (ref_in && ref_out) die_arg("--ref and --make-ref: give one of them");
    const ref_header ref_hdr = ref_header_of(&p, seed, nq_el, nkv_el);
    if (ref_out) { /* no kernel: compute the reference, write it, report */
        double *r = malloc(nq_el * sizeof(double));
        if (!r) die_arg("out of memory");
        reference(&p, r);
        ref_write(ref_out, &ref_hdr, r);
        printf("{\"workload\": \"attention\", \"make_ref\": \"%s\", \"count\": %zu}\n", ref_out,
               nq_el);
        free(r);
        return EXIT_OK;
    }

#if VLSCALE_VECTOR
    if (t.lmul == 0 && kid != 2) t.lmul = attn_auto_lmul(head_dim); /* fa-v: per regime */
#else
    if (t.lmul == 0) t.lmul = 1; /* no vector code: nothing to choose */
#endif
    const char *regime = "row"; /* ggml kernels: one (token, head) row at a time */
    int vlmax = 0, pack = 1, step = 1, strip = 0, r_eff = t.r, u_eff = t.unroll; /* step: heads processed per inner iteration */
    const char *transpose = "none"; /* fa-v's K^T, Q^T and O^T copies, where it makes them */
    int tile_rows = 0;
#if ATTN_HAS_FAV
    fav_ctx fc;
    if (kid == 2) {
        if (fav_prepare(&fc, &p, &t) != 0) die_arg("out of memory");
        regime = fc.heads ? "heads" : fc.rows ? "rows" : fc.dot ? "dot" : fc.packed ? "packed" : "blocked";
        t.lmul = fc.t.lmul; /* as the regime resolved it */
        t.block_c = fc.t.block_c; /* as the regime resolved it */
        vlmax = fc.vlmax;
        strip = fc.rows ? fc.strip : 0;
        if (fc.rows || !(fc.packed || fc.dot || fc.heads)) transpose = fc.tile_rows ? "tile" : "strided";
        tile_rows = fc.tile_rows;
        pack = fc.pack;
        r_eff = fc.t.r; /* capped by the register file and the number of heads */
        u_eff = fc.t.unroll; /* capped by the register file */
        step = fc.dot ? 1 : fc.heads ? heads : fc.rows ? heads / kv_heads /* a strip shares one kv head */
               : fc.packed ? fc.pack * fc.t.r : fc.t.unroll; /* packed: U = (VLMAX / D) * R */
    }
#endif
    /* the region of interest holds the kernel call and nothing else */
    roi_begin(roi);
#if ATTN_HAS_FAV
    if (kid == 2) attn_fa_v(&fc);
#endif
#if ATTN_HAS_GGML_VEC
    if (kid == 1) attn_ggml_vec(&p, &t);
#endif
#if ATTN_HAS_GGML_SCALAR
    if (kid == 0) attn_ggml_scalar(&p);
#endif
    roi_end(roi);
#if ATTN_HAS_FAV
    if (kid == 2) fav_release(&fc);
#endif
    if (perturb) o[nq_el / 2] += 0.5f; /* self-test of the checker: must be caught */

    double *ref = malloc(nq_el * sizeof(double));
    if (!ref) die_arg("out of memory");
    if (ref_in) ref_read(ref_in, &ref_hdr, ref);
    else reference(&p, ref);
    err_stats e;
    err_reset(&e);
    for (size_t i = 0; i < nq_el; i++) err_add(&e, o[i], ref[i], ATOL, RTOL, REL_FLOOR);
    const int ok = e.n_bad == 0;

    if (dump) {
        dump_array(dump, "q", q, nq_el * sizeof(float));
        dump_array(dump, "k", k, nkv_el * sizeof(float));
        dump_array(dump, "v", v, nkv_el * sizeof(float));
        dump_array(dump, "o", o, nq_el * sizeof(float));
        write_meta(dump, kernel, &p, seed);
    }

    json_begin();
    json_str("workload", "attention");
    json_str("kernel", kernel);
    json_str("model", model ? model : "custom");
    json_int("heads", heads);
    json_int("kv_heads", kv_heads);
    json_int("head_dim", head_dim);
    json_str("phase", phase);
    json_int(decode ? "l" : "n", decode ? n_kv : n_q);
    json_str("precision", precision);
    json_int("seed", seed);
    json_str("roi", roi == ROI_M5 ? "m5" : "none");
    json_int("vlen", (long)vlen_bits());
    json_int("block_r", t.block_r);
    json_int("block_c", t.block_c);
    json_int("unroll", u_eff);
    json_int("r", r_eff);
    json_int("lmul", t.lmul);
    json_str("regime", regime);
    json_str("regime_asked", kid == 2 ? regime_arg : "row");
    json_int("vlmax", vlmax);
    json_int("strip", strip);
    json_str("transpose", transpose);
    json_int("tile_rows", tile_rows);
    json_int("pack", pack);
    json_int("heads_per_step", step);
    json_errors(&e);
    json_num("atol", ATOL);
    json_num("rtol", RTOL);
    json_bool("pass", ok);
    json_end();
    free(ref);
    free(q), free(k), free(v), free(o);
    return ok ? EXIT_OK : EXIT_WRONG;
}
