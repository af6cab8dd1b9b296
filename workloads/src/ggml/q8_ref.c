/* Shapes, inputs and reference of the q8 workloads (see q8_ref.h). Must stay identical in
 * effect to q8/q8_main.c: the tests compare the dumped inputs byte for byte. */
#include "ggml/q8_ref.h"

#include <math.h>
#include <string.h>

void q8_proj_shape(const model_shape *m, const char *proj, long *rows, long *cols) {
    const long h = m->hidden, qd = (long)m->heads * m->head_dim;
    const long kvd = (long)m->kv_heads * m->head_dim, inter = m->intermediate;
    if (!strcmp(proj, "q")) *rows = qd, *cols = h;
    else if (!strcmp(proj, "k") || !strcmp(proj, "v")) *rows = kvd, *cols = h;
    else if (!strcmp(proj, "o")) *rows = h, *cols = qd;
    else if (!strcmp(proj, "gate") || !strcmp(proj, "up")) *rows = inter, *cols = h;
    else *rows = h, *cols = inter; /* down */
}

void q8_make_x(rng_t *rng, float *x, size_t nb) {
    for (size_t b = 0; b < nb; b++) {
        const int zero_block = (rng_u64(rng) & 15u) == 0; /* a block of zeros: d = 0 */
        /* block magnitudes spread over 2^11, down to fp16-subnormal scales */
        const float amp = 3.0f * exp2f(-rng_uniform(rng, 0.0f, 11.0f));
        for (int j = 0; j < QK; j++) {
            const float v = rng_uniform(rng, -amp, amp);
            x[b * QK + (size_t)j] = zero_block ? 0.0f : v;
        }
    }
}

void q8_make_w(rng_t *rng, block_q8 *w, size_t nblocks) {
    for (size_t i = 0; i < nblocks; i++) {
        w[i].d = fp32_to_fp16(rng_uniform(rng, 1e-4f, 5e-3f)); /* weights ~0.01 .. 0.6 */
        for (int j = 0; j < QK; j++) w[i].qs[j] = (int8_t)((int)(rng_u64(rng) % 255u) - 127);
    }
}

void q8_reference(const q8_problem *p, double *yref, double *abssum) {
    for (size_t r = 0; r < p->rows; r++) {
        const block_q8 *w = p->w + r * p->nb;
        double s = 0.0, a = 0.0;
        for (size_t b = 0; b < p->nb; b++) {
            long sumi = 0;
            for (int j = 0; j < QK; j++) sumi += (long)w[b].qs[j] * p->xq[b].qs[j];
            const float prod = fp16_to_fp32(w[b].d) * fp16_to_fp32(p->xq[b].d);
            const double t = (double)sumi * (double)prod;
            s += t;
            a += fabs(t);
        }
        yref[r] = s;
        abssum[r] = a;
    }
}
