/* Running one ggml graph as a measured kernel: the graph is built and planned, its work
 * buffer and a one-thread threadpool allocated, before the region of interest; only
 * ggml_graph_compute runs inside it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "common/harness.h"
#include "ggml-cpu.h"
#include "ggml.h"

typedef struct {
    struct ggml_context *ctx; /* tensor and graph metadata only (no_alloc): data is ours */
    struct ggml_cgraph *graph;
    struct ggml_threadpool *pool;
    struct ggml_cplan plan;
} vsggml_run;

/* A context for up to n_tensors tensor descriptions and one graph; ggml_cpu_init first. */
void vsggml_begin(vsggml_run *r, int n_tensors);
/* Builds the graph that computes `out`, plans it for one thread and allocates its work
 * buffer. use_ref: ggml's reference implementations only (cplan.use_ref, as
 * ggml_backend_cpu_set_use_ref sets it). */
void vsggml_plan(vsggml_run *r, struct ggml_tensor *out, bool use_ref);
/* ROI: [roi_begin] ggml_graph_compute [roi_end]. Exits 1 with a line on stderr when ggml
 * reports a failure (after roi_end). */
void vsggml_compute(vsggml_run *r, roi_mode roi);
void vsggml_end(vsggml_run *r);

/* The build's identity fields of the result line: ggml_version, ggml_source, ggml_march,
 * ggml_flags (the exact compile flags of ggml-base and ggml-cpu, from the build). */
void vsggml_json_build(void);
