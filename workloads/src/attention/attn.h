/* Attention workload: shared problem description and kernel entry points.
 * Layouts follow ggml: Q and O are [token][head][D], K and V are [pos][kv_head][D]. */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int heads, kv_heads, head_dim;
    int n_q;    /* query tokens */
    int n_kv;   /* keys / values */
    int causal; /* query i sees keys 0 .. i + (n_kv - n_q) */
    float scale;
    const float *q, *k, *v;
    float *o;
} attn_problem;

enum { FAV_AUTO, FAV_BLOCKED, FAV_PACKED, FAV_ROWS, FAV_DOT, FAV_HEADS };
/* fa-v's K cache (--k-cache): ggml's layout, or kept transposed per kv head. Only the
 * binaries built with FAV_KCACHE=1 (attention-fa-v, attention) have the option: the layer
 * and the other families are compiled without it, so their bytes and run ids stay. */
#ifndef FAV_KCACHE
#define FAV_KCACHE 0
#endif
#if FAV_KCACHE
enum { FAV_KC_GGML, FAV_KC_TRANSPOSED };
/* --k-cache transposed, --block-c auto: a page (key block) is one score vector of VLMAX
 * keys, at least KCACHE_AUTO_BLOCK_C, but a page of all kv heads (per_key bytes a key)
 * stays within KCACHE_PAGE_MAX_BYTES, half the 1 MiB L2. gem5, paper-fixed, decode
 * L = 512, 8192 bit, fp32: Pythia (16 kv heads, 4 KiB a position) 1.76M cycles with pages
 * of 256 keys, 1.33M with 128; Llama 3.2 1B (2 KiB) 0.72M with 256 against 0.75M with 128;
 * Qwen2.5 3B (1 KiB) 0.46M against 0.48M. */
#define KCACHE_AUTO_BLOCK_C 64
#define KCACHE_PAGE_MAX_BYTES (512 * 1024)
static inline int fav_kcache_page_keys(size_t per_key, int vlmax) {
    int bc = vlmax > KCACHE_AUTO_BLOCK_C ? vlmax : KCACHE_AUTO_BLOCK_C;
    while (bc > KCACHE_AUTO_BLOCK_C && per_key * (size_t)bc > KCACHE_PAGE_MAX_BYTES) bc /= 2;
    return bc;
}
#endif
/* fa-v transposes (K^T in the blocked regime, Q^T and O^T in the rows regime) */
enum { FAV_TRANSPOSE_AUTO, FAV_TRANSPOSE_TILE, FAV_TRANSPOSE_STRIDED };

typedef struct {
    int block_r, block_c; /* fa-v sequence blocking: query tokens x keys */
    int block_c_auto;     /* block_c was not given: each regime picks its own */
    int unroll;           /* fa-v blocked regime: heads per unrolled group */
    int r;                /* fa-v packed regime: registers of packed heads per iteration */
    int lmul;             /* 1, 2 or 4 (0 = auto): register grouping for ggml-vec and fa-v */
    int regime;           /* fa-v: FAV_AUTO or one of FAV_BLOCKED .. FAV_DOT */
    int strip;            /* fa-v rows regime: query rows per strip, <= VLMAX (0 = auto) */
    int transpose;        /* fa-v: FAV_TRANSPOSE_AUTO, _TILE or _STRIDED */
#if FAV_KCACHE
    int k_cache; /* fa-v: FAV_KC_GGML or FAV_KC_TRANSPOSED */
#endif
} attn_tunables;

/* One past the last key that query token i may see. */
static inline int attn_kv_end(const attn_problem *p, int i) {
    return p->causal ? i + 1 + (p->n_kv - p->n_q) : p->n_kv;
}

/* ceil(log2(x)) for x >= 1: fa-v's shifts and reduction-tree depths (fp32 and fp16) */
static inline int fav_log2(int x) {
    int lg = 0;
    while ((1 << lg) < x) lg++;
    return lg;
}

void attn_ggml_scalar(const attn_problem *p);

/* Half precision (--precision fp16), as ggml runs attention with an F16 KV cache: K and V
 * are IEEE binary16 words; Q stays fp32 (ggml's Q is F32; the harness rounds its values to
 * fp16, so the kernel's own conversion is exact) and each kernel converts a query row to
 * fp16 itself; O is written in fp16. The fp16 kernels live in their own files and their own
 * binaries (attention-<family>-fp16), so no fp32 binary holds fp16 code. */
typedef uint16_t attn_f16;
typedef struct {
    const attn_problem *p; /* shape, scale, causal, and Q (fp32) */
    const attn_f16 *k, *v; /* [pos][kv_head][D] */
    attn_f16 *o;           /* [token][head][D] */
    /* scratch for one row, allocated outside the region of interest (ggml's wdata):
     * the query row in fp16, the fp16 accumulator (VKQ16) and its fp32 copy (VKQ32) */
    attn_f16 *q_row, *acc16;
    float *acc32;
    const float *f16_table; /* ggml-scalar: fp16 -> fp32 for all 65536 words */
} attn_problem_f16;

void attn_ggml_scalar_f16(const attn_problem_f16 *p);

#if VLSCALE_VECTOR
/* The default LMUL: the smallest of 1, 2, 4 whose VLMAX at e32 holds head_dim elements
 * (else 4), so one vector instruction covers a head's D or a key strip of that length. */
int attn_auto_lmul(int head_dim);
int attn_vlmax_e32(int lmul); /* elements of e32 at LMUL 1, 2 or 4 */
void attn_ggml_vec(const attn_problem *p, const attn_tunables *t);

/* fa-v: the regime is decided before the region of interest, together with the scratch
 * memory the kernel needs, so the kernel call itself allocates nothing. */
typedef struct {
    const attn_problem *p;
    attn_tunables t;
    int vlmax;  /* elements of e32 at the chosen LMUL */
    int packed; /* 1: inter-head packing (VLMAX > D and D | VLMAX); 0: blocked */
    int rows;   /* 1: vectors span query rows (fa_v_rows_impl.h) */
    int dot;    /* 1: one row at a time, vectors over D (fa_v_dot_impl.h) */
    int pack;   /* heads per register in the packed regime (1 when blocked) */
    float *m, *s;   /* running max / sum for one query block (replicated per element when
                       packed, one per head when blocked) */
    float *sc;      /* blocked regime: scores of one key block for an unrolled head group;
                       heads regime: the key block's scores and weights, [key][head] */
    float *kt;      /* blocked regime: the key block transposed, [kv head][D][block_c] */
#if FAV_KCACHE
    float *ktc;     /* blocked, --k-cache transposed: the whole K cache as a decoder would
                       keep it, in pages of block_c positions, each page stored transposed
                       ([page][kv head][D][block_c]); no per-block copy */
#endif
    int strip;      /* rows regime: query rows per strip (the vector length), <= VLMAX */
    float *qt, *acct; /* rows regime: one strip of Q^T and O^T, [D][strip] */
    int *lim;       /* rows regime: one past the last key each row of the strip sees */
    int tile_rows;  /* rows regime: rows per transpose tile (fa_v_tile.h), 0: strided */
    float *tile;    /* rows regime: one tile, tile_rows x D */
    int n_regs;     /* packed regime: registers needed for the heads of one token */
    int *seg;       /* packed: (kv head, number of query heads) per segment of a register */
    int *seg_start; /* packed: first segment of register r is seg_start[r] */
    unsigned char *same_prev; /* packed: register r replicates the same kv rows as r-1 */
    int heads;      /* 1: vectors span (head, d), scores by a reduction tree (fa_v_heads.h) */
    int hp, hb;     /* heads regime: heads padded to whole registers; keys per block */
    int tree_levels, lg_d; /* heads regime: unzip-add levels; log2(D) */
    int *pk_vl;     /* heads regime: valid elements of packed register r */
    float *qs, *acc, *alpha, *mrep, *inv; /* heads regime: q * scale, O accumulator
                     [head][D], rescale per head, block maximum repeated per key, 1 / sum */
} fav_ctx;

int fav_prepare(fav_ctx *c, const attn_problem *p, const attn_tunables *t); /* 0 ok */
void attn_fa_v(const fav_ctx *c);
void fav_release(fav_ctx *c);

/* ggml-vec in fp16 (Zvfh: build with -march=rv64gcv_zvfh) */
void attn_ggml_vec_f16(const attn_problem_f16 *p);

/* fa-v in fp16 (fa_v_f16.c, Zvfh): regimes rows, blocked, heads and dot; its choices and
 * scratch, made before the region of interest like fa-v's. */
typedef struct {
    const attn_problem_f16 *pf;
    attn_tunables t; /* t.regime resolved (not FAV_AUTO, never FAV_PACKED), t.lmul */
    int vlmax;       /* elements of e16 at t.lmul */
    int strip;       /* rows: query rows per strip, <= vlmax */
    attn_f16 *q16;   /* Q in fp16, [token][head][D] */
    attn_f16 *qs16;  /* heads: one token's q, heads padded to whole registers */
    attn_f16 *qt;    /* rows: Q^T of a strip, then its O^T in fp16, [D][strip] */
    attn_f16 *kt;    /* blocked: the key block transposed, [kv head][D][block_c] */
#if FAV_KCACHE
    attn_f16 *ktc;   /* blocked, --k-cache transposed: fp16 pages as fav_ctx's ktc */
#endif
    attn_f16 *pr;    /* probabilities of one key block in fp16 */
    float *m, *s;    /* running max and sum */
    float *sc;       /* scores of one key block (fp32) */
    float *acc;      /* fp32 O accumulator: blocked [row][head][D], heads [head][D], dot [D] */
    float *acct;     /* rows: fp32 O^T of a strip, [D][strip] */
    float *alpha, *inv, *mrep; /* heads: rescale and 1 / sum per head, max per key */
    int *lim;        /* rows: one past the last key each row of the strip sees */
    int tile_rows;   /* rows: rows per transpose tile (fa_v_tile.h), 0: strided copies */
    attn_f16 *tile;  /* rows: one tile, tile_rows x D */
    int pack, n_regs, hp, hb, tree_levels, lg_d; /* heads: as fav_ctx's */
    int *seg, *seg_start, *pk_vl;
    unsigned char *same_prev;
} fav16_ctx;

/* 0 ok, -1 out of memory, -3 --lmul 2 outside the rows regime */
int fav16_prepare(fav16_ctx *c, const attn_problem_f16 *pf, const attn_tunables *t);
void attn_fa_v_f16(const fav16_ctx *c);
void fav16_release(fav16_ctx *c);
#endif
