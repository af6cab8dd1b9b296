/* fa-v in fp16, rows regime: strip transposes in registers, fa_v_tile.h's unzip transposes
 * on 16-bit elements (a tile is TILE16_REGS e16 registers, two m4 groups, rows x D halves
 * row-major; an unzip narrows the group read as e32 by 0 and by 16 bits; a zip is e + o *
 * 2^16). The elements are moved as bits: no conversion, no scaling (fp16's scores take the
 * scale in fp32). Included once by fa_v_f16.c. Why: the strided copies cost D micro-ops per
 * row in gem5 whatever VLEN is (fp16 TinyLlama prefill at 8192 bit: 947,780 scalar
 * operations against fp32's 508,029 with tiles). */
#define TILE16_REGS 8

/* Rows per tile, or 0 where a tile cannot be used: D a power of two, chunks of a register
 * (D >= TILE16_REGS). */
static int fav16_tile_rows(int D) {
    if (D < TILE16_REGS || (D & (D - 1))) return 0;
    return (int)(TILE16_REGS * __riscv_vsetvlmax_e16m1()) / D;
}

#define TILE16_UNZIP(a, b, vl2)                                                              \
    do {                                                                                     \
        const vuint32m4_t wa_ = __riscv_vreinterpret_v_u16m4_u32m4(a);                       \
        const vuint32m4_t wb_ = __riscv_vreinterpret_v_u16m4_u32m4(b);                       \
        (a) = __riscv_vcreate_v_u16m2_u16m4(__riscv_vnsrl_wx_u16m2(wa_, 0, vl2),             \
                                            __riscv_vnsrl_wx_u16m2(wb_, 0, vl2));            \
        (b) = __riscv_vcreate_v_u16m2_u16m4(__riscv_vnsrl_wx_u16m2(wa_, 16, vl2),            \
                                            __riscv_vnsrl_wx_u16m2(wb_, 16, vl2));           \
    } while (0)

/* e_i + o_i * 2^16 as e32: the elements of e and o interleaved. */
static inline vuint16m4_t fav16_tile_zip(vuint16m2_t e, vuint16m2_t o, size_t vl2) {
    const vuint32m4_t w = __riscv_vwmaccu_vx_u32m4(__riscv_vwaddu_vv_u32m4(e, o, vl2),
                                                    0xffffu, o, vl2);
    return __riscv_vreinterpret_v_u32m4_u16m4(w);
}

#define TILE16_ZIP(a, b, vl2)                                                                \
    do {                                                                                     \
        const vuint16m4_t na_ = fav16_tile_zip(__riscv_vget_v_u16m4_u16m2(a, 0),             \
                                               __riscv_vget_v_u16m4_u16m2(b, 0), vl2);       \
        (b) = fav16_tile_zip(__riscv_vget_v_u16m4_u16m2(a, 1),                               \
                             __riscv_vget_v_u16m4_u16m2(b, 1), vl2);                         \
        (a) = na_;                                                                           \
    } while (0)

/* Stores the chunks of transposed register k: chunk c is column k * per + c. */
#define TILE16_STORE(reg, k)                                                                 \
    for (int c_ = 0; c_ < per; c_++) {                                                       \
        const vuint16m1_t x_ = c_ ? __riscv_vslidedown_vx_u16m1(reg, (size_t)(c_ * rows), vl) \
                                  : (reg);                                                   \
        __riscv_vse16_v_u16m1(dst + (size_t)((k) * per + c_) * ld, x_, vl);                 \
    }

/* The tile in buf (rows x D, row-major) into columns dst[d * ld + i], i < nr. */
__attribute__((noinline)) static void fav16_tile_fwd(const uint16_t *buf, int D, uint16_t *dst,
                                                     size_t ld, int nr) {
    const size_t v4 = __riscv_vsetvlmax_e16m4(), vl2 = __riscv_vsetvlmax_e16m2();
    const size_t v1 = __riscv_vsetvlmax_e16m1();
    const int rows = (int)(TILE16_REGS * v1) / D, per = (int)v1 / rows, lg = fav_log2(D);
    vuint16m4_t a = __riscv_vle16_v_u16m4(buf, v4), b = __riscv_vle16_v_u16m4(buf + v4, v4);
    for (int s = 0; s + 1 < lg; s += 2) { /* two at a time: no register moves between */
        TILE16_UNZIP(a, b, vl2);
        TILE16_UNZIP(a, b, vl2);
    }
    if (lg & 1) TILE16_UNZIP(a, b, vl2);
    const size_t vl = (size_t)(nr < rows ? nr : rows);
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(a, 0), 0)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(a, 1), 1)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(a, 2), 2)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(a, 3), 3)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(b, 0), 4)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(b, 1), 5)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(b, 2), 6)
    TILE16_STORE(__riscv_vget_v_u16m4_u16m1(b, 3), 7)
}

/* Gathers the chunks of transposed register k; every slide at VLMAX, as fa_v_tile.h's. */
#define TILE16_GATHER(k)                                                                     \
    ({                                                                                       \
        const uint16_t *s_ = src + (size_t)((k) * per) * ld;                                 \
        vuint16m1_t r_ = __riscv_vle16_v_u16m1(s_, vl);                                      \
        for (int c_ = 1; c_ < per; c_++)                                                     \
            r_ = __riscv_vslideup_vx_u16m1(r_, __riscv_vle16_v_u16m1(s_ + (size_t)c_ * ld, vl), \
                                           (size_t)(c_ * rows), v1);                         \
        r_;                                                                                  \
    })

/* The inverse: columns src[d * ld + i], i < nr, into buf as rows x D, row-major. */
__attribute__((noinline)) static void fav16_tile_bwd(const uint16_t *src, size_t ld, int nr,
                                                     int D, uint16_t *buf) {
    const size_t v4 = __riscv_vsetvlmax_e16m4(), vl2 = __riscv_vsetvlmax_e16m2();
    const size_t v1 = __riscv_vsetvlmax_e16m1();
    const int rows = (int)(TILE16_REGS * v1) / D, per = (int)v1 / rows, lg = fav_log2(D);
    const size_t vl = (size_t)(nr < rows ? nr : rows);
    vuint16m4_t a = __riscv_vcreate_v_u16m1_u16m4(TILE16_GATHER(0), TILE16_GATHER(1),
                                                  TILE16_GATHER(2), TILE16_GATHER(3));
    vuint16m4_t b = __riscv_vcreate_v_u16m1_u16m4(TILE16_GATHER(4), TILE16_GATHER(5),
                                                  TILE16_GATHER(6), TILE16_GATHER(7));
    for (int s = 0; s + 1 < lg; s += 2) {
        TILE16_ZIP(a, b, vl2);
        TILE16_ZIP(a, b, vl2);
    }
    if (lg & 1) TILE16_ZIP(a, b, vl2);
    __riscv_vse16_v_u16m4(buf, a, v4);
    __riscv_vse16_v_u16m4(buf + v4, b, v4);
}

#undef TILE16_UNZIP
#undef TILE16_ZIP
#undef TILE16_STORE
#undef TILE16_GATHER
