/* fa-v, rows regime: vectors span query rows. Included once per LMUL by fa_v_impl.h.
 *
 * The rows of one kv head g are its (token, query head) pairs, token-major: row t*G + u is
 * token t, head g*G + u. A strip of up to VLMAX rows shares every K and V row, so both
 * GEMMs of attention run with vl = the strip's length whatever D and the number of keys:
 *   scores   S[key][row] = sum_d K[key][d] * Q^T[d][row]  (vfmacc.vf: scalar k, vector q)
 *   softmax  elementwise over rows: running max, sum and rescale need no reduction
 *   output   O^T[d][row] += V[key][d] * P[key][row]       (vfmacc.vf: scalar v, vector p)
 * Q^T (scaled) and O^T live in scratch, [d][row]; a strip is transposed in and out once,
 * outside the key loop: by tiles in registers (fa_v_tile.h) where D allows, else with
 * strided stores and loads. RK keys' scores and RD dimensions of
 * O^T stay in registers, so one vector load feeds RK (or RD) multiply-adds. Causal masking
 * applies only to keys past the strip's first token, by a compare with each row's limit. */

#if MB == 8 /* LMUL 4: 8 register groups */
#define RK 4
#define RD 4
#elif MB == 16 /* LMUL 2 */
#define RK 8
#define RD 8
#else /* LMUL 1 */
#define RK 16
#define RD 16
#endif
#undef REPN
#if RK == 4
#define REPN(X) X(0) X(1) X(2) X(3)
#elif RK == 8
#define REPN(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#define REPN(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) \
    X(14) X(15)
#endif

/* A value no score reaches: exp of (it - max) underflows to the vector exp's floor (~1e-38),
 * and unlike -inf it gives no inf - inf when every key of a block is masked for a row. */
#define ROWS_MASKED (-1e30f)

/* Q^T of one strip, scaled: qt[d * VLM + r] = scale * Q[row r0 + r][d]; and each row's
 * key limit. */
__attribute__((noinline)) static void FN(fav_rows_in)(const fav_ctx *c, int g, int r0, int nr) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, G = H / p->kv_heads, TR = c->tile_rows;
    const size_t VLM = (size_t)c->strip;
    for (int r = 0; r < nr; r++) c->lim[r] = attn_kv_end(p, (r0 + r) / G);
    if (TR) {
        for (int rb = 0; rb < nr; rb += TR) {
            const int n = nr - rb < TR ? nr - rb : TR;
            fav_rows_copy(p, g, r0 + rb, n, (float *)p->q, c->tile, 1);
            fav_tile_fwd(c->tile, D, p->scale, c->qt + rb, VLM, n);
        }
        return;
    }
    for (int r = 0; r < nr; r++) {
        const int t = (r0 + r) / G, u = (r0 + r) % G;
        const float *q = p->q + ((size_t)t * H + (size_t)g * G + u) * D;
        for (int d = 0; d < D;) {
            const size_t vl = SETVL((size_t)(D - d));
            RVV_CAT(__riscv_vsse32_v_f32, LM)(c->qt + (size_t)d * VLM + r,
                                              (ptrdiff_t)(VLM * sizeof(float)),
                                              __riscv_vfmul(VLE(q + d, vl), p->scale, vl), vl);
            d += (int)vl;
        }
    }
}

/* O[row] = O^T[.][r] for the strip's rows (O^T is already divided by the row sums). */
__attribute__((noinline)) static void FN(fav_rows_out)(const fav_ctx *c, int g, int r0, int nr) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, G = H / p->kv_heads, TR = c->tile_rows;
    const size_t VLM = (size_t)c->strip;
    if (TR) {
        for (int rb = 0; rb < nr; rb += TR) {
            const int n = nr - rb < TR ? nr - rb : TR;
            fav_tile_bwd(c->acct + rb, VLM, n, D, c->tile);
            fav_rows_copy(p, g, r0 + rb, n, p->o, c->tile, 0);
        }
        return;
    }
    for (int r = 0; r < nr; r++) {
        const int t = (r0 + r) / G, u = (r0 + r) % G;
        float *o = p->o + ((size_t)t * H + (size_t)g * G + u) * D;
        for (int d = 0; d < D;) {
            const size_t vl = SETVL((size_t)(D - d));
            __riscv_vse32(o + d, RVV_CAT(__riscv_vlse32_v_f32, LM)(c->acct + (size_t)d * VLM + r,
                                                                  (ptrdiff_t)(VLM * sizeof(float)), vl),
                          vl);
            d += (int)vl;
        }
    }
}

/* One strip against keys [j0, j1): scores, online softmax, O^T update. */
__attribute__((noinline)) static void FN(fav_rows_blk)(const fav_ctx *c, int g, int nr,
                                                       int j0, int j1, int full, int first,
                                                       int last) {
    const attn_problem *p = c->p;
    const int D = p->head_dim;
    const size_t kv_row = (size_t)p->kv_heads * D, VLM = (size_t)c->strip;
    const size_t vl = SETVL((size_t)nr);
    const float *kg = p->k + (size_t)g * D, *vg = p->v + (size_t)g * D;
    float *pb = c->sc;
    VI lim = RVV_CAT(__riscv_vle32_v_i32, LM)(c->lim, vl);
    VF bm = VFMV(ROWS_MASKED, vl);

    /* 1. scores of RK keys at a time, one Q^T row load per d for all of them */
    for (int jk = j0; jk < j1; jk += RK) {
        const float *kr[RK];
        for (int k = 0; k < RK; k++) /* past j1: repeat the last key, its scores unused */
            kr[k] = kg + (size_t)(jk + k < j1 ? jk + k : j1 - 1) * kv_row;
#define ZERO(k) VF s##k = VFMV(0.0f, vl);
        REPN(ZERO)
#undef ZERO
        for (int d = 0; d < D; d++) {
            const VF qv = VLE(c->qt + (size_t)d * VLM, vl);
#define DOT(k) s##k = __riscv_vfmacc(s##k, kr[k][d], qv, vl);
            REPN(DOT)
#undef DOT
        }
#define SAVE(k)                                                                            \
    if (jk + (k) < j1) {                                                                   \
        if (jk + (k) >= full) /* causal: rows whose token ends before this key */          \
            s##k = __riscv_vfmerge(s##k, ROWS_MASKED, __riscv_vmsle(lim, jk + (k), vl), vl); \
        bm = __riscv_vfmax(bm, s##k, vl);                                                  \
        __riscv_vse32(pb + (size_t)(jk + (k) - j0) * VLM, s##k, vl);                      \
    }
        REPN(SAVE)
#undef SAVE
    }

    /* 2. online softmax, elementwise over the strip's rows */
    const VF mold = first ? VFMV(ROWS_MASKED, vl) : VLE(c->m, vl);
    const VF mnew = __riscv_vfmax(mold, bm, vl);
    const VF alpha = FN(vexp)(__riscv_vfsub(mold, mnew, vl), vl);
    VF lsum = VFMV(0.0f, vl);
    for (int j = j0; j < j1; j++) {
        float *pj = pb + (size_t)(j - j0) * VLM;
        const VF e = FN(vexp)(__riscv_vfsub(VLE(pj, vl), mnew, vl), vl);
        __riscv_vse32(pj, e, vl);
        lsum = __riscv_vfadd(lsum, e, vl);
    }
    const VF snew = first ? lsum : __riscv_vfmacc(lsum, alpha, VLE(c->s, vl), vl);
    __riscv_vse32(c->s, snew, vl);
    __riscv_vse32(c->m, mnew, vl);
    /* after the last key block O^T leaves divided by the row sums */
    const VF inv = last ? __riscv_vfrdiv(snew, 1.0f, vl) : snew;

    /* 3. O^T = O^T * alpha + sum_j V[j][d] P[j], RD dimensions in registers per pass */
    int d0 = 0;
    for (; d0 + RD <= D; d0 += RD) {
        float *at = c->acct + (size_t)d0 * VLM;
#define LOADACC(k) \
    VF a##k = first ? VFMV(0.0f, vl) : __riscv_vfmul(VLE(at + (k) * VLM, vl), alpha, vl);
        REPN(LOADACC)
#undef LOADACC
        for (int j = j0; j < j1; j++) {
            const VF pj = VLE(pb + (size_t)(j - j0) * VLM, vl);
            const float *vr = vg + (size_t)j * kv_row + d0;
#define MAC(k) a##k = __riscv_vfmacc(a##k, vr[k], pj, vl);
            REPN(MAC)
#undef MAC
        }
#define STORE(k) __riscv_vse32(at + (k) * VLM, last ? __riscv_vfmul(a##k, inv, vl) : a##k, vl);
        REPN(STORE)
#undef STORE
    }
    for (; d0 < D; d0++) { /* D not a multiple of RD */
        float *at = c->acct + (size_t)d0 * VLM;
        VF a = first ? VFMV(0.0f, vl) : __riscv_vfmul(VLE(at, vl), alpha, vl);
        for (int j = j0; j < j1; j++)
            a = __riscv_vfmacc(a, vg[(size_t)j * kv_row + d0], VLE(pb + (size_t)(j - j0) * VLM, vl), vl);
        __riscv_vse32(at, last ? __riscv_vfmul(a, inv, vl) : a, vl);
    }
}

static void FN(fav_rows)(const fav_ctx *c) {
    const attn_problem *p = c->p;
    const int G = p->heads / p->kv_heads, nrows = p->n_q * G, VLM = c->strip;
    const int BK = c->t.block_c;
    for (int g = 0; g < p->kv_heads; g++) {
        for (int r0 = 0; r0 < nrows; r0 += VLM) {
            const int nr = nrows - r0 < VLM ? nrows - r0 : VLM;
            FN(fav_rows_in)(c, g, r0, nr);
            /* keys every row of the strip sees, and keys its last row sees */
            const int full = attn_kv_end(p, r0 / G), end = attn_kv_end(p, (r0 + nr - 1) / G);
            for (int j0 = 0; j0 < end; j0 += BK) {
                const int j1 = j0 + BK < end ? j0 + BK : end;
                FN(fav_rows_blk)(c, g, nr, j0, j1, full, j0 == 0, j1 == end);
            }
            FN(fav_rows_out)(c, g, r0, nr);
        }
    }
}

#undef RK
#undef RD
#undef REPN
#undef ROWS_MASKED
