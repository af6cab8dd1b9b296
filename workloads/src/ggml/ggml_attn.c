/* attention-ggml-lib[-scalar]: one attention layer computed by ggml's own CPU kernel,
 * ggml_flash_attn_ext from the ggml library built by workloads/ggml/build_ggml.py, on the
 * same inputs, layouts and check as the attention workload (attention/main.c):
 * args -> deterministic Q/K/V -> ggml graph and plan -> [ROI] ggml_graph_compute [/ROI] ->
 * double-precision reference -> element-wise check -> one JSON line -> exit 0/1/2. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "common/harness.h"
#include "ggml/attn_ref.h"
#include "ggml/vsggml.h"

#if VLSCALE_VECTOR
#define KPREFIX "ggml-lib-vec"
#define OTHER_PREFIX "ggml-lib-scalar"
#define BINARY "attention-ggml-lib"
#define MARCH "rv64gcv"
#else
#define KPREFIX "ggml-lib-scalar"
#define OTHER_PREFIX "ggml-lib-vec"
#define BINARY "attention-ggml-lib-scalar"
#define MARCH "rv64gc"
#endif

/* The attention workload's tolerances (attention/main.c: fp32 kernel vs double reference). */
#define ATOL 1e-5
#define RTOL 1e-4
#define REL_FLOOR 1e-3

/* ggml's paths for F32 Q, K, V on one thread, as ggml_compute_forward_flash_attn_ext_f16
 * (ggml-cpu/ops.cpp, ggml 0.25.3) picks them:
 *  - use_ref (the reference implementations) -> one-row for every (token, head) row;
 *  - else one query token, one sequence and >= 512 keys -> one-row-split-kv: the one-row
 *    kernel over key chunks (one chunk with one thread), partial results reduced after;
 *  - else >= GGML_FA_TILE_Q (64) query tokens and, in a build with GGML_SIMD (RVV), the
 *    value dimension a multiple of GGML_F32_EPR (4) -> tiled: Q x K^T tiles, softmax over
 *    the tile, tile x V (ggml_compute_forward_flash_attn_ext_tiled);
 *  - else one-row (ggml_compute_forward_flash_attn_ext_f16_one_chunk).
 * The tests confirm the prediction from which functions QEMU translated. */
enum { PATH_AUTO, PATH_ONEROW, PATH_TILED };
#define GGML_FA_TILE_Q 64
#define GGML_SPLIT_KV_MIN 512
#define GGML_F32_EPR_RVV 4

static const char *ggml_path(int forced_onerow, int n_q, int n_kv, int head_dim) {
    if (forced_onerow) return "one-row";
    if (n_q == 1 && n_kv >= GGML_SPLIT_KV_MIN) return "one-row-split-kv";
    const int dv_ok = VLSCALE_VECTOR ? head_dim % GGML_F32_EPR_RVV == 0 : 1;
    if (n_q >= GGML_FA_TILE_Q && dv_ok) return "tiled";
    return "one-row";
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
    if (fclose(f) != 0) die_arg("--dump: cannot write %s/meta.json", dir);
}

/* A [rows][heads][D] fp32 array of ours seen as ggml's [D, rows, heads] (what
 * ggml_flash_attn_ext takes for Q, K and V): the array as a contiguous [D, heads, rows]
 * tensor, permuted. No copy: the tensor's data is the array. */
static struct ggml_tensor *as_rows_heads(struct ggml_context *ctx, float *x, int rows, int heads,
                                         int d) {
    struct ggml_tensor *t = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, heads, rows);
    t->data = x;
    return ggml_permute(ctx, t, 0, 2, 1, 3);
}

/* One function on purpose: the workload's steps in the order they run. Its binary's
 * bytes are part of the id of every stored run made with it, and splitting it moves code
 * (tried with clang 19: helpers, even always_inline ones, change the bytes), so it is
 * split when the archives that ran this binary are regenerated, not before. */
int main(int argc, char **argv) {
    static const char *const kernels[] = {KPREFIX, KPREFIX "-onerow", KPREFIX "-tiled", NULL};
    static const char *const phases[] = {"prefill", "decode", NULL};
    static const char *const precisions[] = {"fp32", "fp16", NULL};
    args_t a;
    args_init(&a, argc, argv);

    const char *kernel_arg = arg_str(&a, "kernel", NULL);
    if (kernel_arg && !strncmp(kernel_arg, OTHER_PREFIX, strlen(OTHER_PREFIX)))
        die_arg("--kernel: '%s' is not in this binary (%s, %s: only %s, %s-onerow, %s-tiled)",
                kernel_arg, BINARY, MARCH, KPREFIX, KPREFIX, KPREFIX);
    const char *kernel = arg_choice(&a, "kernel", NULL, kernels);
    const int asked = !strcmp(kernel, KPREFIX "-onerow")  ? PATH_ONEROW
                      : !strcmp(kernel, KPREFIX "-tiled") ? PATH_TILED
                                                          : PATH_AUTO;
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
        die_arg("--precision: fp16 is not supported in this build (fp32 Q, K, V only)");
    const long seed = arg_long(&a, "seed", 1, 0, 0x7fffffffL);
    const roi_mode roi = parse_roi(&a);
    const char *dump = arg_str(&a, "dump", NULL);
    const char *ref_in = arg_str(&a, "ref", NULL);
    const char *ref_out = arg_str(&a, "make-ref", NULL);
    const int perturb = arg_flag(&a, "test-perturb");
    args_finish(&a);
    if (ref_in && ref_out) die_arg("--ref and --make-ref: give one of them");

    const char *path = ggml_path(asked == PATH_ONEROW, n_q, n_kv, head_dim);
    if (asked == PATH_TILED && strcmp(path, "tiled") != 0)
        die_arg("--kernel: ggml runs its tiled path only with at least %d query tokens%s "
                "(prefill --n >= %d); here it would run %s", GGML_FA_TILE_Q,
                VLSCALE_VECTOR ? " and a head dim that is a multiple of 4" : "", GGML_FA_TILE_Q,
                path);

    const size_t nq_el = (size_t)n_q * heads * head_dim;
    const size_t nkv_el = (size_t)n_kv * kv_heads * head_dim;
    float *q = xaligned(nq_el * sizeof(float)), *k = xaligned(nkv_el * sizeof(float)),
          *v = xaligned(nkv_el * sizeof(float)), *o = xaligned(nq_el * sizeof(float));
    attn_fill_inputs((uint64_t)seed, q, nq_el, k, v, nkv_el);
    attn_problem p = {.heads = heads, .kv_heads = kv_heads, .head_dim = head_dim, .n_q = n_q,
                      .n_kv = n_kv, .causal = !decode, .scale = 1.0f / sqrtf((float)head_dim),
                      .q = q, .k = k, .v = v, .o = o};
    const attn_ref_header ref_hdr = attn_ref_header_of(&p, seed);
    if (ref_out) { /* no kernel: compute the reference, write it, report */
        double *r = malloc(nq_el * sizeof(double));
        if (!r) die_arg("out of memory");
        attn_reference(&p, r);
        attn_ref_write(ref_out, &ref_hdr, r);
        printf("{\"workload\": \"attention\", \"make_ref\": \"%s\", \"count\": %zu}\n", ref_out,
               nq_el);
        free(r);
        return EXIT_OK;
    }

    /* Set-up, outside the ROI: the causal mask (fp16, 0 where a query sees a key, -inf
     * where it does not; ggml's layout [query][key]), the graph, its plan and work buffer. */
    vsggml_run run;
    vsggml_begin(&run, 16);
    struct ggml_tensor *mask = NULL;
    if (p.causal) {
        mask = ggml_new_tensor_2d(run.ctx, GGML_TYPE_F16, n_kv, n_q);
        ggml_fp16_t *m = xaligned((size_t)n_kv * n_q * sizeof(ggml_fp16_t));
        const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), ninf = ggml_fp32_to_fp16(-INFINITY);
        for (int i = 0; i < n_q; i++)
            for (int j = 0; j < n_kv; j++)
                m[(size_t)i * n_kv + j] = j < attn_kv_end(&p, i) ? zero : ninf;
        mask->data = m;
    }
    struct ggml_tensor *out = ggml_flash_attn_ext(
        run.ctx, as_rows_heads(run.ctx, q, n_q, heads, head_dim),
        as_rows_heads(run.ctx, k, n_kv, kv_heads, head_dim),
        as_rows_heads(run.ctx, v, n_kv, kv_heads, head_dim), mask, p.scale, 0.0f, 0.0f);
    out->data = o; /* [n_q][heads][D], our O layout */
    vsggml_plan(&run, out, asked == PATH_ONEROW);

    vsggml_compute(&run, roi); /* the region of interest: ggml_graph_compute only */

    if (mask) free(mask->data);
    vsggml_end(&run);
    if (perturb) o[nq_el / 2] += 0.5f; /* self-test of the checker: must be caught */

    double *ref = malloc(nq_el * sizeof(double));
    if (!ref) die_arg("out of memory");
    if (ref_in) attn_ref_read(ref_in, &ref_hdr, ref);
    else attn_reference(&p, ref);
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
    json_str("kv_type", "f32");
    json_int("seed", seed);
    json_str("roi", roi == ROI_M5 ? "m5" : "none");
    json_int("vlen", (long)vlen_bits());
    json_str("ggml_path", path);
    json_str("ggml_path_asked", asked == PATH_ONEROW ? "one-row"
                                : asked == PATH_TILED ? "tiled" : "auto");
    vsggml_json_build();
    json_errors(&e);
    json_num("atol", ATOL);
    json_num("rtol", RTOL);
    json_bool("pass", ok);
    json_end();
    free(ref);
    free(q), free(k), free(v), free(o);
    return ok ? EXIT_OK : EXIT_WRONG;
}
