/* q8-ggml-lib[-scalar]: Q8_0 GEMV y = W x computed by ggml itself (ggml_mul_mat with Q8_0
 * weights, from the ggml library built by workloads/ggml/build_ggml.py) on the shapes,
 * inputs and check of the q8 workload (q8/q8_main.c). As there, the activations are
 * quantised once outside the ROI: x goes to ggml as Q8_0 (ggml's vec_dot type for Q8_0
 * weights), so ggml_graph_compute runs only the dot products, one
 * ggml_vec_dot_q8_0_q8_0 per row. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/harness.h"
#include "ggml/q8_ref.h"
#include "ggml/vsggml.h"
#include "q8/q8.h"

#if VLSCALE_VECTOR
#define KERNEL "q8-ggml-lib"
#define OTHER "q8-ggml-lib-scalar"
#define BINARY "q8-ggml-lib (rv64gcv)"
#else
#define KERNEL "q8-ggml-lib-scalar"
#define OTHER "q8-ggml-lib"
#define BINARY "q8-ggml-lib-scalar (rv64gc)"
#endif

_Static_assert(sizeof(block_q8) == 34, "block_q8 is ggml's block_q8_0");

static const char *const KERNELS[] = {KERNEL, NULL};
static const char *const PROJS[] = {"q", "k", "v", "o", "gate", "up", "down", NULL};

static void write_meta(const char *dir, long rows, long cols, long seed) {
    FILE *f = dump_open(dir, "meta.json");
    fprintf(f,
            "{\"workload\": \"q8\", \"kernel\": \"%s\", \"rows\": %ld, \"cols\": %ld, "
            "\"seed\": %ld, \"block\": %d, \"block_bytes\": %zu,\n"
            " \"files\": {\"x\": \"float32[cols]\", \"xq\": \"block_q8_0[cols/32]\", "
            "\"w\": \"block_q8_0[rows][cols/32]\", \"y\": \"float32[rows]\"}}\n",
            KERNEL, rows, cols, seed, QK, sizeof(block_q8));
    if (fclose(f) != 0) die_arg("--dump: cannot write %s/meta.json", dir);
}

/* One function on purpose: the workload's steps in the order they run. Its binary's
 * bytes are part of the id of every stored run made with it, and splitting it moves code
 * (tried with clang 19: helpers, even always_inline ones, change the bytes), so it is
 * split when the archives that ran this binary are regenerated, not before. */
int main(int argc, char **argv) {
    args_t a;
    args_init(&a, argc, argv);
    const char *kernel_arg = arg_str(&a, "kernel", NULL);
    if (kernel_arg && !strcmp(kernel_arg, OTHER))
        die_arg("--kernel: '%s' is not in this binary (%s: only %s)", kernel_arg, BINARY,
                KERNEL);
    arg_choice(&a, "kernel", NULL, KERNELS);
    const char *model_name = arg_str(&a, "model", NULL);
    const char *proj = NULL;
    long rows, cols;
    if (model_name) {
        const model_shape *m = find_model(model_name);
        if (!m) die_arg("--model: unknown model '%s' (see workloads/models.yaml)", model_name);
        proj = arg_choice(&a, "proj", NULL, PROJS);
        if (arg_str(&a, "rows", NULL) || arg_str(&a, "cols", NULL))
            die_arg("--rows/--cols: not allowed together with --model");
        q8_proj_shape(m, proj, &rows, &cols);
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
    args_finish(&a);

    const size_t R = (size_t)rows, C = (size_t)cols, nb = C / QK;
    rng_t rng;
    rng_seed(&rng, (uint64_t)seed);
    float *x = xaligned(C * sizeof(float));
    block_q8 *xq = xaligned(nb * sizeof(block_q8));
    block_q8 *w = xaligned(R * nb * sizeof(block_q8));
    float *y = xaligned(R * sizeof(float));
    q8_make_x(&rng, x, nb);
    q8_make_w(&rng, w, R * nb);
    quantize_q8(x, xq, C); /* the activations' quantisation: set-up, as in the q8 workload */
    const q8_problem p = {.rows = R, .cols = C, .nb = nb, .w = w, .xq = xq, .f16tab = NULL};

    /* ggml's tensors over our arrays (block_q8 is ggml's block_q8_0, rows of nb blocks):
     * W [cols, rows] and x [cols, 1] in Q8_0, y [rows, 1] in F32. */
    vsggml_run run;
    vsggml_begin(&run, 8);
    struct ggml_tensor *tw = ggml_new_tensor_2d(run.ctx, GGML_TYPE_Q8_0, cols, rows);
    struct ggml_tensor *tx = ggml_new_tensor_2d(run.ctx, GGML_TYPE_Q8_0, cols, 1);
    tw->data = w;
    tx->data = xq;
    struct ggml_tensor *ty = ggml_mul_mat(run.ctx, tw, tx);
    ty->data = y;
    vsggml_plan(&run, ty, false);

    vsggml_compute(&run, roi); /* the region of interest: ggml_graph_compute only */
    vsggml_end(&run);

    double *yref = xaligned(R * sizeof(double));
    double *abssum = xaligned(R * sizeof(double));
    q8_reference(&p, yref, abssum);
    if (perturb) { /* far outside the tolerance below */
        const size_t r = R / 2;
        y[r] += (float)(0.01 * abssum[r] + 1.0);
    }
    /* The q8 workload's tolerance: nb fp32 terms per row, each rounded once more than the
     * reference's: |err| <= (nb + 2) 2^-24 sum|terms|, doubled. */
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
        write_meta(dump, rows, cols, seed);
    }

    json_begin();
    json_str("workload", "q8");
    json_str("kernel", KERNEL);
    json_str("model", model_name ? model_name : "custom");
    json_str("proj", proj ? proj : "custom");
    json_int("rows", rows);
    json_int("cols", cols);
    json_int("seed", seed);
    json_int("vlen", (long)vlen_bits());
    json_str("fp16", "table"); /* ggml without Zfhmin: its fp16 -> fp32 lookup table */
    json_str("x_type", "q8_0");
    vsggml_json_build();
    json_errors(&e);
    json_bool("pass", pass);
    json_end();

    free(x);
    free(xq);
    free(w);
    free(y);
    free(yref);
    free(abssum);
    return pass ? EXIT_OK : EXIT_WRONG;
}
