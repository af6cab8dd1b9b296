/* fa-v, heads regime: vectors span (head, d), the scores come out of a reduction tree.
 *
 * Made for decode, where a token has only its heads to fill a vector. A register of E =
 * VLMAX (e32, LMUL 1) elements holds P = E / D consecutive heads of q when E >= D (their
 * K rows laid out alike: one unit-stride load for MHA, one kv row replicated by vslideup
 * for GQA, as in the packed regime), or a D / E part of one head. The elementwise products
 * q . k of one key (vfmul, or vfmacc over the D / E parts) are then reduced to one score
 * per head by a binary tree of "unzip-adds": two registers read as one e64 group, narrowed
 * to their even and their odd elements (vnsrl by 0 and 32) and added, give the pairwise
 * sums of both. log2(min(D, E)) levels turn a head's segment into one number; registers
 * of consecutive heads and keys combine in order, so the tree emits the key block's scores
 * as [key][head], E at a time. No per-key reduction latency, no broadcast, no K^T copy.
 * The online softmax then runs on the whole block (block maximum, one vector exp over the
 * block's scores, one rescale), and O += P V with P expanded over each head's segment by
 * vrgather (E >= D) or as a scalar (E < D). */

/* Pairwise sums of the 2E elements of (a, b), in order: E elements. */
static inline vfloat32m1_t fav_uzadd(vfloat32m1_t a, vfloat32m1_t b, size_t e) {
    const vuint64m2_t w = __riscv_vreinterpret_v_u32m2_u64m2(
        __riscv_vreinterpret_v_f32m2_u32m2(__riscv_vcreate_v_f32m1_f32m2(a, b)));
    return __riscv_vfadd(__riscv_vreinterpret_v_u32m1_f32m1(__riscv_vnsrl_wx_u32m1(w, 0, e)),
                         __riscv_vreinterpret_v_u32m1_f32m1(__riscv_vnsrl_wx_u32m1(w, 32, e)),
                         e);
}

/* The reduction tree: one slot per level, s0 .. s6 (vector values cannot live in arrays
 * or structs). The n-th register pushed combines with the slots of the levels where n has
 * a one bit (older first), like a binary counter's carry; after `levels` combinations it
 * is emitted, E scores in order. */
#define TREE_SLOT(k, OP)                                                                     \
    switch (k) {                                                                             \
    case 0: OP(s0); break;                                                                   \
    case 1: OP(s1); break;                                                                   \
    case 2: OP(s2); break;                                                                   \
    case 3: OP(s3); break;                                                                   \
    case 4: OP(s4); break;                                                                   \
    case 5: OP(s5); break;                                                                   \
    default: OP(s6); break;                                                                  \
    }
#define TREE_COMBINE(slot) x_ = fav_uzadd(slot, x_, e)
#define TREE_STORE(slot) slot = x_
#define TREE_PUSH(x)                                                                         \
    do {                                                                                     \
        vfloat32m1_t x_ = (x);                                                               \
        int k_ = 0;                                                                          \
        while (k_ < levels && (n >> k_) & 1u) {                                              \
            TREE_SLOT(k_, TREE_COMBINE)                                                      \
            k_++;                                                                            \
        }                                                                                    \
        if (k_ == levels) __riscv_vse32(c->sc + (size_t)(n >> levels) * e, x_, e);          \
        else TREE_SLOT(k_, TREE_STORE)                                                       \
        n++;                                                                                 \
    } while (0)

/* Scores of keys [j0, j0 + c->hb) (keys from nk on are padding: zero products) into
 * c->sc as [key][head], heads padded to c->hp. */
__attribute__((noinline)) static void fav_heads_scores(const fav_ctx *c, int j0, int nk) {
    const attn_problem *p = c->p;
    const int D = p->head_dim, H = p->heads, G = H / p->kv_heads, B = c->hb;
    const size_t e = __riscv_vsetvlmax_e32m1(), kv_row = (size_t)p->kv_heads * D;
    const int levels = c->tree_levels;
    const vfloat32m1_t zero = __riscv_vfmv_v_f_f32m1(0.0f, e);
    vfloat32m1_t s0 = zero, s1 = zero, s2 = zero, s3 = zero, s4 = zero, s5 = zero, s6 = zero;
    unsigned n = 0;
    if ((int)e >= D) { /* a register holds P = E/D heads */
        const int regs = c->hp * D / (int)e;
        for (int j = j0; j < j0 + B; j++) {
            const float *krow = p->k + (size_t)j * kv_row;
            vfloat32m1_t kk = zero;
            for (int r = 0; r < regs; r++) {
                if (j >= nk) {
                    TREE_PUSH(zero);
                    continue;
                }
                if (r == 0 || !c->same_prev[r]) kk = fav_kv_m1(c, krow, r, c->pk_vl[r]);
                const vfloat32m1_t x = __riscv_vfmul(__riscv_vle32_v_f32m1(c->qs + r * e, e), kk, e);
                TREE_PUSH(x);
            }
        }
        return;
    }
    /* E < D: a head spans D/E registers, summed by vfmacc before the tree; the G heads of a
     * kv head share each K part */
    const int parts = D / (int)e;
    for (int j = j0; j < j0 + B; j++) {
        const float *krow = p->k + (size_t)j * kv_row;
        for (int h = 0; h < H; h++) {
            if (j >= nk) {
                TREE_PUSH(zero);
                continue;
            }
            const float *kr = krow + (size_t)(h / G) * D, *qr = c->qs + (size_t)h * D;
            vfloat32m1_t x = __riscv_vfmul(__riscv_vle32_v_f32m1(qr, e),
                                           __riscv_vle32_v_f32m1(kr, e), e);
            for (int q = 1; q < parts; q++)
                x = __riscv_vfmacc(x, __riscv_vle32_v_f32m1(qr + q * e, e),
                                   __riscv_vle32_v_f32m1(kr + q * e, e), e);
            TREE_PUSH(x);
        }
    }
}
#undef TREE_SLOT
#undef TREE_COMBINE
#undef TREE_STORE
#undef TREE_PUSH

/* Online softmax over one key block's scores (nb valid keys of c->hb): block maximum per
 * head, one vector exp over the whole block against the new maximum repeated per key (the
 * padding keys get a maximum no score reaches, so their weight is 0), row sums. c->alpha
 * gets each head's rescale factor. */
__attribute__((noinline)) static void fav_heads_softmax(const fav_ctx *c, int nb, int first,
                                                        int last) {
    const int HP = c->hp, B = c->hb;
    for (int h = 0; h < HP;) {
        const size_t vl = __riscv_vsetvl_e32m4((size_t)(HP - h));
        vfloat32m4_t mb = __riscv_vfmv_v_f_f32m4(-1e30f, vl);
        for (int j = 0; j < nb; j++)
            mb = __riscv_vfmax(mb, __riscv_vle32_v_f32m4(c->sc + (size_t)j * HP + h, vl), vl);
        const vfloat32m4_t mold = first ? __riscv_vfmv_v_f_f32m4(-1e30f, vl)
                                        : __riscv_vle32_v_f32m4(c->m + h, vl);
        const vfloat32m4_t mnew = __riscv_vfmax(mold, mb, vl);
        __riscv_vse32(c->alpha + h, vexp_m4(__riscv_vfsub(mold, mnew, vl), vl), vl);
        __riscv_vse32(c->m + h, mnew, vl);
        for (int j = 0; j < B; j++) /* the maximum, once per key */
            __riscv_vse32(c->mrep + (size_t)j * HP + h,
                          j < nb ? mnew : __riscv_vfmv_v_f_f32m4(1e30f, vl), vl);
        h += (int)vl;
    }
    const size_t total = (size_t)B * HP;
    for (size_t x = 0; x < total;) {
        const size_t vl = __riscv_vsetvl_e32m4(total - x);
        __riscv_vse32(c->sc + x, vexp_m4(__riscv_vfsub(__riscv_vle32_v_f32m4(c->sc + x, vl),
                                                       __riscv_vle32_v_f32m4(c->mrep + x, vl), vl),
                                         vl), vl);
        x += vl;
    }
    for (int h = 0; h < HP;) {
        const size_t vl = __riscv_vsetvl_e32m4((size_t)(HP - h));
        vfloat32m4_t l = first ? __riscv_vfmv_v_f_f32m4(0.0f, vl)
                               : __riscv_vfmul(__riscv_vle32_v_f32m4(c->s + h, vl),
                                               __riscv_vle32_v_f32m4(c->alpha + h, vl), vl);
        for (int j = 0; j < nb; j++)
            l = __riscv_vfadd(l, __riscv_vle32_v_f32m4(c->sc + (size_t)j * HP + h, vl), vl);
        __riscv_vse32(c->s + h, l, vl);
        if (last) __riscv_vse32(c->inv + h, __riscv_vfrdiv(l, 1.0f, vl), vl);
        h += (int)vl;
    }
}

/* acc = acc * alpha + sum_j P[j] V[j] over the block's nb keys; acc is [head][D] (heads
 * padded to c->hp). After the last block the accumulator goes to token i's O divided by
 * the row sums (c->inv, from fav_heads_softmax). */
__attribute__((noinline)) static void fav_heads_pv(const fav_ctx *c, int i, int j0, int nb,
                                                   int first, int last) {
    const attn_problem *p = c->p;
    const int D = p->head_dim, H = p->heads, G = H / p->kv_heads, HP = c->hp;
    const size_t e = __riscv_vsetvlmax_e32m1(), kv_row = (size_t)p->kv_heads * D;
    if ((int)e >= D) { /* register r: heads r*P .. r*P + P - 1 */
        const int P = (int)e / D, regs = HP / P;
        const vuint32m1_t seg = __riscv_vsrl(__riscv_vid_v_u32m1(e), (size_t)c->lg_d, e);
        for (int r = 0; r < regs; r++) {
            float *ar = c->acc + (size_t)r * e;
            const vfloat32m1_t al = __riscv_vrgather(__riscv_vle32_v_f32m1(c->alpha + r * P, (size_t)P),
                                                     seg, e);
            vfloat32m1_t a = first ? __riscv_vfmv_v_f_f32m1(0.0f, e)
                                   : __riscv_vfmul(__riscv_vle32_v_f32m1(ar, e), al, e);
            for (int j = 0; j < nb; j++) {
                const vfloat32m1_t vv = fav_kv_m1(c, p->v + (size_t)(j0 + j) * kv_row, r, c->pk_vl[r]);
                const vfloat32m1_t pe = __riscv_vrgather(
                    __riscv_vle32_v_f32m1(c->sc + (size_t)j * HP + r * P, (size_t)P), seg, e);
                a = __riscv_vfmacc(a, pe, vv, e);
            }
            if (!last) {
                __riscv_vse32(ar, a, e);
                continue;
            }
            const vfloat32m1_t inv = __riscv_vrgather(
                __riscv_vle32_v_f32m1(c->inv + r * P, (size_t)P), seg, e);
            __riscv_vse32(p->o + ((size_t)i * H + (size_t)r * P) * D, __riscv_vfmul(a, inv, e),
                          (size_t)c->pk_vl[r]);
        }
        return;
    }
    for (int h = 0; h < H; h++) { /* E < D: a scalar weight per head and key */
        const float al = c->alpha[h], inv = c->inv[h];
        const float *vh = p->v + (size_t)j0 * kv_row + (size_t)(h / G) * D;
        for (int d = 0; d < D; d += (int)e) {
            float *ad = c->acc + (size_t)h * D + d;
            vfloat32m1_t a = first ? __riscv_vfmv_v_f_f32m1(0.0f, e)
                                   : __riscv_vfmul(__riscv_vle32_v_f32m1(ad, e), al, e);
            for (int j = 0; j < nb; j++)
                a = __riscv_vfmacc(a, c->sc[(size_t)j * HP + h],
                                   __riscv_vle32_v_f32m1(vh + (size_t)j * kv_row + d, e), e);
            if (last)
                __riscv_vse32(p->o + ((size_t)i * H + h) * D + d, __riscv_vfmul(a, inv, e), e);
            else
                __riscv_vse32(ad, a, e);
        }
    }
}

/* Every query token against its keys, one key block of c->hb keys at a time. */
static void fav_heads(const fav_ctx *c) {
    const attn_problem *p = c->p;
    const int D = p->head_dim, H = p->heads;
    for (int i = 0; i < p->n_q; i++) {
        const float *qi = p->q + (size_t)i * H * D;
        for (size_t x = 0, n = (size_t)H * D; x < n;) { /* q * scale (padding heads stay 0) */
            const size_t vl = __riscv_vsetvl_e32m4(n - x);
            __riscv_vse32(c->qs + x, __riscv_vfmul(__riscv_vle32_v_f32m4(qi + x, vl), p->scale, vl), vl);
            x += vl;
        }
        const int nk = attn_kv_end(p, i);
        for (int j0 = 0; j0 < nk; j0 += c->hb) {
            const int nb = nk - j0 < c->hb ? nk - j0 : c->hb;
            fav_heads_scores(c, j0, nk);
            const int last = j0 + nb == nk;
            fav_heads_softmax(c, nb, j0 == 0, last);
            fav_heads_pv(c, i, j0, nb, j0 == 0, last);
        }
    }
}
