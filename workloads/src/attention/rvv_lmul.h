/* Per-LMUL vector helpers. Include with LM defined as m1, m2 or m4 and MB as the matching
 * mask ratio (32, 16, 8); every helper gets the suffix _<LM>. No VLEN is compiled in:
 * all vector lengths come from vsetvl/vsetvlmax at run time. Included several times. */
#include <riscv_vector.h>

#ifndef RVV_CAT
#define RVV_CAT_(a, b) a##b
#define RVV_CAT(a, b) RVV_CAT_(a, b)
#define RVV_CAT3(a, b, c) RVV_CAT(RVV_CAT(a, b), c)
#endif

#undef VF
#undef VI
#undef VU
#undef VB
#undef FN
#undef SETVL
#undef SETVLMAX
#undef VLE
#undef VFMV
#undef VID
#undef VAS_F
#define VF RVV_CAT3(vfloat32, LM, _t)
#define VI RVV_CAT3(vint32, LM, _t)
#define VU RVV_CAT3(vuint32, LM, _t)
#define VB RVV_CAT3(vbool, MB, _t)
#define FN(name) RVV_CAT3(name, _, LM)
#define SETVL(n) RVV_CAT(__riscv_vsetvl_e32, LM)(n)
#define SETVLMAX() RVV_CAT(__riscv_vsetvlmax_e32, LM)()
#define VLE(ptr, vl) RVV_CAT(__riscv_vle32_v_f32, LM)(ptr, vl)
#define VFMV(x, vl) RVV_CAT(__riscv_vfmv_v_f_f32, LM)(x, vl)
#define VID(vl) RVV_CAT(__riscv_vid_v_u32, LM)(vl)
#define VAS_F(x) RVV_CAT(__riscv_vreinterpret_f32, LM)(x)

/* Sum of the first vl elements of x. */
static inline float FN(hsum)(VF x, size_t vl) {
    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(0.0f, __riscv_vsetvlmax_e32m1());
    return __riscv_vfmv_f(__riscv_vfredusum(x, z, vl));
}

static inline float FN(hmax)(VF x, float init, size_t vl) {
    vfloat32m1_t z = __riscv_vfmv_v_f_f32m1(init, __riscv_vsetvlmax_e32m1());
    return __riscv_vfmv_f(__riscv_vfredmax(x, z, vl));
}

/* exp(x) for fp32, elementwise. Range reduction x = n*ln2 + r with |r| <= ln2/2
 * (Cody-Waite: ln2 split in a short high part and a low correction), degree-6 Taylor
 * polynomial for e^r (truncation < 2e-7 relative), then 2^n built in the exponent field.
 * The input is clamped to [-87, 88] so 2^n stays a normal number; exp(-87) ~ 1.6e-38 acts as
 * zero wherever it multiplies a sum of O(1) terms. */
static inline VF FN(vexp)(VF x, size_t vl) {
    x = __riscv_vfmin(x, 88.0f, vl);
    x = __riscv_vfmax(x, -87.0f, vl);
    VI n = __riscv_vfcvt_x(__riscv_vfmul(x, 1.44269504088896341f, vl), vl); /* round to nearest */
    VF nf = __riscv_vfcvt_f(n, vl);
    VF r = __riscv_vfnmsac(x, 0.693359375f, nf, vl);    /* x - n*ln2_hi (exact product) */
    r = __riscv_vfnmsac(r, -2.12194440e-4f, nf, vl);     /* - n*ln2_lo */
    VF y = __riscv_vfadd(__riscv_vfmul(r, 1.0f / 720.0f, vl), 1.0f / 120.0f, vl);
    y = __riscv_vfadd(__riscv_vfmul(y, r, vl), 1.0f / 24.0f, vl);
    y = __riscv_vfadd(__riscv_vfmul(y, r, vl), 1.0f / 6.0f, vl);
    y = __riscv_vfadd(__riscv_vfmul(y, r, vl), 0.5f, vl);
    y = __riscv_vfadd(__riscv_vfmul(y, r, vl), 1.0f, vl);
    y = __riscv_vfadd(__riscv_vfmul(y, r, vl), 1.0f, vl);
    VF two_n = VAS_F(__riscv_vsll(__riscv_vadd(n, 127, vl), 23, vl));
    return __riscv_vfmul(y, two_n, vl);
}
