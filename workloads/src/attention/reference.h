/* The double-precision reference an attention kernel is checked against (outside the
 * region of interest), and reference files: --make-ref writes one, --ref reads one. The
 * reference depends only on the problem and the inputs, so a sweep computes it once per
 * shape and seed on a fast simulator instead of after every measured kernel. The header
 * names the problem and a checksum of the generated inputs; a file for anything else is
 * refused. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "attention/attn.h"

typedef struct {
    char magic[8];
    int32_t heads, kv_heads, head_dim, n_q, n_kv, causal;
    int64_t seed;
    uint64_t inputs; /* checksum of Q, K and V as generated */
    uint64_t count;  /* doubles that follow */
} ref_header;

void attn_reference(const attn_problem *p, double *out); /* out: n_q x heads x D doubles */
ref_header ref_header_of(const attn_problem *p, long seed, size_t nq_el, size_t nkv_el);
void ref_write(const char *path, const ref_header *h, const double *ref);
void ref_read(const char *path, const ref_header *want, double *ref); /* exits when wrong */
