/* ggml-scalar in fp16: ggml's one-row FlashAttention with an F16 KV cache, built without
 * any vector or half-precision instruction (rv64gc: no Zfh, no Zfhmin), which is how
 * ggml's generic C paths run there:
 *  - the query row is converted fp32 -> fp16 once per row (ggml: from_float of K's dot
 *    type), with the FPU doing the rounding (f32_to_f16, common/f16.h);
 *  - a score is the dot of two fp16 rows: each product is taken in fp32 from widened
 *    halves (exact: 11 x 11 significant bits) and summed in double, then stored as fp32
 *    (ggml_vec_dot_f16's scalar path, whose sum is a ggml_float);
 *  - scale, running max M, sum S and expf stay fp32 scalars;
 *  - the value accumulator is fp16 (ggml's VKQ16 when V is F16): a rescale is
 *    acc = f16(f32(acc) * ms), an update acc = f16(f32(acc) + f32(v) * vs), both in fp32
 *    with ms and vs kept in fp32 and the result rounded to fp16 per element and key;
 *  - fp16 -> fp32 is a lookup in a 65536-entry table (256 KiB), as ggml's CPU backend does
 *    without Zfhmin; the table is filled outside the region of interest (ggml: at init);
 *  - at the end the accumulator is widened to fp32, multiplied by 1/S and (our harness's
 *    fp16 output; ggml writes an F32 dst here) rounded to fp16 into O. */
#include <math.h>

#include "attention/attn.h"
#include "common/f16.h"

void attn_ggml_scalar_f16(const attn_problem_f16 *pf) {
    const attn_problem *p = pf->p;
    const int H = p->heads, D = p->head_dim, group = p->heads / p->kv_heads;
    const size_t kv_row = (size_t)p->kv_heads * D;
    const float *tab = pf->f16_table;
    attn_f16 *qh = pf->q_row, *acc = pf->acc16;
    float *acc32 = pf->acc32;
    for (int i = 0; i < p->n_q; i++) {
        const int end = attn_kv_end(p, i);
        for (int h = 0; h < H; h++) {
            const float *q = p->q + ((size_t)i * H + h) * D;
            const size_t kvo = (size_t)(h / group) * D;
            for (int d = 0; d < D; d++) qh[d] = f32_to_f16(q[d]);
            for (int d = 0; d < D; d++) acc[d] = 0; /* +0.0 in fp16 */
            float M = -INFINITY, S = 0.0f;
            for (int j = 0; j < end; j++) {
                const attn_f16 *k = pf->k + (size_t)j * kv_row + kvo;
                const attn_f16 *v = pf->v + (size_t)j * kv_row + kvo;
                double dot = 0.0;
                for (int d = 0; d < D; d++) dot += (double)(tab[k[d]] * tab[qh[d]]);
                const float s = (float)dot * p->scale;
                float ms = 1.0f, vs = 1.0f;
                if (s > M) { /* new maximum: rescale what was accumulated so far */
                    ms = expf(M - s);
                    M = s;
                    for (int d = 0; d < D; d++) acc[d] = f32_to_f16(tab[acc[d]] * ms);
                } else {
                    vs = expf(s - M);
                }
                for (int d = 0; d < D; d++) acc[d] = f32_to_f16(tab[acc[d]] + tab[v[d]] * vs);
                S = S * ms + vs;
            }
            for (int d = 0; d < D; d++) acc32[d] = tab[acc[d]];
            const float inv = 1.0f / S;
            for (int d = 0; d < D; d++) acc32[d] *= inv;
            attn_f16 *o = pf->o + ((size_t)i * H + h) * D;
            for (int d = 0; d < D; d++) o[d] = f32_to_f16(acc32[d]);
        }
    }
}
