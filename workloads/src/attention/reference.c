/* The double-precision reference of an attention layer, and reference files (reference.h). */
#define _POSIX_C_SOURCE 200809L
#include "attention/reference.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/harness.h"

/* Converts n floats to double once: the reference then runs on doubles without a conversion
 * per use (it runs on gem5's atomic CPU after every measured kernel, so its instruction
 * count is a large part of a sweep's cost). */
static double *to_double(const float *x, size_t n) {
    double *d = malloc(n * sizeof(double));
    if (!d) die_arg("out of memory");
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

void attn_reference(const attn_problem *p, double *out) {
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    double *w = malloc((size_t)p->n_kv * sizeof(double));
    double *qd = to_double(p->q, (size_t)p->n_q * H * D);
    double *kd = to_double(p->k, (size_t)p->n_kv * kv_row);
    double *vd = to_double(p->v, (size_t)p->n_kv * kv_row);
    if (!w) die_arg("out of memory");
    const double scale = 1.0 / sqrt((double)D);
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) {
            const double *q = qd + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < end; j++) {
                const double *k = kd + (size_t)j * kv_row + kvo;
                double s = 0.0;
                for (int d = 0; d < D; d++) s += q[d] * k[d];
                w[j] = s * scale;
                if (w[j] > mx) mx = w[j];
            }
            for (int j = 0; j < end; j++) sum += (w[j] = exp(w[j] - mx));
            double *o = out + ((size_t)i * H + h) * D;
            for (int d = 0; d < D; d++) o[d] = 0.0;
            for (int j = 0; j < end; j++) {
                const double *v = vd + (size_t)j * kv_row + kvo;
                const double wj = w[j];
                for (int d = 0; d < D; d++) o[d] += wj * v[d];
            }
            for (int d = 0; d < D; d++) o[d] /= sum;
        }
    }
    free(w);
    free(qd);
    free(kd);
    free(vd);
}

/* Reference files (--make-ref writes one, --ref reads one): the double-precision reference
 * depends only on the problem and the inputs, so a sweep computes it once per shape and seed
 * on a fast simulator instead of after every measured kernel. The header names the problem
 * and a checksum of the generated inputs; a file for anything else is refused. */
static const char REF_MAGIC[8] = "VSREF01";

static uint64_t checksum(uint64_t h, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, &x[i], sizeof w);
        h = (h ^ w) * 0x100000001b3ULL; /* FNV-1a step per 32-bit word */
    }
    return h;
}

ref_header ref_header_of(const attn_problem *p, long seed, size_t nq_el, size_t nkv_el) {
    ref_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, REF_MAGIC, sizeof h.magic);
    h.heads = p->heads, h.kv_heads = p->kv_heads, h.head_dim = p->head_dim;
    h.n_q = p->n_q, h.n_kv = p->n_kv, h.causal = p->causal, h.seed = seed;
    uint64_t c = 0xcbf29ce484222325ULL;
    c = checksum(c, p->q, nq_el);
    c = checksum(c, p->k, nkv_el);
    h.inputs = checksum(c, p->v, nkv_el);
    h.count = nq_el;
    return h;
}

void ref_write(const char *path, const ref_header *h, const double *ref) {
    FILE *f = fopen(path, "wb");
    if (!f) die_arg("--make-ref: cannot write %s", path);
    const int ok = fwrite(h, sizeof *h, 1, f) == 1 &&
                   fwrite(ref, sizeof(double), h->count, f) == h->count;
    if (fclose(f) != 0 || !ok) die_arg("--make-ref: cannot write %s", path);
}

void ref_read(const char *path, const ref_header *want, double *ref) {
    FILE *f = fopen(path, "rb");
    if (!f) die_arg("--ref: cannot read %s", path);
    ref_header got;
    if (fread(&got, sizeof got, 1, f) != 1 || memcmp(got.magic, REF_MAGIC, sizeof got.magic))
        die_arg("--ref: %s is not a reference file", path);
    if (memcmp(&got, want, sizeof got))
        die_arg("--ref: %s was written for another problem or inputs (shape %dx%dx%d, n_q %d, "
                "n_kv %d, seed %lld)", path, got.heads, got.kv_heads, got.head_dim, got.n_q,
                got.n_kv, (long long)got.seed);
    const int ok = fread(ref, sizeof(double), want->count, f) == want->count;
    fclose(f);
    if (!ok) die_arg("--ref: %s is truncated", path);
}
