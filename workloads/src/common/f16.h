/* IEEE binary16 ("fp16", "half") as raw 16-bit words, for code that may run without Zfh:
 * the harness (inputs, check, dumps) and the rv64gc scalar kernels. Header-only and
 * inline, so that a binary that never uses half precision holds none of it. */
#pragma once
#include <stdint.h>
#include <string.h>

static inline float f16_u32_as_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t f16_f32_as_u32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Exact widening. The 15 magnitude bits placed at fp32's exponent/fraction boundary
 * (shifted left by 13) read as an fp32 whose value is the half's times 2^-112, for normal
 * and subnormal halves alike (fp32 represents both exactly); one exact multiply by 2^112
 * restores it. Exponent 31 (inf, nan) maps to fp32's 255. */
static inline float f16_to_f32(uint16_t h) {
    const float mag = f16_u32_as_f32((uint32_t)(h & 0x7fffu) << 13) * 0x1p112f;
    const uint32_t special = (h & 0x7c00u) == 0x7c00u ? 0x7f800000u : 0u;
    return f16_u32_as_f32(f16_f32_as_u32(mag) | special | (uint32_t)(h & 0x8000u) << 16);
}

/* Narrowing with round to nearest, ties to even, done by the FPU: for |f| in
 * [2^E, 2^(E+1)) the half's unit in the last place is 2^(E-10) (2^-24 for every E < -14,
 * the subnormal range), and 2^(E+13) is the fp32 whose own ulp is that same 2^(E-10). So
 * c + |f| with c = 2^(max(E, -14) + 13) is |f| rounded to half precision by one fp32 add,
 * and its 23-bit fraction field holds the rounded magnitude in units of that ulp, k. The
 * half is then ((E + 14) << 10) + k (k's own bit 10 supplies the implicit one, a carry out
 * of the fraction moves into the exponent, 65520 and up become inf). ggml's generic
 * (no-Zfh) conversion also lets one fp32 add do the rounding; this is our formulation. */
static inline uint16_t f32_to_f16(float f) {
    const uint32_t w = f16_f32_as_u32(f);
    const uint16_t sign = (uint16_t)((w >> 16) & 0x8000u);
    const uint32_t a = w & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u; /* nan (quiet) */
    if (a >= 0x47800000u) return sign | 0x7c00u; /* 2^16 and up, inf: inf */
    uint32_t e = a >> 23;                        /* biased exponent, E + 127 */
    if (e < 113) e = 113;                        /* E < -14: half subnormals, ulp 2^-24 */
    const uint32_t c = (e + 13) << 23;           /* 2^(E+13) */
    const uint32_t k = f16_f32_as_u32(f16_u32_as_f32(a) + f16_u32_as_f32(c)) - c;
    return (uint16_t)(sign | (((e - 113) << 10) + k));
}
