/* The layer's double-precision reference and check (outside every region of interest).
 *
 * Every sublayer's output is checked, each against a double-precision reference of that
 * sublayer alone, computed from the kernel's own inputs to it (the previous sublayer's
 * output, itself checked): a wrong sublayer shows as its own error, and the tolerances
 * are per sublayer instead of compounding. Where the kernel quantises an activation to Q8_0
 * (the input of each linear layer), the reference quantises the kernel's fp32 activation
 * the same way, so both sides multiply the same Q8_0 activations by the same dequantised
 * weights: what is checked is the arithmetic error of the kernels, not quantisation error
 * (one rounding step of difference would move an output by O(1) of a quant). GPT-NeoX's
 * GELU reads its input rounded to fp16 (ggml's table): the reference rounds it the same
 * way and computes the tanh GELU of it in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer/layer.h"
#if LAYER_FP16
#include "common/f16.h"
/* the F16 cache's values and the query as the fp16 kernels read them: rounded to fp16 */
#define KV_VAL(x) ((double)f16_to_f32(x))
#define Q_VAL(x) ((double)f16_to_f32(f32_to_f16(x)))
#else
#define KV_VAL(x) ((double)(x))
#define Q_VAL(x) ((double)(x))
#endif

/* y[t] = W xq[t] (+ bias) in double, from dequantised weights and activations */
static void ref_linear(const layer_t *s, const linear_t *L, const block_q8 *xq, double *y) {
    for (size_t t = 0; t < s->ntok; t++) {
        const block_q8 *xt = xq + t * L->nb;
        for (size_t r = 0; r < L->rows; r++) {
            const block_q8 *w = L->w + r * L->nb;
            double acc = 0.0;
            for (size_t b = 0; b < L->nb; b++) {
                long isum = 0;
                for (int j = 0; j < QK; j++) isum += (long)w[b].qs[j] * xt[b].qs[j];
                acc += (double)fp16_to_fp32(w[b].d) * (double)fp16_to_fp32(xt[b].d) * (double)isum;
            }
            y[t * L->rows + r] = acc + (L->bias ? (double)L->bias[r] : 0.0);
        }
    }
}

/* the kernel's activation quantised as the kernel quantises it (the check of that
 * activation makes sure it is the right one) */
static block_q8 *ref_quantize(const layer_t *s, const float *x, size_t cols) {
    block_q8 *xq = xaligned(s->ntok * (cols / QK) * sizeof(block_q8));
    for (size_t t = 0; t < s->ntok; t++) quantize_q8(x + t * cols, xq + t * (cols / QK), cols);
    return xq;
}

static void ref_rms_norm(const layer_t *s, const double *x, const float *w, double *y) {
    const size_t n = s->H;
    for (size_t t = 0; t < s->ntok; t++) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) sum += x[t * n + i] * x[t * n + i];
        const double scale = 1.0 / sqrt(sum / (double)n + (double)s->lp->norm_eps);
        for (size_t i = 0; i < n; i++) y[t * n + i] = x[t * n + i] * scale * (double)w[i];
    }
}

/* LayerNorm: (x - mean) / sqrt(variance + eps) * w + b */
static void ref_layer_norm(const layer_t *s, const double *x, const float *w, const float *b,
                           double *y) {
    const size_t n = s->H;
    for (size_t t = 0; t < s->ntok; t++) {
        const double *xr = x + t * n;
        double mean = 0.0, var = 0.0;
        for (size_t i = 0; i < n; i++) mean += xr[i];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++) var += (xr[i] - mean) * (xr[i] - mean);
        const double scale = 1.0 / sqrt(var / (double)n + (double)s->lp->norm_eps);
        for (size_t i = 0; i < n; i++)
            y[t * n + i] = (xr[i] - mean) * scale * (double)w[i] + (double)b[i];
    }
}

/* the block's norm: LayerNorm (GPT-NeoX) or RMSNorm */
static void ref_norm(const layer_t *s, const double *x, const float *w, const float *b,
                     double *y) {
    if (s->neox) ref_layer_norm(s, x, w, b, y);
    else ref_rms_norm(s, x, w, y);
}

/* the tanh GELU in double of the input as ggml's table reads it: rounded to fp16 inside
 * (-10, 10), where the table is used */
static double ref_gelu(float x) {
    const double v = x > -10.0f && x < 10.0f ? (double)fp16_to_fp32(fp32_to_fp16(x)) : (double)x;
    return 0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
}

/* RoPE of one token's heads at position pos, angles pos * theta^(-2i/n_rot) / ff_i */
static void ref_rope(const layer_t *s, const double *src, double *dst, int nh, int pos) {
    const int D = s->D, nr = s->n_rot, half = nr / 2;
    for (int h = 0; h < nh; h++) {
        const double *a = src + (size_t)h * D;
        double *b = dst + (size_t)h * D;
        for (int i = 0; i < half; i++) {
            double ang = pos * pow((double)s->lp->rope_theta, -2.0 * i / nr);
            if (s->rope_ff) ang /= (double)s->rope_ff[i];
            const int i0 = s->lp->rope_neox ? i : 2 * i, i1 = s->lp->rope_neox ? i + half : 2 * i + 1;
            const double x0 = a[i0], x1 = a[i1], c = cos(ang), sn = sin(ang);
            b[i0] = x0 * c - x1 * sn;
            b[i1] = x0 * sn + x1 * c;
        }
        for (int i = nr; i < D; i++) b[i] = a[i];
    }
}

/* softmax attention of the kernel's rotated queries over the kernel's cache (fp16: as
 * the fp16 kernels read them, the query rounded to fp16) */
static void ref_attention(const layer_t *s, double *o) {
    const int D = s->D, G = s->heads / s->kvh;
    const size_t kvd = s->kvd;
    double *sc = xaligned((size_t)s->n_kv * sizeof(double));
    for (size_t t = 0; t < s->ntok; t++) {
        const int end = s->decode ? s->n_kv : s->pos0 + (int)t + 1;
        for (int h = 0; h < s->heads; h++) {
            const float *q = s->qr + t * s->qd + (size_t)h * D;
            const size_t kh = (size_t)(h / G) * D;
            double mx = -INFINITY;
            for (int j = 0; j < end; j++) {
                const kv_elem *kj = s->kc + (size_t)j * kvd + kh;
                double d = 0.0;
                for (int i = 0; i < D; i++) d += Q_VAL(q[i]) * KV_VAL(kj[i]);
                sc[j] = d * (double)s->ap.scale;
                if (sc[j] > mx) mx = sc[j];
            }
            double sum = 0.0;
            for (int j = 0; j < end; j++) sum += (sc[j] = exp(sc[j] - mx));
            double *out = o + t * s->qd + (size_t)h * D;
            for (int i = 0; i < D; i++) out[i] = 0.0;
            for (int j = 0; j < end; j++) {
                const kv_elem *vj = s->vc + (size_t)j * kvd + kh;
                for (int i = 0; i < D; i++) out[i] += sc[j] / sum * KV_VAL(vj[i]);
            }
        }
    }
    free(sc);
}

/* One array of a stage against its reference: |got - ref| <= tol * RMS(ref) per element */
static void compare(const float *got, const double *ref, size_t n, double tol, err_stats *e,
                    double *stage_err) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += ref[i] * ref[i];
    const double rms = fmax(sqrt(ss / (double)n), 1e-30);
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        err_add(e, got[i], ref[i], tol * rms, 0.0, rms);
        const double r = isfinite(d) ? d / rms : INFINITY;
        if (!(r <= *stage_err)) *stage_err = r;
    }
}

#if LAYER_FP16
/* New rows of the F16 cache against their reference: each element may also be off by its
 * rounding to fp16 (at most 2^-11 of itself), so the allowance is tol x RMS + 2^-11 |ref|;
 * the stage error is reported scaled to tol x (error / allowance), <= tol when it passes */
static void compare_f16(const attn_f16 *got, const double *ref, size_t n, double tol,
                        err_stats *e, double *stage_err) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += ref[i] * ref[i];
    const double rms = fmax(sqrt(ss / (double)n), 1e-30);
    for (size_t i = 0; i < n; i++) {
        const double g = f16_to_f32(got[i]), d = fabs(g - ref[i]);
        err_add(e, g, ref[i], tol * rms, 0x1p-11, rms);
        const double r = isfinite(d) ? tol * d / (tol * rms + 0x1p-11 * fabs(ref[i])) : INFINITY;
        if (!(r <= *stage_err)) *stage_err = r;
    }
}

/* fp16 attention's output against its reference, within the attention workload's fp16
 * bound; the stage error is in units of that bound (its tolerance is 1) */
static void compare_attn_f16(const layer_t *s, const float *got, const double *ref, size_t n,
                             err_stats *e, double *stage_err) {
    double vmax = 1.0;
    for (size_t i = 0; i < (size_t)s->n_kv * s->kvd; i++) vmax = fmax(vmax, fabs(KV_VAL(s->vc[i])));
    const double atol = ATTN_F16_ATOL * vmax;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]);
        err_add(e, got[i], ref[i], atol, ATTN_F16_RTOL, 1e-3);
        const double r = isfinite(d) ? d / (atol + ATTN_F16_RTOL * fabs(ref[i])) : INFINITY;
        if (!(r <= *stage_err)) *stage_err = r;
    }
}
#endif

static double *dalloc(size_t n) { return xaligned(n * sizeof(double)); }

/* a float array as double */
static double *widen(const float *x, size_t n) {
    double *d = dalloc(n);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* rows of width w, ld apart (views of the fused qkv), as packed double rows */
static double *widen_rows(const float *x, size_t ld, size_t rows, size_t w) {
    double *d = dalloc(rows * w);
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < w; i++) d[r * w + i] = x[r * ld + i];
    return d;
}

/* qkv: the projections of the quantised normed input (GPT-NeoX: one fused matrix) */
static void check_qkv(const layer_t *s, err_stats *e, double tol, double *err) {
    const size_t N = s->ntok, qd = s->qd, kvd = s->kvd;
    block_q8 *xq = ref_quantize(s, s->xn, s->H);
    if (s->neox) {
        double *qkv = dalloc(N * (qd + 2 * kvd));
        ref_linear(s, &s->wqkv, xq, qkv);
        compare(s->qkv, qkv, N * (qd + 2 * kvd), tol, e, err);
        free(qkv), free(xq);
        return;
    }
    double *q = dalloc(N * qd), *k = dalloc(N * kvd), *v = dalloc(N * kvd);
    ref_linear(s, &s->wq, xq, q);
    ref_linear(s, &s->wk, xq, k);
    ref_linear(s, &s->wv, xq, v);
    free(xq);
    compare(s->q, q, N * qd, tol, e, err);
    compare(s->k, k, N * kvd, tol, e, err);
    compare(s->v, v, N * kvd, tol, e, err);
    free(q), free(k), free(v);
}

int layer_check(const layer_t *s, int perturb, err_stats *e, double stage_err[N_SUB],
                const double tol[N_SUB]) {
    const size_t N = s->ntok, H = s->H, I = s->I, qd = s->qd, kvd = s->kvd;
    err_reset(e);
    for (int i = 0; i < N_SUB; i++) stage_err[i] = 0.0;
    if (perturb) s->out[(N * H) / 2] += 1.0f; /* the layer's output, far outside tolerance */

    /* attn_norm: RMSNorm (GPT-NeoX: LayerNorm) of the input */
    double *x = widen(s->x, N * H), *y = dalloc(N * H);
    ref_norm(s, x, s->w_attn_norm, s->b_attn_norm, y);
    compare(s->xn, y, N * H, tol[SUB_ATTN_NORM], e, &stage_err[SUB_ATTN_NORM]);

    check_qkv(s, e, tol[SUB_QKV], &stage_err[SUB_QKV]);

    /* rope: the kernel's q and k rotated; the new cache rows hold rotated k and v */
    double *qin = widen_rows(s->q, s->q_ld, N, qd), *kin = widen_rows(s->k, s->kv_ld, N, kvd);
    double *vin = widen_rows(s->v, s->kv_ld, N, kvd);
    double *qr = dalloc(N * qd), *kr = dalloc(N * kvd);
    for (size_t t = 0; t < N; t++) {
        ref_rope(s, qin + t * qd, qr + t * qd, s->heads, s->pos0 + (int)t);
        ref_rope(s, kin + t * kvd, kr + t * kvd, s->kvh, s->pos0 + (int)t);
    }
    const size_t at = (size_t)s->pos0 * kvd; /* the new rows of the cache */
    compare(s->qr, qr, N * qd, tol[SUB_ROPE], e, &stage_err[SUB_ROPE]);
#if LAYER_FP16
    compare_f16(s->kc + at, kr, N * kvd, tol[SUB_ROPE], e, &stage_err[SUB_ROPE]);
    compare_f16(s->vc + at, vin, N * kvd, tol[SUB_ROPE], e, &stage_err[SUB_ROPE]);
#else
    compare(s->kc + at, kr, N * kvd, tol[SUB_ROPE], e, &stage_err[SUB_ROPE]);
    compare(s->vc + at, vin, N * kvd, tol[SUB_ROPE], e, &stage_err[SUB_ROPE]);
#endif
    free(qin), free(kin), free(vin), free(qr), free(kr);

    /* attention: the kernel's rotated q over the kernel's cache */
    double *ao = dalloc(N * qd);
    ref_attention(s, ao);
#if LAYER_FP16
    compare_attn_f16(s, s->ao, ao, N * qd, e, &stage_err[SUB_ATTENTION]);
#else
    compare(s->ao, ao, N * qd, tol[SUB_ATTENTION], e, &stage_err[SUB_ATTENTION]);
#endif
    free(ao);

    /* o_proj: x + Wo (quantised attention output); GPT-NeoX: Wo ao + bias alone (its
     * parallel residual adds it in ffn_down) */
    block_q8 *xq = ref_quantize(s, s->ao, qd);
    ref_linear(s, &s->wo, xq, y);
    free(xq);
    if (!s->neox)
        for (size_t i = 0; i < N * H; i++) y[i] += x[i];
    compare(s->neox ? s->ov : s->h, y, N * H, tol[SUB_O_PROJ], e, &stage_err[SUB_O_PROJ]);

    /* ffn_norm: RMSNorm of the kernel's h; GPT-NeoX: LayerNorm of the input x */
    double *h = s->neox ? x : widen(s->h, N * H);
    ref_norm(s, h, s->w_ffn_norm, s->b_ffn_norm, y);
    compare(s->hn, y, N * H, tol[SUB_FFN_NORM], e, &stage_err[SUB_FFN_NORM]);

    /* ffn_up_gate: gate and up of the quantised normed h (GPT-NeoX: up alone) */
    xq = ref_quantize(s, s->hn, H);
    double *g = dalloc(N * I), *u = dalloc(N * I);
    if (!s->neox) {
        ref_linear(s, &s->wgate, xq, g);
        compare(s->g, g, N * I, tol[SUB_FFN_UP_GATE], e, &stage_err[SUB_FFN_UP_GATE]);
    }
    ref_linear(s, &s->wup, xq, u);
    free(xq);
    compare(s->u, u, N * I, tol[SUB_FFN_UP_GATE], e, &stage_err[SUB_FFN_UP_GATE]);

    /* ffn_act: silu(gate) * up of the kernel's gate and up; GPT-NeoX: GELU(up) */
    for (size_t i = 0; i < N * I; i++) {
        if (s->neox) {
            g[i] = ref_gelu(s->u[i]);
        } else {
            const double gi = s->g[i];
            g[i] = gi / (1.0 + exp(-gi)) * (double)s->u[i];
        }
    }
    compare(s->act, g, N * I, tol[SUB_FFN_ACT], e, &stage_err[SUB_FFN_ACT]);
    free(g), free(u);

    /* ffn_down: the kernel's h + Wdown (quantised activation); GPT-NeoX: Wdown act + bias +
     * x + the kernel's attention output (o_proj's) */
    xq = ref_quantize(s, s->act, I);
    ref_linear(s, &s->wdown, xq, y);
    free(xq);
    for (size_t i = 0; i < N * H; i++) y[i] += s->neox ? h[i] + (double)s->ov[i] : h[i];
    compare(s->out, y, N * H, tol[SUB_FFN_DOWN], e, &stage_err[SUB_FFN_DOWN]);
    if (h != x) free(h);
    free(x), free(y);
    return e->n_bad == 0;
}
