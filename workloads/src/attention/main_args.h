/* attention/main.c's command line (--model or a custom shape, the tunables, parse), in its own file to keep main.c readable: included once by
 * main.c, at the point where it was written (so the binaries are byte-identical), and
 * not a standalone header. */
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
#if FAV_KCACHE
    static const char *const k_caches[] = {"ggml", "transposed", NULL};
    t.k_cache = strcmp(arg_choice(a, "k-cache", "ggml", k_caches), "transposed") == 0
                    ? FAV_KC_TRANSPOSED
                    : FAV_KC_GGML;
    if (t.k_cache == FAV_KC_TRANSPOSED && t.regime != FAV_AUTO && t.regime != FAV_BLOCKED)
        die_arg("--k-cache: transposed is read by the blocked regime only (got --regime %s)",
                *regime_asked);
    if (t.k_cache == FAV_KC_TRANSPOSED) t.regime = FAV_BLOCKED;
#endif
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
        if (r.t.lmul > 2)
            die_arg("--lmul: fa-v in fp16 runs e16 m1 (fp32 sums in e32 m2) or, in the rows "
                    "regime, e16 m2 (e32 m4); only auto, 1 or 2, got %d", r.t.lmul);
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
