/* fa-v, rows regime: strip transposes in registers ("unzip" transposes), for 32-bit (fp32)
 * and 16-bit (fp16) elements. Include with TILE_EW defined as 32 or 16; the functions get
 * the prefix fav_ (32) or fav16_ (16). Included once per translation unit.
 *
 * A tile is TILE_REGS registers (two m4 groups) holding rows x D elements row-major, so
 * element i*D + d is row i, dimension d (D a power of two). One unzip (the even elements of
 * the whole tile, then the odd ones) moves the lowest bit of every element's index to the
 * top; log2(D) of them turn index i*D + d into d*rows + i, the transpose. An unzip is two
 * narrowing shifts per m4 group (vnsrl of the group read at twice the width by 0 and by
 * TILE_EW bits); its inverse, a zip, is a widening add and multiply-add (e + o * 2^TILE_EW).
 * Elements move as bits; only fp32's forward transpose scales (fp16's scores take the scale
 * in fp32). The transposed tile is D chunks of `rows` elements, each a column of Q^T (or,
 * backwards, of O^T) for the tile's rows: one unit-stride store (load) per chunk, after
 * (before) a vslidedown (vslideup).
 *
 * Why: gem5 splits a strided access into one micro-op per element, so the strided
 * transposes cost D micro-ops per row whatever VLEN is; here a row costs about
 * (2 log2(D) * 8 + 2 D) / rows micro-ops, which shrinks as VLEN (rows per tile) grows. */
#define TILE_REGS 8

/* One row per element width: the tile's types and the intrinsics that name a width. */
#if TILE_EW == 32
#define TILE_FN(name) fav_##name
typedef float tile_t;       /* the callers' element type */
typedef uint32_t tile_bits; /* the same bits, as moved */
#define TILE_U1 vuint32m1_t
#define TILE_U2 vuint32m2_t
#define TILE_U4 vuint32m4_t
#define TILE_W4 vuint64m4_t
#define TILE_HALF_MASK 0xffffffffu
#define TILE_VLMAX1() __riscv_vsetvlmax_e32m1()
#define TILE_VLMAX2() __riscv_vsetvlmax_e32m2()
#define TILE_VLMAX4() __riscv_vsetvlmax_e32m4()
#define TILE_VSETVL4(n) __riscv_vsetvl_e32m4(n)
#define TILE_AS_WIDE(x) __riscv_vreinterpret_v_u32m4_u64m4(x)
#define TILE_FROM_WIDE(x) __riscv_vreinterpret_v_u64m4_u32m4(x)
#define TILE_NSRL(w, s, vl) __riscv_vnsrl_wx_u32m2(w, s, vl)
#define TILE_CREATE2(a, b) __riscv_vcreate_v_u32m2_u32m4(a, b)
#define TILE_CREATE1(a, b, c, d) __riscv_vcreate_v_u32m1_u32m4(a, b, c, d)
#define TILE_GET2(x, k) __riscv_vget_v_u32m4_u32m2(x, k)
#define TILE_GET1(x, k) __riscv_vget_v_u32m4_u32m1(x, k)
#define TILE_LE1(p, vl) __riscv_vle32_v_u32m1(p, vl)
#define TILE_SE1(p, x, vl) __riscv_vse32_v_u32m1(p, x, vl)
#define TILE_SE4(p, x, vl) __riscv_vse32_v_u32m4(p, x, vl)
#define TILE_COPY4(dst, src, vl) __riscv_vse32(dst, __riscv_vle32_v_f32m4(src, vl), vl)
#define TILE_SCALE_PARAM , float scale
#define TILE_LOAD_IN(p, vl) \
    __riscv_vreinterpret_v_f32m4_u32m4(__riscv_vfmul(__riscv_vle32_v_f32m4(p, vl), scale, vl))
#elif TILE_EW == 16
#define TILE_FN(name) fav16_##name
typedef uint16_t tile_t;
typedef uint16_t tile_bits;
#define TILE_U1 vuint16m1_t
#define TILE_U2 vuint16m2_t
#define TILE_U4 vuint16m4_t
#define TILE_W4 vuint32m4_t
#define TILE_HALF_MASK 0xffffu
#define TILE_VLMAX1() __riscv_vsetvlmax_e16m1()
#define TILE_VLMAX2() __riscv_vsetvlmax_e16m2()
#define TILE_VLMAX4() __riscv_vsetvlmax_e16m4()
#define TILE_VSETVL4(n) __riscv_vsetvl_e16m4(n)
#define TILE_AS_WIDE(x) __riscv_vreinterpret_v_u16m4_u32m4(x)
#define TILE_FROM_WIDE(x) __riscv_vreinterpret_v_u32m4_u16m4(x)
#define TILE_NSRL(w, s, vl) __riscv_vnsrl_wx_u16m2(w, s, vl)
#define TILE_CREATE2(a, b) __riscv_vcreate_v_u16m2_u16m4(a, b)
#define TILE_CREATE1(a, b, c, d) __riscv_vcreate_v_u16m1_u16m4(a, b, c, d)
#define TILE_GET2(x, k) __riscv_vget_v_u16m4_u16m2(x, k)
#define TILE_GET1(x, k) __riscv_vget_v_u16m4_u16m1(x, k)
#define TILE_LE1(p, vl) __riscv_vle16_v_u16m1(p, vl)
#define TILE_SE1(p, x, vl) __riscv_vse16_v_u16m1(p, x, vl)
#define TILE_SE4(p, x, vl) __riscv_vse16_v_u16m4(p, x, vl)
#define TILE_COPY4(dst, src, vl) __riscv_vse16(dst, __riscv_vle16_v_u16m4(src, vl), vl)
#define TILE_SCALE_PARAM
#define TILE_LOAD_IN(p, vl) __riscv_vle16_v_u16m4(p, vl)
#else
#error "fa_v_tile.h: define TILE_EW as 32 or 16"
#endif

/* Rows per tile, or 0 where a tile cannot be used: D must be a power of two whose chunks
 * fit a register (D >= TILE_REGS). */
static int TILE_FN(tile_rows)(int D) {
    if (D < TILE_REGS || (D & (D - 1))) return 0;
    return (int)(TILE_REGS * TILE_VLMAX1()) / D;
}

/* Copies rows [i0, i0 + n) of kv head g's rows between Q or O ([token][head][D]) and a
 * tile buffer (n x D, row-major), run by run: the rows of one token are contiguous. */
static void TILE_FN(rows_copy)(const attn_problem *p, int g, int i0, int n, tile_t *qo,
                               tile_t *buf, int to_buf) {
    const int H = p->heads, D = p->head_dim, G = H / p->kv_heads;
    for (int i = 0; i < n;) {
        const int t = (i0 + i) / G, u = (i0 + i) % G, run = G - u < n - i ? G - u : n - i;
        tile_t *row = qo + ((size_t)t * H + (size_t)g * G + u) * D, *b = buf + (size_t)i * D;
        const size_t len = (size_t)run * D;
        for (size_t k = 0; k < len;) {
            const size_t vl = TILE_VSETVL4(len - k);
            if (to_buf)
                TILE_COPY4(b + k, row + k, vl);
            else
                TILE_COPY4(row + k, b + k, vl);
            k += vl;
        }
        i += run;
    }
}

/* The unzip of a tile (a, b) into (evens, odds). */
#define TILE_UNZIP(a, b, vl2)                                                                \
    do {                                                                                     \
        const TILE_W4 wa_ = TILE_AS_WIDE(a), wb_ = TILE_AS_WIDE(b);                          \
        (a) = TILE_CREATE2(TILE_NSRL(wa_, 0, vl2), TILE_NSRL(wb_, 0, vl2));                  \
        (b) = TILE_CREATE2(TILE_NSRL(wa_, TILE_EW, vl2), TILE_NSRL(wb_, TILE_EW, vl2));      \
    } while (0)

/* e_i + o_i * 2^TILE_EW at twice the width: the elements of e and o interleaved. */
static inline TILE_U4 TILE_FN(tile_zip)(TILE_U2 e, TILE_U2 o, size_t vl2) {
    return TILE_FROM_WIDE(
        __riscv_vwmaccu(__riscv_vwaddu_vv(e, o, vl2), TILE_HALF_MASK, o, vl2));
}

/* The inverse of TILE_UNZIP. */
#define TILE_ZIP(a, b, vl2)                                                                  \
    do {                                                                                     \
        const TILE_U4 na_ = TILE_FN(tile_zip)(TILE_GET2(a, 0), TILE_GET2(b, 0), vl2);        \
        (b) = TILE_FN(tile_zip)(TILE_GET2(a, 1), TILE_GET2(b, 1), vl2);                      \
        (a) = na_;                                                                           \
    } while (0)

/* Stores the chunks of one transposed register k: chunk c is column k * per + c. */
#define TILE_STORE(reg, k)                                                                   \
    for (int c_ = 0; c_ < per; c_++) {                                                       \
        const TILE_U1 x_ = c_ ? __riscv_vslidedown(reg, (size_t)(c_ * rows), vl) : (reg); \
        TILE_SE1((tile_bits *)dst + (size_t)((k) * per + c_) * ld, x_, vl);                  \
    }

/* Transposes the tile in buf (rows x D, row-major) into columns dst[d * ld + i], i < nr
 * (fp32: scaled by scale). */
__attribute__((noinline)) static void TILE_FN(tile_fwd)(const tile_t *buf, int D TILE_SCALE_PARAM,
                                                        tile_t *dst, size_t ld, int nr) {
    const size_t v4 = TILE_VLMAX4(), vl2 = TILE_VLMAX2(), v1 = TILE_VLMAX1();
    const int rows = (int)(TILE_REGS * v1) / D, per = (int)v1 / rows, lg = fav_log2(D);
    TILE_U4 a = TILE_LOAD_IN(buf, v4);
    TILE_U4 b = TILE_LOAD_IN(buf + v4, v4);
    for (int s = 0; s + 1 < lg; s += 2) { /* two at a time: no register moves between */
        TILE_UNZIP(a, b, vl2);
        TILE_UNZIP(a, b, vl2);
    }
    if (lg & 1) TILE_UNZIP(a, b, vl2);
    const size_t vl = (size_t)(nr < rows ? nr : rows);
    TILE_STORE(TILE_GET1(a, 0), 0)
    TILE_STORE(TILE_GET1(a, 1), 1)
    TILE_STORE(TILE_GET1(a, 2), 2)
    TILE_STORE(TILE_GET1(a, 3), 3)
    TILE_STORE(TILE_GET1(b, 0), 4)
    TILE_STORE(TILE_GET1(b, 1), 5)
    TILE_STORE(TILE_GET1(b, 2), 6)
    TILE_STORE(TILE_GET1(b, 3), 7)
}

/* Gathers the chunks of transposed register k (columns k * per .. k * per + per - 1). Each
 * slide runs at VLMAX: it writes from its offset to the end, and the next chunk overwrites
 * what lies past its own part. One vl for every slide keeps Minor from flushing on a vsetvli
 * whose vl changes. */
#define TILE_GATHER(k)                                                                       \
    ({                                                                                       \
        const tile_bits *s_ = (const tile_bits *)src + (size_t)((k) * per) * ld;             \
        TILE_U1 r_ = TILE_LE1(s_, vl);                                                       \
        for (int c_ = 1; c_ < per; c_++)                                                     \
            r_ = __riscv_vslideup(r_, TILE_LE1(s_ + (size_t)c_ * ld, vl),                 \
                                     (size_t)(c_ * rows), v1);                               \
        r_;                                                                                  \
    })

/* The inverse: columns src[d * ld + i], i < nr, into buf as rows x D, row-major. */
__attribute__((noinline)) static void TILE_FN(tile_bwd)(const tile_t *src, size_t ld, int nr,
                                                        int D, tile_t *buf) {
    const size_t v4 = TILE_VLMAX4(), vl2 = TILE_VLMAX2(), v1 = TILE_VLMAX1();
    const int rows = (int)(TILE_REGS * v1) / D, per = (int)v1 / rows, lg = fav_log2(D);
    const size_t vl = (size_t)(nr < rows ? nr : rows);
    TILE_U4 a = TILE_CREATE1(TILE_GATHER(0), TILE_GATHER(1), TILE_GATHER(2), TILE_GATHER(3));
    TILE_U4 b = TILE_CREATE1(TILE_GATHER(4), TILE_GATHER(5), TILE_GATHER(6), TILE_GATHER(7));
    for (int s = 0; s + 1 < lg; s += 2) { /* two at a time: no register moves between */
        TILE_ZIP(a, b, vl2);
        TILE_ZIP(a, b, vl2);
    }
    if (lg & 1) TILE_ZIP(a, b, vl2);
    TILE_SE4((tile_bits *)buf, a, v4);
    TILE_SE4((tile_bits *)buf + v4, b, v4);
}

#undef TILE_UNZIP
#undef TILE_ZIP
#undef TILE_STORE
#undef TILE_GATHER
