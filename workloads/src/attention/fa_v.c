/* fa-v (fp32): FlashAttention-V. Two regimes: "blocked" (sequence blocking, scores
 * vectorised across keys from a transposed key block, heads innermost, unrolled over U heads
 * with GQA reuse; the default) and "packed" (--regime packed, when VLMAX > D and D divides
 * VLMAX: P = VLMAX/D heads per register, vectorised online softmax). See README.md. */
#if VLSCALE_VECTOR
#include <math.h>
#include <riscv_vector.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "attention/attn.h"

#define TILE_EW 32
#include "attention/fa_v_tile.h"

/* --transpose auto (fav_tiles): tiles in registers (fa_v_tile.h) from this VLMAX at e32,
 * LMUL 1 (4096 bit), and in the blocked regime only with this many kv heads. */
#define FAV_TILE_MIN_E 128
#define FAV_TILE_MIN_KV 8

/* Blocked regime: keys [c0, c1) of every kv head stored transposed, kt[(g*D + d)*BC + j-c0],
 * so that the scores of a strip of keys are unit-stride vector loads. Built once per key
 * block, reused by every query row and head of the row block. Where tiles pay, by tiles of
 * one kv head's keys; else each key row is read with unit-stride loads and written into its
 * K^T column with a strided store. gem5 splits a strided access into one micro-op per
 * element, still far cheaper than the scalar copy it replaced (load, store, address updates,
 * branch per element), which took half of fa-v's cycles in decode, where a copy is reused
 * only by the query heads of one kv head. Measured in gem5 (TinyLlama decode, L = 512, 512
 * bit, paper-fixed): scalar copy 1.62M cycles, strided loads of K columns 1.47M, strided
 * stores 1.10M; transposing one kv head at a time, just before its heads, 1.19M
 * (workloads/README.md). */
/* One key row (all kv heads, kv_row floats) into column `col` of a K^T block whose rows
 * are ld floats apart: unit-stride loads, one strided store (e32 m8) per chunk. */
static inline __attribute__((always_inline)) void fav_store_key_col(float *col, size_t ld,
                                                                    const float *krow,
                                                                    size_t kv_row) {
    const ptrdiff_t stride = (ptrdiff_t)(ld * sizeof(float));
    for (size_t gd = 0; gd < kv_row;) {
        const size_t vl = __riscv_vsetvl_e32m8(kv_row - gd);
        __riscv_vsse32_v_f32m8(col + gd * ld, stride, __riscv_vle32_v_f32m8(krow + gd, vl), vl);
        gd += vl;
    }
}

__attribute__((noinline)) static void fav_transpose_k(const fav_ctx *c, int c0, int c1) {
    const attn_problem *p = c->p;
    const size_t BC = (size_t)c->t.block_c, kv_row = (size_t)p->kv_heads * p->head_dim;
    const int D = p->head_dim, TR = c->tile_rows;
    if (TR) {
        for (int g = 0; g < p->kv_heads; g++)
            for (int jb = c0; jb < c1; jb += TR) {
                const int n = c1 - jb < TR ? c1 - jb : TR;
                for (int i = 0; i < n; i++) {
                    const float *krow = p->k + (size_t)(jb + i) * kv_row + (size_t)g * D;
                    for (int d = 0; d < D;) {
                        const size_t vl = __riscv_vsetvl_e32m4((size_t)(D - d));
                        __riscv_vse32(c->tile + (size_t)i * D + d, __riscv_vle32_v_f32m4(krow + d, vl), vl);
                        d += (int)vl;
                    }
                }
                fav_tile_fwd(c->tile, D, 1.0f, c->kt + (size_t)g * D * BC + (size_t)(jb - c0), BC, n);
            }
        return;
    }
    for (int j = c0; j < c1; j++)
        fav_store_key_col(c->kt + (size_t)(j - c0), BC, p->k + (size_t)j * kv_row, kv_row);
}

#if FAV_KCACHE
/* --k-cache transposed: the K cache is kept as a decoder would keep it for K^T scores, in
 * pages of block_c positions, each page stored as [kv head][D][block_c] (the block the
 * copy would build), so no key block is copied. Positions before the step's tokens are
 * there already (written outside the region of interest, as earlier steps left them); the
 * step's own keys (n_q rows: the decoded token, or every prompt token in prefill) are
 * appended inside it, each with one strided store across its kv heads, the cost a decoder
 * pays once per token instead of once per step and key. Pages, not one K^T row of all
 * positions per (kv head, d): with rows of L = 512 positions (2 KiB apart) a key block's
 * strips were scattered over DRAM pages and L1D sets, and the kept cache was slower than
 * the copied block at 512 bit (gem5, paper-fixed, decode L = 512: TinyLlama 1.36M cycles
 * against 1.00M; 1.19M with rows padded by a cache line). */
static float *fav_kcache_at(const fav_ctx *c, size_t j) {
    const size_t B = (size_t)c->t.block_c, kv_row = (size_t)c->p->kv_heads * c->p->head_dim;
    return c->ktc + j / B * kv_row * B + j % B;
}

static int fav_kcache_prepare(fav_ctx *c) {
    const attn_problem *p = c->p;
    const size_t n = (size_t)p->n_kv, kv_row = (size_t)p->kv_heads * p->head_dim;
    const size_t B = (size_t)c->t.block_c, pages = (n + B - 1) / B;
    c->ktc = malloc(pages * kv_row * B * sizeof(float));
    if (!c->ktc) return -1;
    for (size_t j = 0; j < n - (size_t)p->n_q; j++) {
        float *col = fav_kcache_at(c, j);
        for (size_t gd = 0; gd < kv_row; gd++) col[gd * B] = p->k[j * kv_row + gd];
    }
    return 0;
}

__attribute__((noinline)) static void fav_kcache_append(const fav_ctx *c) {
    const attn_problem *p = c->p;
    const size_t n = (size_t)p->n_kv, kv_row = (size_t)p->kv_heads * p->head_dim;
    for (size_t j = n - (size_t)p->n_q; j < n; j++)
        fav_store_key_col(fav_kcache_at(c, j), (size_t)c->t.block_c, p->k + j * kv_row, kv_row);
}

static int fav_kcache_block_c(const attn_problem *p, int vlmax) {
    return fav_kcache_page_keys((size_t)p->kv_heads * p->head_dim * sizeof(float), vlmax);
}

/* Whether key blocks are read from the kept pages (no copy). */
static inline int fav_keys_kept(const fav_ctx *c) { return c->ktc != NULL; }
#else
static inline int fav_keys_kept(const fav_ctx *c) { (void)c; return 0; }
#endif

/* Rows regime, --block-c auto: keys per block (probabilities kept in scratch). */
#define ROWS_AUTO_BLOCK_C 32
/* Dot regime, --block-c auto: keys whose scores (one per head) are taken before the block's
 * softmax. gem5, paper-fixed, Pythia decode L = 512, ROI cycles with 16 / 32 / 64 / 128 / 256
 * keys at 512 bit: 1.74M / 1.72M / 1.69M / 1.68M / 1.98M; 64 / 128 keys at 2048 bit: 1.29M /
 * 1.33M, at 8192 bit 1.32M / 1.34M. */
#define DOT_AUTO_BLOCK_C 64

#define LMUL_IMPL "attention/fa_v_impl.h"
#include "attention/each_lmul.h"
#undef LMUL_IMPL

/* --regime auto, from gem5 (sweeps/regimes.yaml: four models, prefill N = 128 and decode
 * L = 512, 512-8192 bit, constant latency; workloads/README.md): rows whenever a kv head
 * has enough query rows to fill a strip (it won every prefill point, and lost every decode
 * point, where a kv head has only G rows); otherwise dot for MHA when a head's row fits
 * one register group at --lmul, else at the auto LMUL (Pythia decode at 512-8192 bit: no
 * K^T copy, which MHA reuses for one head only, and K read in memory order; Pythia decode
 * L = 512 at 512 bit 1.69M cycles against blocked 3.12M, at 2048 bit 1.30M against heads
 * 1.59M), else
 * blocked (K^T scores beat dot for G = 8, TinyLlama decode at 512 bit 1.00M against
 * 1.74M; for Llama 3.2's G = 4 dot is up to 12% faster from 1024 bit: a candidate rule,
 * results/reference-regimes). */
#define ROWS_AUTO_MIN_ROWS 64
static int fav_auto_regime(const attn_problem *p, int lmul) {
    const int D = p->head_dim, G = p->heads / p->kv_heads;
    if (p->n_q * G >= ROWS_AUTO_MIN_ROWS) return FAV_ROWS;
    if (G == 1 && attn_vlmax_e32(lmul ? lmul : attn_auto_lmul(D)) >= D) return FAV_DOT;
    return FAV_BLOCKED;
}

/* Rows regime: query rows per strip when not given. Longer strips fill longer vectors,
 * but a strip's Q^T and O^T (D x strip fp32 each) and key block of probabilities leave
 * the 64 KiB L1D beyond 128 rows. gem5, paper-fixed, prefill N = 128, ROI cycles of
 * strips of 64 / 128 / 256 rows at 8192 bit: TinyLlama (D = 64) 4.46M / 3.34M / 4.03M,
 * Qwen2.5 3B (D = 128) 3.97M / 3.76M / 4.46M. With LMUL > 1 (fewer keys' scores in
 * registers, so Q^T is read more often) D = 128 wants 64 rows: at 2048 bit, LMUL 2,
 * 4.07M against 4.47M (workloads/README.md has the whole table). */
#define ROWS_AUTO_STRIP 128
#define ROWS_AUTO_STRIP_WIDE_D 64
/* With tile transposes (4096 bit and up) the strip's transposes cost far less, and a strip
 * of VLMAX rows up to this wins: 8192 bit, 256 against 128 rows: TinyLlama 2.47M against
 * 2.79M, Llama 3.2 3.05M / 3.29M, Qwen2.5 3B 2.52M / 2.87M. A strip never exceeds a kv
 * head's rows (Pythia, MHA: 128 rows at N = 128; 256-row strips of them measured 4.46M
 * against 4.04M). */
#define ROWS_AUTO_STRIP_TILED 256
/* Rows regime, --lmul auto: the vector length that matters is the strip's, not D, so the
 * smallest LMUL whose VLMAX holds a whole auto strip (else 4). */
static int fav_rows_lmul(void) {
    return attn_vlmax_e32(1) >= ROWS_AUTO_STRIP ? 1 : attn_vlmax_e32(2) >= ROWS_AUTO_STRIP ? 2 : 4;
}

/* Tile transposes or strided ones (--transpose): tile takes them wherever D allows; auto
 * where they were measured to win (gem5, paper-fixed, workloads/README.md): in the rows
 * regime once a register holds FAV_TILE_MIN_E e32 elements (TinyLlama prefill N = 128:
 * 3.14M against 3.38M cycles at 4096 bit, but 4.20M against 3.92M at 2048), in the blocked
 * regime there and with at least FAV_TILE_MIN_KV kv heads (decode L = 512 at 4096 / 8192
 * bit: Llama 3.2 1.44M / 1.31M against 1.60M, but TinyLlama 0.86M / 0.81M against 0.80M
 * and Qwen2.5 3B 0.89M / 0.77M against 0.69M / 0.68M). 0, or -1 out of memory. */
static int fav_tiles(fav_ctx *c, int blocked) {
    const int tr = fav_tile_rows(c->p->head_dim);
    const int pays = attn_vlmax_e32(1) >= FAV_TILE_MIN_E &&
                     (!blocked || c->p->kv_heads >= FAV_TILE_MIN_KV);
    c->tile_rows = c->t.transpose == FAV_TRANSPOSE_STRIDED ? 0
                   : c->t.transpose == FAV_TRANSPOSE_TILE || pays ? tr
                                                                  : 0;
    if (!c->tile_rows) return 0;
    c->tile = malloc((size_t)c->tile_rows * c->p->head_dim * sizeof(float));
    return c->tile ? 0 : -1;
}

/* Packed layouts (packed and heads regimes): c->pack heads per register, c->n_regs
 * registers; for each register the runs of heads that share a kv head (c->seg), and
 * whether it repeats the previous register's kv rows. 0, or -1 out of memory. */
static int fav_segments(fav_ctx *c) {
    const int H = c->p->heads, P = c->pack, group = c->p->heads / c->p->kv_heads;
    c->seg = malloc((size_t)2 * H * sizeof(int));
    c->seg_start = malloc((size_t)(c->n_regs + 1) * sizeof(int));
    c->same_prev = calloc((size_t)c->n_regs, 1);
    if (!c->seg || !c->seg_start || !c->same_prev) return -1;
    int ns = 0;
    for (int r = 0; r < c->n_regs; r++) {
        c->seg_start[r] = ns;
        const int hb = r * P, he = hb + P < H ? hb + P : H;
        for (int h = hb; h < he;) { /* runs of heads that share one kv head */
            const int kv = h / group;
            const int stop = (kv + 1) * group < he ? (kv + 1) * group : he;
            c->seg[2 * ns] = kv;
            c->seg[2 * ns + 1] = stop - h;
            ns++;
            h = stop;
        }
        if (r > 0 && ns - c->seg_start[r] == 1 && c->seg_start[r] - c->seg_start[r - 1] == 1 &&
            c->seg[2 * (ns - 1)] == c->seg[2 * (ns - 2)])
            c->same_prev[r] = 1;
    }
    c->seg_start[c->n_regs] = ns;
    return 0;
}

/* Heads regime: keys per block when not given (rounded up so that the block's scores fill
 * whole registers). */
#define HEADS_AUTO_BLOCK_C 64

static int fav_gcd(int a, int b) { return b ? fav_gcd(b, a % b) : a; }

/* The heads regime's layout: E = VLMAX at LMUL 1 (it works at LMUL 1 only); heads padded
 * to whole registers when E > D; key blocks a multiple of E / gcd(E, padded heads). */
static int fav_heads_prepare(fav_ctx *c) {
    const attn_problem *p = c->p;
    const int H = p->heads, D = p->head_dim, E = attn_vlmax_e32(1);
    c->heads = 1;
    c->t.lmul = 1;
    c->vlmax = E;
    c->lg_d = fav_log2(D);
    c->pack = E >= D ? E / D : 1;
    c->n_regs = (H + c->pack - 1) / c->pack;
    c->hp = c->n_regs * c->pack;
    c->tree_levels = fav_log2(E < D ? E : D);
    const int unit = E / fav_gcd(E, c->hp), want = c->t.block_c_auto ? HEADS_AUTO_BLOCK_C : c->t.block_c;
    c->hb = (want + unit - 1) / unit * unit;
    c->t.block_c = c->hb;
    if (E >= D) {
        if (fav_segments(c) != 0) return -1;
        c->pk_vl = malloc((size_t)c->n_regs * sizeof(int));
        if (!c->pk_vl) return -1;
        for (int r = 0; r < c->n_regs; r++)
            c->pk_vl[r] = (H - r * c->pack < c->pack ? H - r * c->pack : c->pack) * D;
    }
    const size_t hd = (size_t)c->hp * D, blk = (size_t)c->hb * c->hp;
    c->qs = calloc(hd, sizeof(float)); /* padding heads: q = 0 */
    c->acc = malloc(hd * sizeof(float));
    c->m = malloc((size_t)c->hp * sizeof(float));
    c->s = malloc((size_t)c->hp * sizeof(float));
    c->alpha = malloc((size_t)c->hp * sizeof(float));
    c->inv = malloc((size_t)c->hp * sizeof(float));
    c->sc = malloc(blk * sizeof(float));
    c->mrep = malloc(blk * sizeof(float));
    return c->qs && c->acc && c->m && c->s && c->alpha && c->inv && c->sc && c->mrep ? 0 : -1;
}

int fav_prepare(fav_ctx *c, const attn_problem *p, const attn_tunables *t) {
    const int H = p->heads, D = p->head_dim;
    *c = (fav_ctx){.p = p, .t = *t};
    if (c->t.regime == FAV_AUTO) c->t.regime = fav_auto_regime(p, c->t.lmul);
    if (c->t.lmul == 0) c->t.lmul = c->t.regime == FAV_ROWS ? fav_rows_lmul() : attn_auto_lmul(D);
    t = &c->t; /* below, the resolved tunables */
    c->vlmax = attn_vlmax_e32(t->lmul);
    /* packing only where possible (VLMAX > D, D | VLMAX); otherwise blocked */
    c->packed = t->regime == FAV_PACKED && c->vlmax > D && c->vlmax % D == 0;
    c->pack = c->packed ? c->vlmax / D : 1;
    c->rows = t->regime == FAV_ROWS;
    c->dot = t->regime == FAV_DOT;
    if (t->regime == FAV_HEADS && D >= 2 && !(D & (D - 1))) return fav_heads_prepare(c);
    if (t->regime == FAV_HEADS) c->t.regime = FAV_BLOCKED; /* D not a power of two */
    if (c->dot) {
        /* Key block: the scores of all heads for it are kept (heads x block_c fp32). */
        if (t->block_c_auto) c->t.block_c = DOT_AUTO_BLOCK_C;
        c->sc = malloc((size_t)c->t.block_c * H * sizeof(float));
        c->m = malloc((size_t)H * sizeof(float));
        c->s = malloc((size_t)H * sizeof(float));
        return c->sc && c->m && c->s ? 0 : -1;
    }
    if (c->rows) {
        /* Key block: its probabilities (block_c x VLMAX fp32) are read once per RD
         * dimensions of O^T, so they should stay in the L1D. */
        if (t->block_c_auto) c->t.block_c = ROWS_AUTO_BLOCK_C;
        if (fav_tiles(c, 0) != 0) return -1;
        const int rows = p->n_q * (H / p->kv_heads);
        int want = t->strip > 0                   ? t->strip
                   : c->tile_rows                 ? ROWS_AUTO_STRIP_TILED
                   : D > 64 && t->lmul > 1        ? ROWS_AUTO_STRIP_WIDE_D
                                                  : ROWS_AUTO_STRIP;
        if (t->strip == 0 && want > rows) want = rows;
        c->strip = want < c->vlmax ? want : c->vlmax;
        const size_t VLM = (size_t)c->strip;
        c->m = malloc(VLM * sizeof(float));
        c->s = malloc(VLM * sizeof(float));
        c->sc = malloc((size_t)c->t.block_c * VLM * sizeof(float));
        c->qt = malloc((size_t)D * VLM * sizeof(float));
        c->acct = malloc((size_t)D * VLM * sizeof(float));
        c->lim = malloc(VLM * sizeof(int));
        return c->m && c->s && c->sc && c->qt && c->acct && c->lim ? 0 : -1;
    }
    /* Fit the register file (32 registers = 32/LMUL groups): the packed regime keeps four
     * vectors per register of heads (q, acc, max, sum) plus about six temporaries, so
     * R * LMUL <= 4; the blocked regime keeps U accumulators plus one K^T or V row, so
     * U * LMUL <= 16 (U = 8 at LMUL 4 spills). Larger requests are capped (and reported
     * capped) instead of spilling inside the key loop. */
    if (c->t.r > 4 / t->lmul) c->t.r = 4 / t->lmul;
    if (c->t.unroll > 16 / t->lmul) c->t.unroll = 16 / t->lmul;
    if (c->t.r < 1) c->t.r = 1;
#if FAV_KCACHE
    if (t->k_cache == FAV_KC_TRANSPOSED && t->block_c_auto)
        c->t.block_c = fav_kcache_block_c(p, c->vlmax);
#endif
    const size_t per = c->packed ? (size_t)t->block_r * H * D : (size_t)t->block_r * H;
    c->m = malloc(per * sizeof(float));
    c->s = malloc(per * sizeof(float));
    c->sc = malloc((size_t)8 * t->block_c * sizeof(float));
    if (!c->m || !c->s || !c->sc) return -1;
#if FAV_KCACHE
    if (t->k_cache == FAV_KC_TRANSPOSED) return fav_kcache_prepare(c); /* no block copy */
#endif
    if (!c->packed) {
        c->kt = malloc((size_t)p->kv_heads * D * t->block_c * sizeof(float));
        if (!c->kt) return -1;
        if (fav_tiles(c, 1) != 0) return -1;
    }
    if (c->packed) {
        c->n_regs = (H + c->pack - 1) / c->pack;
        if (c->t.r > c->n_regs) c->t.r = c->n_regs; /* R is capped by the number of heads */
        if (fav_segments(c) != 0) return -1;
    }
    return 0;
}

#include "attention/fa_v_heads.h"

void attn_fa_v(const fav_ctx *c) {
#if FAV_KCACHE
    if (c->ktc) fav_kcache_append(c);
#endif
    if (c->heads) {
        fav_heads(c);
        return;
    }
    switch (c->t.lmul) {
    case 1: fav_run_m1(c); break;
    case 2: fav_run_m2(c); break;
    default: fav_run_m4(c); break;
    }
}

void fav_release(fav_ctx *c) {
    free(c->m);
    free(c->s);
    free(c->sc);
    free(c->kt);
#if FAV_KCACHE
    free(c->ktc);
#endif
    free(c->qt);
    free(c->acct);
    free(c->lim);
    free(c->tile);
    free(c->seg);
    free(c->seg_start);
    free(c->same_prev);
    free(c->pk_vl);
    free(c->qs);
    free(c->acc);
    free(c->alpha);
    free(c->mrep);
    free(c->inv);
}
#endif
