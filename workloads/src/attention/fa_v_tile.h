/* fa-v, rows regime: strip transposes in registers ("unzip" transposes).
 *
 * A tile is TILE_REGS e32 registers (two m4 groups) holding rows x D floats row-major, so
 * element i*D + d is row i, dimension d (D a power of two). One unzip (the even elements of
 * the whole tile, then the odd ones) moves the lowest bit of every element's index to the
 * top; log2(D) of them turn index i*D + d into d*rows + i, the transpose. An unzip is two
 * narrowing shifts per m4 group (vnsrl of the group read as e64 by 0 and by 32 bits); its
 * inverse, a zip, is a widening add and multiply-add (e + o * 2^32). The transposed tile is
 * D chunks of `rows` floats, each a column of Q^T (or, backwards, of O^T) for the tile's
 * rows: one unit-stride store (load) per chunk, after (before) a vslidedown (vslideup).
 *
 * Why: gem5 splits a strided access into one micro-op per element, so the strided
 * transposes cost D micro-ops per row whatever VLEN is; here a row costs about
 * (2 log2(D) * 8 + 2 D) / rows micro-ops, which shrinks as VLEN (rows per tile) grows. */
#define TILE_REGS 8

/* Rows per tile, or 0 where a tile cannot be used: D must be a power of two whose chunks
 * fit a register (D >= TILE_REGS). */
static int fav_tile_rows(int D) {
    if (D < TILE_REGS || (D & (D - 1))) return 0;
    return (int)(TILE_REGS * __riscv_vsetvlmax_e32m1()) / D;
}

/* The unzip of a tile (a, b) into (evens, odds). */
#define TILE_UNZIP(a, b, vl2)                                                                \
    do {                                                                                     \
        const vuint64m4_t wa_ = __riscv_vreinterpret_v_u32m4_u64m4(a);                       \
        const vuint64m4_t wb_ = __riscv_vreinterpret_v_u32m4_u64m4(b);                       \
        (a) = __riscv_vcreate_v_u32m2_u32m4(__riscv_vnsrl_wx_u32m2(wa_, 0, vl2),             \
                                            __riscv_vnsrl_wx_u32m2(wb_, 0, vl2));            \
        (b) = __riscv_vcreate_v_u32m2_u32m4(__riscv_vnsrl_wx_u32m2(wa_, 32, vl2),            \
                                            __riscv_vnsrl_wx_u32m2(wb_, 32, vl2));           \
    } while (0)

/* e_i + o_i * 2^32 as e64: the elements of e and o interleaved. */
static inline vuint32m4_t fav_tile_zip(vuint32m2_t e, vuint32m2_t o, size_t vl2) {
    const vuint64m4_t w = __riscv_vwmaccu_vx_u64m4(__riscv_vwaddu_vv_u64m4(e, o, vl2),
                                                    0xffffffffu, o, vl2);
    return __riscv_vreinterpret_v_u64m4_u32m4(w);
}

/* The inverse of TILE_UNZIP. */
#define TILE_ZIP(a, b, vl2)                                                                  \
    do {                                                                                     \
        const vuint32m4_t na_ = fav_tile_zip(__riscv_vget_v_u32m4_u32m2(a, 0),               \
                                             __riscv_vget_v_u32m4_u32m2(b, 0), vl2);         \
        (b) = fav_tile_zip(__riscv_vget_v_u32m4_u32m2(a, 1), __riscv_vget_v_u32m4_u32m2(b, 1), \
                           vl2);                                                             \
        (a) = na_;                                                                           \
    } while (0)

/* Stores the chunks of one transposed register k: chunk c is column k * per + c. */
#define TILE_STORE(reg, k)                                                                   \
    for (int c_ = 0; c_ < per; c_++) {                                                       \
        const vuint32m1_t x_ = c_ ? __riscv_vslidedown_vx_u32m1(reg, (size_t)(c_ * rows), vl) \
                                  : (reg);                                                   \
        __riscv_vse32_v_u32m1((uint32_t *)dst + (size_t)((k) * per + c_) * ld, x_, vl);     \
    }

/* Transposes the tile in buf (rows x D, row-major) into columns dst[d * ld + i], i < nr,
 * scaled by scale. */
__attribute__((noinline)) static void fav_tile_fwd(const float *buf, int D, float scale,
                                                   float *dst, size_t ld, int nr) {
    const size_t v4 = __riscv_vsetvlmax_e32m4(), vl2 = __riscv_vsetvlmax_e32m2();
    const size_t v1 = __riscv_vsetvlmax_e32m1();
    const int rows = (int)(TILE_REGS * v1) / D, per = (int)v1 / rows, lg = fav_log2(D);
    vuint32m4_t a = __riscv_vreinterpret_v_f32m4_u32m4(
        __riscv_vfmul(__riscv_vle32_v_f32m4(buf, v4), scale, v4));
    vuint32m4_t b = __riscv_vreinterpret_v_f32m4_u32m4(
        __riscv_vfmul(__riscv_vle32_v_f32m4(buf + v4, v4), scale, v4));
    for (int s = 0; s + 1 < lg; s += 2) { /* two at a time: no register moves between */
        TILE_UNZIP(a, b, vl2);
        TILE_UNZIP(a, b, vl2);
    }
    if (lg & 1) TILE_UNZIP(a, b, vl2);
    const size_t vl = (size_t)(nr < rows ? nr : rows);
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(a, 0), 0)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(a, 1), 1)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(a, 2), 2)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(a, 3), 3)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(b, 0), 4)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(b, 1), 5)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(b, 2), 6)
    TILE_STORE(__riscv_vget_v_u32m4_u32m1(b, 3), 7)
}

/* Gathers the chunks of transposed register k (columns k * per .. k * per + per - 1). Each
 * slide runs at VLMAX: it writes from its offset to the end, and the next chunk overwrites
 * what lies past its own part. One vl for every slide keeps Minor from flushing on a vsetvli
 * whose vl changes. */
#define TILE_GATHER(k)                                                                       \
    ({                                                                                       \
        const uint32_t *s_ = (const uint32_t *)src + (size_t)((k) * per) * ld;               \
        vuint32m1_t r_ = __riscv_vle32_v_u32m1(s_, vl);                                      \
        for (int c_ = 1; c_ < per; c_++)                                                     \
            r_ = __riscv_vslideup_vx_u32m1(r_, __riscv_vle32_v_u32m1(s_ + (size_t)c_ * ld, vl), \
                                           (size_t)(c_ * rows), v1);                         \
        r_;                                                                                  \
    })

/* The inverse: columns src[d * ld + i], i < nr, into buf as rows x D, row-major. */
__attribute__((noinline)) static void fav_tile_bwd(const float *src, size_t ld, int nr, int D,
                                                   float *buf) {
    const size_t v4 = __riscv_vsetvlmax_e32m4(), vl2 = __riscv_vsetvlmax_e32m2();
    const size_t v1 = __riscv_vsetvlmax_e32m1();
    const int rows = (int)(TILE_REGS * v1) / D, per = (int)v1 / rows, lg = fav_log2(D);
    const size_t vl = (size_t)(nr < rows ? nr : rows);
    vuint32m4_t a = __riscv_vcreate_v_u32m1_u32m4(TILE_GATHER(0), TILE_GATHER(1),
                                                  TILE_GATHER(2), TILE_GATHER(3));
    vuint32m4_t b = __riscv_vcreate_v_u32m1_u32m4(TILE_GATHER(4), TILE_GATHER(5),
                                                  TILE_GATHER(6), TILE_GATHER(7));
    for (int s = 0; s + 1 < lg; s += 2) { /* two at a time: no register moves between */
        TILE_ZIP(a, b, vl2);
        TILE_ZIP(a, b, vl2);
    }
    if (lg & 1) TILE_ZIP(a, b, vl2);
    __riscv_vse32_v_u32m4((uint32_t *)buf, a, v4);
    __riscv_vse32_v_u32m4((uint32_t *)buf + v4, b, v4);
}

#undef TILE_UNZIP
#undef TILE_ZIP
#undef TILE_STORE
#undef TILE_GATHER
