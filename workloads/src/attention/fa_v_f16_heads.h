/* fa-v in fp16, the heads regime: included once by fa_v_f16.c (one translation unit, as
 * fp32's regimes are). */
/* ------------------------------------------------------------- heads (decode MHA) ----
 * fp32's heads regime with an e16 m1 register: E = VLMAX(e16 m1) elements hold P = E / D
 * heads (E >= D) or an E-part of one head. Products q k by vfwmul (e16 -> e32 m2), the
 * reduction tree's unzip-adds on e32 m2 pairs (read as e64 m4, narrowed by vnsrl), scores
 * [key][head] in fp32; softmax in fp32 over the block; P V in fp16 per block (P expanded
 * over each head's segment by vrgather at e16) into the fp32 accumulator. */
static inline vfloat32m2_t uzadd2(vfloat32m2_t a, vfloat32m2_t b, size_t e) {
    const vuint64m4_t w = __riscv_vreinterpret_v_u32m4_u64m4(
        __riscv_vreinterpret_v_f32m4_u32m4(__riscv_vcreate_v_f32m2_f32m4(a, b)));
    return __riscv_vfadd(__riscv_vreinterpret_v_u32m2_f32m2(__riscv_vnsrl_wx_u32m2(w, 0, e)),
                         __riscv_vreinterpret_v_u32m2_f32m2(__riscv_vnsrl_wx_u32m2(w, 32, e)), e);
}

/* one kv row (D halves) replicated to len elements by vslideup doubling */
static inline vfloat16m1_t rep16(const h16 *row, int D, size_t len) {
    vfloat16m1_t t = __riscv_vle16_v_f16m1(row, (size_t)D);
    for (size_t cur = (size_t)D; cur < len;) {
        const size_t nx = 2 * cur < len ? 2 * cur : len;
        t = __riscv_vslideup_tu(t, t, cur, nx);
        cur = nx;
    }
    return t;
}

/* K or V of one position laid out like the query heads of register r */
static inline vfloat16m1_t kv16(const fav16_ctx *c, const h16 *row, int r, size_t vl) {
    const int D = c->pf->p->head_dim;
    if (c->pf->p->kv_heads == c->pf->p->heads) return __riscv_vle16_v_f16m1(row + (size_t)r * c->pack * D, vl);
    const int *sg = c->seg + 2 * c->seg_start[r], nseg = c->seg_start[r + 1] - c->seg_start[r];
    vfloat16m1_t out = rep16(row + (size_t)sg[0] * D, D, (size_t)sg[1] * D);
    size_t off = (size_t)sg[1] * D;
    for (int s = 1; s < nseg; s++) {
        const size_t len = (size_t)sg[2 * s + 1] * D;
        out = __riscv_vslideup_tu(out, rep16(row + (size_t)sg[2 * s] * D, D, len), off, off + len);
        off += len;
    }
    return out;
}

#define TSLOT(k, OP)                                                                         \
    switch (k) {                                                                             \
    case 0: OP(s0); break;                                                                   \
    case 1: OP(s1); break;                                                                   \
    case 2: OP(s2); break;                                                                   \
    case 3: OP(s3); break;                                                                   \
    case 4: OP(s4); break;                                                                   \
    case 5: OP(s5); break;                                                                   \
    case 6: OP(s6); break;                                                                   \
    case 7: OP(s7); break;                                                                   \
    default: OP(s8); break;                                                                  \
    }
#define TCOMBINE(slot) x_ = uzadd2(slot, x_, e)
#define TSTORE(slot) slot = x_
#define TPUSH(x)                                                                             \
    do {                                                                                     \
        vfloat32m2_t x_ = (x);                                                               \
        int k_ = 0;                                                                          \
        while (k_ < levels && (n >> k_) & 1u) {                                              \
            TSLOT(k_, TCOMBINE)                                                              \
            k_++;                                                                            \
        }                                                                                    \
        if (k_ == levels) __riscv_vse32_v_f32m2(c->sc + (size_t)(n >> levels) * e, x_, e);   \
        else TSLOT(k_, TSTORE)                                                               \
        n++;                                                                                 \
    } while (0)

__attribute__((noinline)) static void heads_scores(const fav16_ctx *c, int j0, int nk) {
    const attn_problem *p = c->pf->p;
    const int D = p->head_dim, Hh = p->heads, G = Hh / p->kv_heads, B = c->hb;
    const size_t e = __riscv_vsetvlmax_e16m1(), kv_row = (size_t)p->kv_heads * D;
    const int levels = c->tree_levels;
    const vfloat32m2_t zero = __riscv_vfmv_v_f_f32m2(0.0f, e);
    vfloat32m2_t s0 = zero, s1 = zero, s2 = zero, s3 = zero, s4 = zero, s5 = zero, s6 = zero,
                 s7 = zero, s8 = zero;
    unsigned n = 0;
    const h16 *qs = H(c->qs16);
    if ((int)e >= D) {
        const vfloat16m1_t hz = __riscv_vfmv_v_f_f16m1(0, e);
        for (int j = j0; j < j0 + B; j++) {
            const h16 *krow = H(c->pf->k) + (size_t)j * kv_row;
            vfloat16m1_t kk = hz;
            for (int r = 0; r < c->n_regs; r++) {
                if (j >= nk) {
                    TPUSH(zero);
                    continue;
                }
                if (r == 0 || !c->same_prev[r]) kk = kv16(c, krow, r, (size_t)c->pk_vl[r]);
                TPUSH(__riscv_vfwmul_vv_f32m2(__riscv_vle16_v_f16m1(qs + (size_t)r * e, e), kk, e));
            }
        }
        return;
    }
    const int parts = D / (int)e;
    for (int j = j0; j < j0 + B; j++) {
        const h16 *krow = H(c->pf->k) + (size_t)j * kv_row;
        for (int h = 0; h < Hh; h++) {
            if (j >= nk) {
                TPUSH(zero);
                continue;
            }
            const h16 *kr = krow + (size_t)(h / G) * D, *qr = qs + (size_t)h * D;
            vfloat32m2_t x = __riscv_vfwmul_vv_f32m2(__riscv_vle16_v_f16m1(qr, e),
                                                     __riscv_vle16_v_f16m1(kr, e), e);
            for (int q = 1; q < parts; q++)
                x = __riscv_vfwmacc_vv_f32m2(x, __riscv_vle16_v_f16m1(qr + q * e, e),
                                             __riscv_vle16_v_f16m1(kr + q * e, e), e);
            TPUSH(x);
        }
    }
}
#undef TSLOT
#undef TCOMBINE
#undef TSTORE
#undef TPUSH

/* softmax of one block's scores ([key][head], scaled here), in fp32; P to c->pr in fp16 */
__attribute__((noinline)) static void heads_softmax(const fav16_ctx *c, int nb, int first, int last) {
    const int HP = c->hp, B = c->hb;
    const float scale = c->pf->p->scale;
    for (int h = 0; h < HP;) {
        const size_t vl = __riscv_vsetvl_e32m4((size_t)(HP - h));
        vfloat32m4_t mb = __riscv_vfmv_v_f_f32m4(-1e30f, vl);
        for (int j = 0; j < nb; j++)
            mb = __riscv_vfmax(mb, __riscv_vle32_v_f32m4(c->sc + (size_t)j * HP + h, vl), vl);
        mb = __riscv_vfmul(mb, scale, vl);
        const vfloat32m4_t mold = first ? __riscv_vfmv_v_f_f32m4(-1e30f, vl)
                                        : __riscv_vle32_v_f32m4(c->m + h, vl);
        const vfloat32m4_t mnew = __riscv_vfmax(mold, mb, vl);
        __riscv_vse32(c->alpha + h, vexp_m4(__riscv_vfsub(mold, mnew, vl), vl), vl);
        __riscv_vse32(c->m + h, mnew, vl);
        for (int j = 0; j < B; j++)
            __riscv_vse32(c->mrep + (size_t)j * HP + h, j < nb ? mnew : __riscv_vfmv_v_f_f32m4(1e30f, vl), vl);
        h += (int)vl;
    }
    const size_t total = (size_t)B * HP;
    for (size_t x = 0; x < total;) {
        const size_t vl = __riscv_vsetvl_e32m4(total - x);
        const vfloat32m4_t ex = vexp_m4(
            __riscv_vfsub(__riscv_vfmul(__riscv_vle32_v_f32m4(c->sc + x, vl), scale, vl),
                          __riscv_vle32_v_f32m4(c->mrep + x, vl), vl), vl);
        __riscv_vse32(c->sc + x, ex, vl);
        __riscv_vse16_v_f16m2(HW(c->pr) + x, __riscv_vfncvt_f_f_w_f16m2(ex, vl), vl);
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

/* acc (fp32, [head][D]) = acc * alpha + the block's P V (fp16); to O after the last block */
static inline void heads_acc(float *ad, attn_f16 *o, vfloat16m1_t a, vfloat32m2_t al,
                             vfloat32m2_t inv, int first, int last, size_t e, size_t n_out) {
    const vfloat32m2_t w = first ? __riscv_vfwcvt_f_f_v_f32m2(a, e)
                                 : __riscv_vfwadd_wv_f32m2(
                                       __riscv_vfmul_vv_f32m2(__riscv_vle32_v_f32m2(ad, e), al, e), a, e);
    if (last)
        __riscv_vse16_v_f16m1(HW(o), __riscv_vfncvt_f_f_w_f16m1(__riscv_vfmul_vv_f32m2(w, inv, e), e), n_out);
    else
        __riscv_vse32_v_f32m2(ad, w, e);
}

__attribute__((noinline)) static void heads_pv(const fav16_ctx *c, int i, int j0, int nb,
                                               int first, int last) {
    const attn_problem *p = c->pf->p;
    const int D = p->head_dim, Hh = p->heads, G = Hh / p->kv_heads, HP = c->hp;
    const size_t e = __riscv_vsetvlmax_e16m1(), kv_row = (size_t)p->kv_heads * D;
    const h16 *pr = H(c->pr);
    if ((int)e >= D) {
        const int P = c->pack;
        const vuint16m1_t seg16 = __riscv_vsrl(__riscv_vid_v_u16m1(e), (size_t)c->lg_d, e);
        const vuint32m2_t seg32 = __riscv_vsrl(__riscv_vid_v_u32m2(e), (size_t)c->lg_d, e);
        for (int r = 0; r < c->n_regs; r++) {
            vfloat16m1_t a = __riscv_vfmv_v_f_f16m1(0, e);
            for (int j = 0; j < nb; j++) {
                const vfloat16m1_t vv = kv16(c, H(c->pf->v) + (size_t)(j0 + j) * kv_row, r, (size_t)c->pk_vl[r]);
                const vfloat16m1_t pe = __riscv_vrgather_vv_f16m1(
                    __riscv_vle16_v_f16m1(pr + (size_t)j * HP + (size_t)r * P, (size_t)P), seg16, e);
                a = __riscv_vfmacc_vv_f16m1(a, pe, vv, e);
            }
            const vfloat32m2_t al = __riscv_vrgather_vv_f32m2(
                __riscv_vle32_v_f32m2(c->alpha + r * P, (size_t)P), seg32, e);
            const vfloat32m2_t inv = last ? __riscv_vrgather_vv_f32m2(
                                                __riscv_vle32_v_f32m2(c->inv + r * P, (size_t)P), seg32, e)
                                          : al;
            heads_acc(c->acc + (size_t)r * e, c->pf->o + ((size_t)i * Hh + (size_t)r * P) * D, a, al,
                      inv, first, last, e, (size_t)c->pk_vl[r]);
        }
        return;
    }
    for (int h = 0; h < Hh; h++) { /* E < D: a scalar weight per head and key */
        const vfloat32m2_t al = __riscv_vfmv_v_f_f32m2(c->alpha[h], e);
        const vfloat32m2_t inv = __riscv_vfmv_v_f_f32m2(last ? c->inv[h] : 1.0f, e);
        const h16 *vh = H(c->pf->v) + (size_t)j0 * kv_row + (size_t)(h / G) * D;
        for (int d = 0; d < D; d += (int)e) {
            vfloat16m1_t a = __riscv_vfmv_v_f_f16m1(0, e);
            for (int j = 0; j < nb; j++)
                a = __riscv_vfmacc_vf_f16m1(a, pr[(size_t)j * HP + h],
                                            __riscv_vle16_v_f16m1(vh + (size_t)j * kv_row + d, e), e);
            heads_acc(c->acc + (size_t)h * D + d, c->pf->o + ((size_t)i * Hh + h) * D + d, a, al, inv,
                      first, last, e, e);
        }
    }
}

static void fav16_heads(const fav16_ctx *c) {
    const attn_problem *p = c->pf->p;
    const size_t hd = (size_t)p->heads * p->head_dim;
    for (int i = 0; i < p->n_q; i++) {
        const h16 *qi = H(c->q16) + (size_t)i * hd;
        for (size_t x = 0; x < hd;) { /* this token's q (padding heads stay 0) */
            const size_t vl = __riscv_vsetvl_e16m4(hd - x);
            __riscv_vse16_v_f16m4(HW(c->qs16) + x, __riscv_vle16_v_f16m4(qi + x, vl), vl);
            x += vl;
        }
        const int nk = attn_kv_end(p, i);
        for (int j0 = 0; j0 < nk; j0 += c->hb) {
            const int nb = nk - j0 < c->hb ? nk - j0 : c->hb, last = j0 + nb == nk;
            heads_scores(c, j0, nk);
            heads_softmax(c, nb, j0 == 0, last);
            heads_pv(c, i, j0, nb, j0 == 0, last);
        }
    }
}
