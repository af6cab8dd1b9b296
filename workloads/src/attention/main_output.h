/* attention/main.c's output (the JSON line, --dump, the fp16 copies), in its own file to keep main.c readable: included once by
 * main.c, at the point where it was written (so the binaries are byte-identical), and
 * not a standalone header. */
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
#if FAV_KCACHE
    json_str("k_cache", r->t.k_cache == FAV_KC_TRANSPOSED ? "transposed" : "ggml");
#endif
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
    const int rc = fav16_prepare(fc, pf, t);
    if (rc == -3)
        die_arg("--lmul: fa-v in fp16 has e16 m2 in the rows regime only; the %s regime runs "
                "e16 m1 (give --lmul auto or 1, or --regime rows)",
                fc->t.regime == FAV_HEADS ? "heads" : fc->t.regime == FAV_DOT ? "dot" : "blocked");
    if (rc != 0) die_arg("out of memory");
    const int rows = fc->t.regime == FAV_ROWS, heads = fc->t.regime == FAV_HEADS;
    const int dot = fc->t.regime == FAV_DOT;
    k->regime = rows ? "rows" : heads ? "heads" : dot ? "dot" : "blocked";
    k->regime_asked = regime_asked;
    k->transpose = heads || dot ? "none" : rows && fc->tile_rows ? "tile" : "strided";
    k->tile_rows = rows ? fc->tile_rows : 0;
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
