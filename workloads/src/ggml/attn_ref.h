/* The attention workloads' inputs, double-precision reference and reference files, as a
 * library. attention/main.c keeps its own copies (moving them would change every attention
 * binary, and with it the id of every stored run); the tests check that both write the
 * same inputs and byte-identical reference files, and that each reads the other's. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "attention/attn.h"

/* Q, K, V uniform in [-1, 1] from the harness rng, in that order (as attention/main.c). */
void attn_fill_inputs(uint64_t seed, float *q, size_t nq_el, float *k, float *v, size_t nkv_el);

/* Softmax attention in double precision from the fp32 inputs: out[n_q][heads][D]. */
void attn_reference(const attn_problem *p, double *out);

/* Reference files ("VSREF01"): a header naming the problem, the seed and a checksum of the
 * generated inputs, then the doubles. A file for another problem is refused (exit 2). */
typedef struct {
    char magic[8];
    int32_t heads, kv_heads, head_dim, n_q, n_kv, causal;
    int64_t seed;
    uint64_t inputs; /* FNV-1a over the 32-bit words of Q, K and V as generated */
    uint64_t count;  /* doubles that follow */
} attn_ref_header;

attn_ref_header attn_ref_header_of(const attn_problem *p, long seed);
void attn_ref_write(const char *path, const attn_ref_header *h, const double *ref);
void attn_ref_read(const char *path, const attn_ref_header *want, double *ref);
