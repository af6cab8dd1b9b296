/* Q8_0 workload data: fp32 -> fp16, ggml-style activation quantisation, inputs. */
#include <math.h>
#include <string.h>

#include "q8/q8.h"

uint16_t fp32_to_fp16(float f) {
    uint32_t b = q8_f32_to_bits(f);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    int e = (int)((b >> 23) & 0xffu);
    uint32_t m = b & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0));
    int he = e - 127 + 15; /* biased half exponent */
    if (he >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (he <= 0) {
        /* half subnormal (or zero): value = m24 * 2^(e-150), unit 2^-24 */
        if (he < -10) return sign; /* below half the smallest subnormal */
        m |= 0x800000u;
        unsigned shift = (unsigned)(14 - he);
        uint32_t h = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h); /* h may carry into the smallest normal: fine */
    }
    uint32_t h = ((uint32_t)he << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry up to inf */
    return (uint16_t)(sign | h);
}

void quantize_q8(const float *x, block_q8 *out, size_t n) {
    for (size_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        float amax = 0.0f;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = fp32_to_fp16(d);
        for (int j = 0; j < QK; j++) out[b].qs[j] = (int8_t)roundf(xb[j] * id);
    }
}
