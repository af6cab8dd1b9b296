/* ggml-scalar: ggml's FlashAttention row algorithm with no vector code.
 * Per query token, per head: walk the visible keys once with an online softmax
 * (running max M, running sum S, accumulator acc[D]); rescale only on a new maximum. */
#include <math.h>

#include "attention/attn.h"

void attn_ggml_scalar(const attn_problem *p) {
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) {
            const float *q = p->q + ((size_t)i * H + h) * D;
            float *acc = p->o + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            float M = -INFINITY, S = 0.0f;
            for (int d = 0; d < D; d++) acc[d] = 0.0f;
            for (int j = 0; j < end; j++) {
                const float *k = p->k + (size_t)j * kv_row + kvo;
                const float *v = p->v + (size_t)j * kv_row + kvo;
                float s = 0.0f;
                for (int d = 0; d < D; d++) s += q[d] * k[d];
                s *= p->scale;
                float ms = 1.0f, vs = 1.0f;
                if (s > M) { /* new maximum: rescale what was accumulated so far */
                    ms = expf(M - s);
                    M = s;
                    for (int d = 0; d < D; d++) acc[d] *= ms;
                } else {
                    vs = expf(s - M);
                }
                for (int d = 0; d < D; d++) acc[d] += vs * v[d];
                S = S * ms + vs;
            }
            const float inv = 1.0f / S;
            for (int d = 0; d < D; d++) acc[d] *= inv;
        }
    }
}
