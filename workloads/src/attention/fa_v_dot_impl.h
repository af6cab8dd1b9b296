/* fa-v, dot regime: vectors over D, no K^T copy. Included once per LMUL by fa_v_impl.h.
 *
 * Where no K^T copy is reused (decode, above all MHA decode, where each kv head serves one
 * query head) the copy's strided stores cost more than they save. This regime reads K rows
 * as they lie (unit-stride, D elements): a score is an elementwise product and one
 * vfredusum; the reductions of UK heads are issued before any result is read, so their
 * latencies overlap. When D fits one register group, a token's key blocks are outermost
 * and a block's scores are taken position by position for all heads, so K streams through
 * in memory order (the L1D prefetcher follows it; head by head, positions are kv_heads x D
 * apart and MHA decode ran 3.3x slower); then each head's block goes through the
 * vectorised online softmax over keys and acc += p_j V_j over D, acc kept in O between
 * blocks. No vsetvl changes inside the key loop (unlike ggml-vec) and no scalar exp. */

#if MB == 8
#define UK 4
#define REPK(X) X(0) X(1) X(2) X(3)
#else
#define UK 8
#define REPK(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#endif

/* The scale multiplies each reduced score as a scalar: with q pre-scaled instead, clang turns
 * vfmv.f.s + fsw into a vse32 at vl = 1, and the vsetivli that needs flushes Minor's
 * pipeline (GEM5_NOTES: it mispredicts every time) twice per group of keys. */
/* Scores of keys [j0, j1) for the query row q (D <= VLMAX: q in one register). */
static inline void FN(fav_dot_scores)(const float *kbase, size_t kv_row, VF q, float scale,
                                      size_t D, int j0, int j1, float *sc) {
    const vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, __riscv_vsetvlmax_e32m1());
    int j = j0;
    for (; j + UK <= j1; j += UK) {
#define RED(k)                                                                       \
    const vfloat32m1_t r##k = __riscv_vfredusum(                                     \
        __riscv_vfmul(q, VLE(kbase + (size_t)(j + (k)) * kv_row, D), D), z, D);
        REPK(RED)
#undef RED
#define PUT(k) sc[j - j0 + (k)] = __riscv_vfmv_f(r##k) * scale;
        REPK(PUT)
#undef PUT
    }
    for (; j < j1; j++)
        sc[j - j0] = __riscv_vfmv_f(__riscv_vfredusum(
            __riscv_vfmul(q, VLE(kbase + (size_t)j * kv_row, D), D), z, D)) * scale;
}

/* Scores when D > VLMAX: strips of D accumulate into one vector, reduced once per key. */
static void FN(fav_dot_scores_wide)(const float *kbase, size_t kv_row, const float *q,
                                    float scale, int D, int j0, int j1, float *sc) {
    const vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, __riscv_vsetvlmax_e32m1());
    const size_t vlm = SETVLMAX();
    for (int j = j0; j < j1; j++) {
        const float *kr = kbase + (size_t)j * kv_row;
        VF acc = VFMV(0.0f, vlm);
        for (int d = 0; d < D;) {
            const size_t vl = SETVL((size_t)(D - d));
            acc = __riscv_vfmacc_tu(acc, VLE(q + d, vl), VLE(kr + d, vl), vl);
            d += (int)vl;
        }
        sc[j - j0] = __riscv_vfmv_f(__riscv_vfredusum(acc, z, vlm)) * scale;
    }
}

/* The online softmax of one row over a block of n scores, vectorised across its keys:
 * the scores become exp(s - new max) in place, the running max *m and sum *l are updated,
 * and the factor the accumulator is rescaled by is returned (0 for the first block). */
static inline float FN(fav_dot_softmax)(float *sc, int n, int first, float *m, float *l) {
    float mb = -INFINITY;
    for (int j = 0; j < n;) {
        const size_t vl = SETVL((size_t)(n - j));
        mb = FN(hmax)(VLE(sc + j, vl), mb, vl);
        j += (int)vl;
    }
    const float mnew = *m > mb ? *m : mb;
    float sum = 0.0f;
    for (int j = 0; j < n;) {
        const size_t vl = SETVL((size_t)(n - j));
        const VF e = FN(vexp)(__riscv_vfsub(VLE(sc + j, vl), mnew, vl), vl);
        __riscv_vse32(sc + j, e, vl);
        sum += FN(hsum)(e, vl);
        j += (int)vl;
    }
    const float alpha = first ? 0.0f : expf(*m - mnew);
    *l = *l * alpha + sum;
    *m = mnew;
    return alpha;
}

/* One row (token i, head h): every key block, online softmax, output. fav_dot calls it
 * only when D exceeds VLMAX; its narrow branch (and fav_dot_scores) is no longer reached
 * and goes with the next change to fa-v's binary (removing it now would re-id every kept
 * fa-v run for no change in what runs). */
__attribute__((noinline)) static void FN(fav_dot_row)(const fav_ctx *c, int i, int h) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const int BC = c->t.block_c, end = attn_kv_end(p, i);
    const size_t kv_row = (size_t)p->kv_heads * D;
    const float *kbase = p->k + (size_t)(h / group) * D, *vbase = p->v + (size_t)(h / group) * D;
    const float *qrow = p->q + ((size_t)i * H + h) * D;
    float *orow = p->o + ((size_t)i * H + h) * D, *sc = c->sc;
    const int narrow = (size_t)D <= (size_t)c->vlmax;
    const size_t vd = narrow ? SETVL((size_t)D) : 0;
    VF q = VFMV(0.0f, SETVLMAX());
    if (narrow) q = VLE(qrow, vd);
    VF acc = q; /* the accumulator of a narrow row; wide rows keep it in O */
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < end; j0 += BC) {
        const int j1 = j0 + BC < end ? j0 + BC : end, n = j1 - j0;
        if (narrow) FN(fav_dot_scores)(kbase, kv_row, q, p->scale, vd, j0, j1, sc);
        else FN(fav_dot_scores_wide)(kbase, kv_row, qrow, p->scale, D, j0, j1, sc);
        const float alpha = FN(fav_dot_softmax)(sc, n, j0 == 0, &m, &l);
        /* acc = acc * alpha + sum_j p_j V_j, over D */
        if (narrow) {
            acc = j0 == 0 ? VFMV(0.0f, vd) : __riscv_vfmul(acc, alpha, vd);
            for (int j = j0; j < j1; j++)
                acc = __riscv_vfmacc(acc, sc[j - j0], VLE(vbase + (size_t)j * kv_row, vd), vd);
        } else {
            for (int d = 0; d < D;) {
                const size_t vl = SETVL((size_t)(D - d));
                VF a = j0 == 0 ? VFMV(0.0f, vl) : __riscv_vfmul(VLE(orow + d, vl), alpha, vl);
                for (int j = j0; j < j1; j++)
                    a = __riscv_vfmacc(a, sc[j - j0], VLE(vbase + (size_t)j * kv_row + d, vl), vl);
                __riscv_vse32(orow + d, a, vl);
                d += (int)vl;
            }
        }
    }
    const float inv = 1.0f / l;
    if (narrow) {
        __riscv_vse32(orow, __riscv_vfmul(acc, inv, vd), vd);
    } else {
        for (int d = 0; d < D;) {
            const size_t vl = SETVL((size_t)(D - d));
            __riscv_vse32(orow + d, __riscv_vfmul(VLE(orow + d, vl), inv, vl), vl);
            d += (int)vl;
        }
    }
}

/* Scores of every head for keys [j0, j1), position by position: a position's K rows of all
 * kv heads lie together, so K is read in memory order, UK heads' loads at a time. */
static inline void FN(fav_dot_scores_all)(const fav_ctx *c, const float *qtok, size_t vd,
                                          int j0, int j1, float *sc) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, G = p->heads / p->kv_heads, BC = c->t.block_c;
    const size_t kv_row = (size_t)p->kv_heads * D;
    const vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, __riscv_vsetvlmax_e32m1());
    const float scale = p->scale;
    for (int j = j0; j < j1; j++) {
        const float *krow = p->k + (size_t)j * kv_row;
        float *s = sc + (j - j0);
        int h = 0;
        for (; h + UK <= H; h += UK) {
#define RED(k)                                                                            \
    const vfloat32m1_t r##k = __riscv_vfredusum(                                          \
        __riscv_vfmul(VLE(qtok + (size_t)(h + (k)) * D, vd),                              \
                      VLE(krow + (size_t)((h + (k)) / G) * D, vd), vd), z, vd);
            REPK(RED)
#undef RED
#define PUT(k) s[(size_t)(h + (k)) * BC] = __riscv_vfmv_f(r##k) * scale;
            REPK(PUT)
#undef PUT
        }
        for (; h < H; h++)
            s[(size_t)h * BC] = __riscv_vfmv_f(__riscv_vfredusum(
                __riscv_vfmul(VLE(qtok + (size_t)h * D, vd),
                              VLE(krow + (size_t)(h / G) * D, vd), vd), z, vd)) * scale;
    }
}

/* One token, D <= VLMAX: key blocks outermost, every head's scores of a block first (K in
 * memory order), then per head the block's softmax and acc += p_j V_j with acc in O. */
static void FN(fav_dot_token)(const fav_ctx *c, int i) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, G = p->heads / p->kv_heads;
    const int BC = c->t.block_c, end = attn_kv_end(p, i);
    const size_t kv_row = (size_t)p->kv_heads * D, vd = SETVL((size_t)D);
    const float *qtok = p->q + (size_t)i * H * D;
    float *otok = p->o + (size_t)i * H * D, *m = c->m, *l = c->s;
    for (int h = 0; h < H; h++) m[h] = -INFINITY, l[h] = 0.0f;
    for (int j0 = 0; j0 < end; j0 += BC) {
        const int j1 = j0 + BC < end ? j0 + BC : end, n = j1 - j0;
        FN(fav_dot_scores_all)(c, qtok, vd, j0, j1, c->sc);
        for (int h = 0; h < H; h++) {
            float *sc = c->sc + (size_t)h * BC, *orow = otok + (size_t)h * D;
            const float *vbase = p->v + (size_t)(h / G) * D;
            const float alpha = FN(fav_dot_softmax)(sc, n, j0 == 0, m + h, l + h);
            VF acc = j0 == 0 ? VFMV(0.0f, vd) : __riscv_vfmul(VLE(orow, vd), alpha, vd);
            for (int j = j0; j < j1; j++)
                acc = __riscv_vfmacc(acc, sc[j - j0], VLE(vbase + (size_t)j * kv_row, vd), vd);
            __riscv_vse32(orow, acc, vd);
        }
    }
    for (int h = 0; h < H; h++) {
        float *orow = otok + (size_t)h * D;
        __riscv_vse32(orow, __riscv_vfmul(VLE(orow, vd), 1.0f / l[h], vd), vd);
    }
}

static void FN(fav_dot)(const fav_ctx *c) {
    if ((size_t)c->p->head_dim <= (size_t)c->vlmax) {
        for (int i = 0; i < c->p->n_q; i++) FN(fav_dot_token)(c, i);
        return;
    }
    for (int i = 0; i < c->p->n_q; i++)
        for (int h = 0; h < c->p->heads; h++) FN(fav_dot_row)(c, i, h);
}

#undef UK
#undef REPK
