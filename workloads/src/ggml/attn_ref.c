/* Inputs, double-precision reference and reference files of the attention workloads
 * (see attn_ref.h). Must stay identical in effect to attention/main.c: the tests compare. */
#define _POSIX_C_SOURCE 200809L
#include "ggml/attn_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/harness.h"

static void fill(rng_t *r, float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = rng_uniform(r, -1.0f, 1.0f);
}

void attn_fill_inputs(uint64_t seed, float *q, size_t nq_el, float *k, float *v, size_t nkv_el) {
    rng_t r;
    rng_seed(&r, seed);
    fill(&r, q, nq_el);
    fill(&r, k, nkv_el);
    fill(&r, v, nkv_el);
}

static double *widen(const float *x, size_t n) {
    double *d = malloc(n * sizeof(double));
    if (!d) die_arg("out of memory");
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

void attn_reference(const attn_problem *p, double *out) {
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    double *w = malloc((size_t)p->n_kv * sizeof(double));
    if (!w) die_arg("out of memory");
    double *qd = widen(p->q, (size_t)p->n_q * H * D);
    double *kd = widen(p->k, (size_t)p->n_kv * kv_row);
    double *vd = widen(p->v, (size_t)p->n_kv * kv_row);
    const double scale = 1.0 / sqrt((double)D);
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) {
            const double *q = qd + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < end; j++) { /* scores, scaled, and their maximum */
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
                for (int d = 0; d < D; d++) o[d] += w[j] * v[d];
            }
            for (int d = 0; d < D; d++) o[d] /= sum;
        }
    }
    free(w);
    free(qd);
    free(kd);
    free(vd);
}

static const char MAGIC[8] = "VSREF01";

static uint64_t fnv_words(uint64_t h, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t word;
        memcpy(&word, &x[i], sizeof word);
        h = (h ^ word) * 0x100000001b3ULL;
    }
    return h;
}

attn_ref_header attn_ref_header_of(const attn_problem *p, long seed) {
    const size_t nq_el = (size_t)p->n_q * p->heads * p->head_dim;
    const size_t nkv_el = (size_t)p->n_kv * p->kv_heads * p->head_dim;
    attn_ref_header h;
    memset(&h, 0, sizeof h); /* the padding too: headers are compared as bytes */
    memcpy(h.magic, MAGIC, sizeof h.magic);
    h.heads = p->heads, h.kv_heads = p->kv_heads, h.head_dim = p->head_dim;
    h.n_q = p->n_q, h.n_kv = p->n_kv, h.causal = p->causal, h.seed = seed;
    uint64_t c = fnv_words(0xcbf29ce484222325ULL, p->q, nq_el);
    c = fnv_words(c, p->k, nkv_el);
    h.inputs = fnv_words(c, p->v, nkv_el);
    h.count = nq_el;
    return h;
}

void attn_ref_write(const char *path, const attn_ref_header *h, const double *ref) {
    FILE *f = fopen(path, "wb");
    if (!f) die_arg("--make-ref: cannot write %s", path);
    const int ok = fwrite(h, sizeof *h, 1, f) == 1 &&
                   fwrite(ref, sizeof(double), h->count, f) == h->count;
    if (fclose(f) != 0 || !ok) die_arg("--make-ref: cannot write %s", path);
}

void attn_ref_read(const char *path, const attn_ref_header *want, double *ref) {
    FILE *f = fopen(path, "rb");
    if (!f) die_arg("--ref: cannot read %s", path);
    attn_ref_header got;
    if (fread(&got, sizeof got, 1, f) != 1 || memcmp(got.magic, MAGIC, sizeof got.magic)) {
        fclose(f);
        die_arg("--ref: %s is not a reference file", path);
    }
    if (memcmp(&got, want, sizeof got)) {
        fclose(f);
        die_arg("--ref: %s was written for another problem or inputs (shape %dx%dx%d, n_q %d, "
                "n_kv %d, seed %lld)", path, got.heads, got.kv_heads, got.head_dim, got.n_q,
                got.n_kv, (long long)got.seed);
    }
    const int ok = fread(ref, sizeof(double), want->count, f) == want->count;
    fclose(f);
    if (!ok) die_arg("--ref: %s is truncated", path);
}
