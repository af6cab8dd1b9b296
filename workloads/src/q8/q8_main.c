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

static const char *const KERNELS[] = {"q8-scalar", "q8-ggml", "q8-packed", "q8-split", NULL};
static const char *const PROJS[] = {"q", "k", "v", "o", "gate", "up", "down", NULL};
static const char *const PACK_X[] = {"row", "once", NULL};
static const char *const FP16[] = {"bits", "table", NULL};
static const char *const SPLIT_MAC[] = {"pair", "sext", NULL};

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

int main(int argc, char **argv) {
    args_t a;
    args_init(&a, argc, argv);
    const char *kernel = arg_choice(&a, "kernel", NULL, KERNELS);
#if !VLSCALE_VECTOR
    if (strcmp(kernel, "q8-scalar") != 0)
        die_arg("--kernel: '%s' needs the vector build (q8); this is q8-scalar", kernel);
#endif
    const char *model_name = arg_str(&a, "model", NULL);
    const char *proj = NULL;
    long rows, cols;
    if (model_name) {
        const model_shape *m = find_model(model_name);
        if (!m) die_arg("--model: unknown model '%s' (see workloads/models.yaml)", model_name);
        proj = arg_choice(&a, "proj", NULL, PROJS);
        if (arg_str(&a, "rows", NULL) || arg_str(&a, "cols", NULL))
            die_arg("--rows/--cols: not allowed together with --model");
        proj_shape(m, proj, &rows, &cols);
    } else {
        if (arg_str(&a, "proj", NULL)) die_arg("--proj: needs --model");
        rows = arg_long(&a, "rows", -1, 1, 1L << 20);
        cols = arg_long(&a, "cols", -1, 1, 1L << 20);
        if (rows < 0 || cols < 0) die_arg("--model/--proj or --rows and --cols are required");
    }
    if (cols % QK != 0) die_arg("--cols: %ld is not a multiple of %d", cols, QK);
    const long max_rows = arg_long(&a, "max-rows", 0, 1, 1L << 30);
    if (max_rows > 0 && rows > max_rows) rows = max_rows;
    const long seed = arg_long(&a, "seed", 1, 0, 0x7fffffffffffffffL);
    const roi_mode roi = parse_roi(&a);
    const char *dump = arg_str(&a, "dump", NULL);
    const int perturb = arg_flag(&a, "test-perturb");
    const char *pack_x = arg_str(&a, "pack-x", NULL);
    if (pack_x) {
        if (strcmp(kernel, "q8-packed") != 0) die_arg("--pack-x: only for --kernel q8-packed");
        pack_x = arg_choice(&a, "pack-x", NULL, PACK_X);
    } else {
        pack_x = "row";
    }
    const char *split_mac = arg_str(&a, "split-mac", NULL);
    if (split_mac) {
        if (strcmp(kernel, "q8-split") != 0) die_arg("--split-mac: only for --kernel q8-split");
        split_mac = arg_choice(&a, "split-mac", NULL, SPLIT_MAC);
    } else {
        split_mac = "pair";
    }
    const char *fp16 = arg_choice(&a, "fp16", "bits", FP16);
    args_finish(&a);

    const size_t R = (size_t)rows, C = (size_t)cols, nb = C / QK;
    rng_t rng;
    rng_seed(&rng, (uint64_t)seed);
    float *x = xaligned(C * sizeof(float));
    block_q8 *xq = xaligned(nb * sizeof(block_q8));
    block_q8 *w = xaligned(R * nb * sizeof(block_q8));
    float *y = xaligned(R * sizeof(float));
    make_x(&rng, x, nb);
    make_w(&rng, w, R * nb);
    quantize_q8(x, xq, C);
    float *f16tab = NULL;
    if (!strcmp(fp16, "table")) { /* set-up, like ggml_cpu_init */
        f16tab = xaligned(65536 * sizeof(float));
        for (uint32_t h = 0; h < 65536; h++) f16tab[h] = fp16_to_fp32((uint16_t)h);
    }
    const q8_problem p = {.rows = R, .cols = C, .nb = nb, .w = w, .xq = xq, .f16tab = f16tab};

    long blocks_per_reg = 0, tile_rows = 0;
#if VLSCALE_VECTOR
    int8_t *xbuf = NULL;
    q8_split_layout split = {0};
    if (!strcmp(kernel, "q8-packed")) {
        blocks_per_reg = (long)q8_packed_blocks_per_reg();
        xbuf = xaligned(C);
    } else if (!strcmp(kernel, "q8-split")) {
        q8_split_convert(&p, &split); /* layout conversion: set-up, outside the ROI */
        tile_rows = (long)split.tile;
    }
#endif

    roi_begin(roi);
    if (!strcmp(kernel, "q8-scalar")) q8_scalar(&p, y);
#if VLSCALE_VECTOR
    else if (!strcmp(kernel, "q8-ggml")) q8_ggml(&p, y);
    else if (!strcmp(kernel, "q8-packed")) q8_packed(&p, y, !strcmp(pack_x, "once"), xbuf);
    else q8_split(&split, xq, f16tab, !strcmp(split_mac, "sext"), y);
#endif
    roi_end(roi);

    double *yref = xaligned(R * sizeof(double));
    double *abssum = xaligned(R * sizeof(double));
    reference(&p, yref, abssum);
    if (perturb) { /* far outside the tolerance below */
        const size_t r = R / 2;
        y[r] += (float)(0.01 * abssum[r] + 1.0);
    }
    /* Tolerance: each kernel adds nb fp32 terms (each rounded once more than the
     * reference's): |err| <= (nb + 2) * 2^-24 * sum|terms|; doubled for margin. */
    err_stats e;
    err_reset(&e);
    for (size_t r = 0; r < R; r++) {
        const double atol = 2.0 * (double)(nb + 2) * 0x1p-24 * abssum[r] + 1e-30;
        err_add(&e, y[r], yref[r], atol, 0.0, fmax(1e-3 * abssum[r], 1e-30));
    }
    const int pass = e.n_bad == 0;

    if (dump) {
        dump_array(dump, "x", x, C * sizeof(float));
        dump_array(dump, "xq", xq, nb * sizeof(block_q8));
        dump_array(dump, "w", w, R * nb * sizeof(block_q8));
        dump_array(dump, "y", y, R * sizeof(float));
        write_meta(dump, kernel, rows, cols, seed);
    }

    json_begin();
    json_str("workload", "q8");
    json_str("kernel", kernel);
    json_str("model", model_name ? model_name : "custom");
    json_str("proj", proj ? proj : "custom");
    json_int("rows", rows);
    json_int("cols", cols);
    json_int("seed", seed);
    json_int("vlen", (long)vlen_bits());
    json_str("fp16", fp16);
    if (!strcmp(kernel, "q8-ggml")) json_int("block_vl", QK);
    if (!strcmp(kernel, "q8-packed")) {
        json_int("blocks_per_reg", blocks_per_reg);
        json_str("pack_x", pack_x);
    }
    if (!strcmp(kernel, "q8-split")) {
        json_int("tile_rows", tile_rows);
        json_str("split_mac", split_mac);
    }
    json_errors(&e);
    json_bool("pass", pass);
    json_end();

#if VLSCALE_VECTOR
    q8_split_free(&split);
    free(xbuf);
#endif
    free(f16tab);
    free(x);
    free(xq);
    free(w);
    free(y);
    free(yref);
    free(abssum);
    return pass ? EXIT_OK : EXIT_WRONG;
}
