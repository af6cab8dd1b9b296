/* Shared workload harness: argument parsing, deterministic inputs, ROI m5ops, results.
 * Every workload binary: parse args -> build inputs -> [ROI] kernel [/ROI] -> reference
 * -> compare -> one JSON line -> exit code (0 ok, 1 wrong result, 2 bad arguments). */
#pragma once
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "models.h"

enum { EXIT_OK = 0, EXIT_WRONG = 1, EXIT_BADARG = 2 };

/* ---- arguments: "--key value" pairs and bare "--flag" switches ---- */
typedef struct {
    int argc;
    char **argv;
    unsigned char *used; /* which argv entries were consumed, to reject unknown ones */
} args_t;

void args_init(args_t *a, int argc, char **argv);
const char *arg_str(args_t *a, const char *key, const char *def);
long arg_long(args_t *a, const char *key, long def, long min, long max);
int arg_flag(args_t *a, const char *key);
const char *arg_choice(args_t *a, const char *key, const char *def, const char *const *choices);
void args_finish(args_t *a); /* fails on any argument nobody asked for */
void die_arg(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

const model_shape *find_model(const char *name); /* NULL if unknown */

/* ---- deterministic inputs (splitmix64; identical on every host and VLEN) ---- */
typedef struct { uint64_t s; } rng_t;
void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_u64(rng_t *r);
float rng_uniform(rng_t *r, float lo, float hi);

/* splitmix64's step: the k-th draw after state s is rng_mix(s + k * RNG_GAMMA), so a batch
 * of draws can be computed independently of each other (layer_main.c's rng_words). */
#define RNG_GAMMA 0x9E3779B97F4A7C15ull
#define RNG_MUL1 0xBF58476D1CE4E5B9ull /* the output function's two multipliers */
#define RNG_MUL2 0x94D049BB133111EBull
#define RNG_UNIT (1.0 / 9007199254740992.0) /* 2^-53: a draw's top 53 bits as [0, 1) */

/* splitmix64's output function of a state */
static inline uint64_t rng_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * RNG_MUL1;
    z = (z ^ (z >> 27)) * RNG_MUL2;
    return z ^ (z >> 31);
}

/* rng_uniform's value for the draw z */
static inline float rng_word_uniform(uint64_t z, float lo, float hi) {
    double u = (double)(z >> 11) * RNG_UNIT;
    return (float)(lo + (hi - lo) * u);
}

void *xaligned(size_t bytes); /* 64-byte aligned, zeroed; exits on failure */

/* ---- region of interest ---- */
typedef enum { ROI_NONE, ROI_M5 } roi_mode;
roi_mode parse_roi(args_t *a);
void roi_begin(roi_mode m); /* m5 reset_stats */
void roi_end(roi_mode m);   /* m5 dump_stats */

/* ---- machine facts ---- */
unsigned vlen_bits(void); /* from vlenb; 0 in a scalar (rv64gc) build */

/* ---- error statistics and the JSON result line ---- */
typedef struct {
    double max_abs, max_rel; /* rel = |x-ref| / max(|ref|, rel_floor) */
    size_t n_bad;            /* elements outside tolerance (or non-finite) */
    size_t n;
} err_stats;
void err_reset(err_stats *e);
void err_add(err_stats *e, double got, double ref, double atol, double rtol, double rel_floor);

/* JSON builder for the single result line: json_begin(); json_* ...; json_end(). */
void json_begin(void);
void json_str(const char *k, const char *v);
void json_int(const char *k, long v);
void json_num(const char *k, double v);
void json_bool(const char *k, int v);
void json_end(void);
/* The error fields every workload reports: max_abs_err, max_rel_err, n_bad. */
void json_errors(const err_stats *e);

/* ---- independent check: raw dumps for the tests' numpy reference ---- */
/* Writes `bytes` from `p` to <dir>/<name>.bin; dir NULL = no dump. */
void dump_array(const char *dir, const char *name, const void *p, size_t bytes);
/* Opens <dir>/<file> for writing (creating dir); exits with a one-line error if it can't. */
FILE *dump_open(const char *dir, const char *file);
