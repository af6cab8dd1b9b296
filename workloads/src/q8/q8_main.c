/* q8 workload: Q8_0 GEMV y = W x on one projection of a model (or an explicit shape).
 * Set-up (inputs, activation quantisation, layout conversion) and the check run outside
 * the ROI; --roi m5 wraps only the kernel call. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/harness.h"
#include "q8/q8.h"
#if VLSCALE_VECTOR
#include "q8/q8_zvfh.h"
#endif

static const char *const PROJS[] = {"q", "k", "v", "o", "gate", "up", "down", NULL};
/* how the kernels turn fp16 scales into fp32: software decode (q8.h), ggml's table, or
 * half-precision hardware (Zfhmin, Zvfh: q8_zvfh.c, the vector kernels only) */
static const char *const FP16[] = {"bits", "table", "zvfh", NULL};

/* The kernels of this workload, in the order of the kernel registry (workloads/kernels.py,
 * family q8); the enum names their rows. A kernel may own one option of its own (its
 * values, the first the default). The call itself is in main's region of interest.
 * Adding a kernel: a row here, its call in main, its entry in the registry. */
enum { Q8_SCALAR, Q8_GGML, Q8_PACKED, Q8_SPLIT };

typedef struct {
    const char *name;
    int vector;                 /* needs the vector build (q8), not q8-scalar */
    const char *option;         /* its own option, or NULL */
    const char *const *choices; /* that option's values */
} q8_kernel;

static const char *const PACK_X[] = {"row", "once", NULL};
static const char *const SPLIT_MAC[] = {"pair", "sext", NULL};
static const q8_kernel KERNELS[] = {
    [Q8_SCALAR] = {"q8-scalar", 0, NULL, NULL},
    [Q8_GGML] = {"q8-ggml", 1, NULL, NULL},
    [Q8_PACKED] = {"q8-packed", 1, "pack-x", PACK_X},
    [Q8_SPLIT] = {"q8-split", 1, "split-mac", SPLIT_MAC},
};
#define N_KERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))

static void proj_shape(const model_shape *m, const char *proj, long *rows, long *cols) {
    const long h = m->hidden, qd = (long)m->heads * m->head_dim;
    const long kvd = (long)m->kv_heads * m->head_dim, inter = m->intermediate;
    if (!strcmp(proj, "q")) *rows = qd, *cols = h;
    else if (!strcmp(proj, "k") || !strcmp(proj, "v")) *rows = kvd, *cols = h;
    else if (!strcmp(proj, "o")) *rows = h, *cols = qd;
    else if (!strcmp(proj, "gate") || !strcmp(proj, "up")) *rows = inter, *cols = h;
    else *rows = h, *cols = inter; /* down */
}

/* Inputs depend only on the seed: x first (so it does not depend on rows), then W row by
 * row (so --max-rows keeps a prefix of the full matrix). */
static void make_x(rng_t *rng, float *x, size_t nb) {
    for (size_t b = 0; b < nb; b++) {
        const int zero_block = (rng_u64(rng) & 15u) == 0; /* exercises d = 0 */
        /* block magnitudes over 2^11: the smallest give fp16-subnormal scales */
        const float amp = 3.0f * exp2f(-rng_uniform(rng, 0.0f, 11.0f));
        for (int j = 0; j < QK; j++) {
            const float v = rng_uniform(rng, -amp, amp);
            x[b * QK + (size_t)j] = zero_block ? 0.0f : v;
        }
    }
}

static void make_w(rng_t *rng, block_q8 *w, size_t nblocks) {
    for (size_t i = 0; i < nblocks; i++) {
        /* plausible weight scales: amax/127 of weights of magnitude ~0.01 .. 0.6 */
        w[i].d = fp32_to_fp16(rng_uniform(rng, 1e-4f, 5e-3f));
        for (int j = 0; j < QK; j++) w[i].qs[j] = (int8_t)((int)(rng_u64(rng) % 255u) - 127);
    }
}

/* Double-precision reference from the same quantised data and the same fp32 per-block
 * scale products; also the sum of |terms| per row, which bounds fp32 rounding. */
static void reference(const q8_problem *p, double *yref, double *abssum) {
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * p->nb;
        double s = 0.0, a = 0.0;
        for (size_t b = 0; b < p->nb; b++) {
            long sumi = 0;
            for (int j = 0; j < QK; j++) sumi += (long)w[b].qs[j] * p->xq[b].qs[j];
            const float prod = fp16_to_fp32(w[b].d) * fp16_to_fp32(p->xq[b].d);
            const double t = (double)sumi * (double)prod;
            s += t;
            a += fabs(t);
        }
        yref[r] = s;
        abssum[r] = a;
    }
}

static void write_meta(const char *dir, const char *kernel, long rows, long cols, long seed) {
    FILE *f = dump_open(dir, "meta.json");
    fprintf(f,
            "{\"workload\": \"q8\", \"kernel\": \"%s\", \"rows\": %ld, \"cols\": %ld, "
            "\"seed\": %ld, \"block\": %d, \"block_bytes\": %zu,\n"
            " \"files\": {\"x\": \"float32[cols]\", \"xq\": \"block_q8_0[cols/32]\", "
            "\"w\": \"block_q8_0[rows][cols/32]\", \"y\": \"float32[rows]\"}}\n",
            kernel, rows, cols, seed, QK, sizeof(block_q8));
    if (fclose(f) != 0) {
        fprintf(stderr, "error: --dump: cannot write %s/meta.json\n", dir);
        exit(EXIT_BADARG);
    }
}

typedef struct {
    const q8_kernel *kernel;
    const char *model, *proj, *dump, *fp16;
    const char *own[N_KERNELS]; /* each kernel's own option: its value, else its default */
    long rows, cols, seed;
    roi_mode roi;
    int perturb;
} run_args;

static const q8_kernel *parse_kernel(args_t *a) {
    const char *names[N_KERNELS + 1];
    for (int i = 0; i < N_KERNELS; i++) names[i] = KERNELS[i].name;
    names[N_KERNELS] = NULL;
    const char *name = arg_choice(a, "kernel", NULL, names);
    const q8_kernel *k = KERNELS;
    while (strcmp(k->name, name) != 0) k++;
#if !VLSCALE_VECTOR
    if (k->vector) die_arg("--kernel: '%s' needs the vector build (q8); this is q8-scalar", name);
#endif
    return k;
}

/* --model and --proj, or --rows and --cols; --max-rows */
static void parse_shape(args_t *a, run_args *r) {
    r->model = arg_str(a, "model", NULL);
    r->proj = NULL;
    if (r->model) {
        const model_shape *m = find_model(r->model);
        if (!m) die_arg("--model: unknown model '%s' (see workloads/models.yaml)", r->model);
        r->proj = arg_choice(a, "proj", NULL, PROJS);
        if (arg_str(a, "rows", NULL) || arg_str(a, "cols", NULL))
            die_arg("--rows/--cols: not allowed together with --model");
        proj_shape(m, r->proj, &r->rows, &r->cols);
    } else {
        if (arg_str(a, "proj", NULL)) die_arg("--proj: needs --model");
        r->rows = arg_long(a, "rows", -1, 1, 1L << 20);
        r->cols = arg_long(a, "cols", -1, 1, 1L << 20);
        if (r->rows < 0 || r->cols < 0) die_arg("--model/--proj or --rows and --cols are required");
    }
    if (r->cols % QK != 0) die_arg("--cols: %ld is not a multiple of %d", r->cols, QK);
    const long max_rows = arg_long(a, "max-rows", 0, 1, 1L << 30);
    if (max_rows > 0 && r->rows > max_rows) r->rows = max_rows;
}

static run_args parse(int argc, char **argv) {
    args_t a;
    args_init(&a, argc, argv);
    run_args r;
    r.kernel = parse_kernel(&a);
    parse_shape(&a, &r);
    r.seed = arg_long(&a, "seed", 1, 0, 0x7fffffffffffffffL);
    r.roi = parse_roi(&a);
    r.dump = arg_str(&a, "dump", NULL);
    r.perturb = arg_flag(&a, "test-perturb");
    for (int i = 0; i < N_KERNELS; i++) {
        const q8_kernel *k = &KERNELS[i];
        r.own[i] = k->option ? k->choices[0] : NULL;
        if (!k->option || !arg_str(&a, k->option, NULL)) continue;
        if (k != r.kernel) die_arg("--%s: only for --kernel %s", k->option, k->name);
        r.own[i] = arg_choice(&a, k->option, NULL, k->choices);
    }
    r.fp16 = arg_choice(&a, "fp16", "bits", FP16);
    if (!strcmp(r.fp16, "zvfh") && !r.kernel->vector)
        die_arg("--fp16 zvfh: only for the vector kernels (%s has no vector code)",
                r.kernel->name);
    args_finish(&a);
    return r;
}

static void report(const run_args *r, long block_info, const err_stats *e, int pass) {
    const int id = (int)(r->kernel - KERNELS);
    json_begin();
    json_str("workload", "q8");
    json_str("kernel", r->kernel->name);
    json_str("model", r->model ? r->model : "custom");
    json_str("proj", r->proj ? r->proj : "custom");
    json_int("rows", r->rows);
    json_int("cols", r->cols);
    json_int("seed", r->seed);
    json_int("vlen", (long)vlen_bits());
    json_str("fp16", r->fp16);
    if (id == Q8_GGML) json_int("block_vl", QK);
    if (id == Q8_PACKED) {
        json_int("blocks_per_reg", block_info);
        json_str("pack_x", r->own[Q8_PACKED]);
    }
    if (id == Q8_SPLIT) {
        json_int("tile_rows", block_info);
        json_str("split_mac", r->own[Q8_SPLIT]);
    }
    json_errors(e);
    json_bool("pass", pass);
    json_end();
}

/* Compares y with the double-precision reference (after planting an error when perturb);
 * 1 when every row is within its tolerance. */
static int check(const q8_problem *p, float *y, int perturb, err_stats *e) {
    const size_t R = p->rows;
    double *yref = xaligned(R * sizeof(double));
    double *abssum = xaligned(R * sizeof(double));
    reference(p, yref, abssum);
    if (perturb) { /* far outside the tolerance below */
        const size_t i = R / 2;
        y[i] += (float)(0.01 * abssum[i] + 1.0);
    }
    /* Tolerance: each kernel adds nb fp32 terms (each rounded once more than the
     * reference's): |err| <= (nb + 2) * 2^-24 * sum|terms|; doubled for margin. */
    err_reset(e);
    for (size_t i = 0; i < R; i++) {
        const double atol = 2.0 * (double)(p->nb + 2) * 0x1p-24 * abssum[i] + 1e-30;
        err_add(e, y[i], yref[i], atol, 0.0, fmax(1e-3 * abssum[i], 1e-30));
    }
    free(yref);
    free(abssum);
    return e->n_bad == 0;
}

static void dump_all(const run_args *r, const float *x, const q8_problem *p, const float *y) {
    dump_array(r->dump, "x", x, p->cols * sizeof(float));
    dump_array(r->dump, "xq", p->xq, p->nb * sizeof(block_q8));
    dump_array(r->dump, "w", p->w, p->rows * p->nb * sizeof(block_q8));
    dump_array(r->dump, "y", y, p->rows * sizeof(float));
    write_meta(r->dump, r->kernel->name, r->rows, r->cols, r->seed);
}

int main(int argc, char **argv) {
    const run_args r = parse(argc, argv);
    const int id = (int)(r.kernel - KERNELS);
    const size_t R = (size_t)r.rows, C = (size_t)r.cols, nb = C / QK;
    rng_t rng;
    rng_seed(&rng, (uint64_t)r.seed);
    float *x = xaligned(C * sizeof(float));
    block_q8 *xq = xaligned(nb * sizeof(block_q8));
    block_q8 *w = xaligned(R * nb * sizeof(block_q8));
    float *y = xaligned(R * sizeof(float));
    make_x(&rng, x, nb);
    make_w(&rng, w, R * nb);
    quantize_q8(x, xq, C);
    float *f16tab = NULL;
    if (!strcmp(r.fp16, "table")) { /* set-up, like ggml_cpu_init */
        f16tab = xaligned(65536 * sizeof(float));
        for (uint32_t h = 0; h < 65536; h++) f16tab[h] = fp16_to_fp32((uint16_t)h);
    }
    const q8_problem p = {.rows = R, .cols = C, .nb = nb, .w = w, .xq = xq, .f16tab = f16tab};

    long block_info = 0; /* blocks per register (q8-packed), rows per tile (q8-split) */
#if VLSCALE_VECTOR
    const int zvfh = !strcmp(r.fp16, "zvfh");
    int8_t *xbuf = NULL;
    float *xs = NULL; /* q8-packed with zvfh: the x scales in fp32 */
    q8_split_layout split = {0};
    q8_split16_layout split16 = {0};
    if (id == Q8_PACKED) {
        block_info = (long)q8_packed_blocks_per_reg();
        xbuf = xaligned(C);
        xs = xaligned(nb * sizeof(float));
    } else if (id == Q8_SPLIT && zvfh) {
        q8_split16_convert(&p, &split16); /* layout conversion: set-up, outside the ROI */
        block_info = (long)split16.tile;
    } else if (id == Q8_SPLIT) {
        q8_split_convert(&p, &split);
        block_info = (long)split.tile;
    }
#endif

    roi_begin(r.roi);
    switch (id) {
    case Q8_SCALAR: q8_scalar(&p, y); break;
#if VLSCALE_VECTOR
    case Q8_GGML:
        if (zvfh) q8_ggml_zvfh(&p, y);
        else q8_ggml(&p, y);
        break;
    case Q8_PACKED:
        if (zvfh) q8_packed_zvfh(&p, y, !strcmp(r.own[Q8_PACKED], "once"), xbuf, xs);
        else q8_packed(&p, y, !strcmp(r.own[Q8_PACKED], "once"), xbuf);
        break;
    case Q8_SPLIT:
        if (zvfh) q8_split_zvfh(&split16, xq, !strcmp(r.own[Q8_SPLIT], "sext"), y);
        else q8_split(&split, xq, f16tab, !strcmp(r.own[Q8_SPLIT], "sext"), y);
        break;
#endif
    default: break;
    }
    roi_end(r.roi);

    err_stats e;
    const int pass = check(&p, y, r.perturb, &e);
    if (r.dump) dump_all(&r, x, &p, y);
    report(&r, block_info, &e, pass);

#if VLSCALE_VECTOR
    q8_split_free(&split);
    q8_split16_free(&split16);
    free(xbuf);
    free(xs);
#endif
    free(f16tab);
    free(x);
    free(xq);
    free(w);
    free(y);
    return pass ? EXIT_OK : EXIT_WRONG;
}
