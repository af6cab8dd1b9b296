#define _POSIX_C_SOURCE 200809L
#include "common/harness.h"
#include "common/m5op.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void die_arg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_BADARG);
}

void args_init(args_t *a, int argc, char **argv) {
    a->argc = argc;
    a->argv = argv;
    a->used = calloc((size_t)argc + 1, 1);
    if (!a->used) die_arg("out of memory");
    a->used[0] = 1;
}

static int find_key(args_t *a, const char *key) {
    for (int i = 1; i < a->argc; i++)
        if (strncmp(a->argv[i], "--", 2) == 0 && strcmp(a->argv[i] + 2, key) == 0) return i;
    return -1;
}

const char *arg_str(args_t *a, const char *key, const char *def) {
    int i = find_key(a, key);
    if (i < 0) return def;
    if (i + 1 >= a->argc) die_arg("--%s: missing value", key);
    a->used[i] = a->used[i + 1] = 1;
    return a->argv[i + 1];
}

long arg_long(args_t *a, const char *key, long def, long min, long max) {
    const char *s = arg_str(a, key, NULL);
    if (!s) return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0') die_arg("--%s: expected an integer, got '%s'", key, s);
    if (v < min || v > max) die_arg("--%s: %ld is out of range [%ld, %ld]", key, v, min, max);
    return v;
}

int arg_flag(args_t *a, const char *key) {
    int i = find_key(a, key);
    if (i < 0) return 0;
    a->used[i] = 1;
    return 1;
}

const char *arg_choice(args_t *a, const char *key, const char *def, const char *const *choices) {
    const char *s = arg_str(a, key, def);
    if (!s) die_arg("--%s is required", key);
    for (const char *const *c = choices; *c; c++)
        if (strcmp(*c, s) == 0) return *c;
    char list[512] = "";
    for (const char *const *c = choices; *c; c++) {
        strncat(list, *c, sizeof list - strlen(list) - 1);
        if (c[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    die_arg("--%s: unknown value '%s' (expected one of: %s)", key, s, list);
}

void args_finish(args_t *a) {
    for (int i = 1; i < a->argc; i++)
        if (!a->used[i]) die_arg("unknown argument '%s'", a->argv[i]);
    free(a->used);
    a->used = NULL;
}

const model_shape *find_model(const char *name) {
    for (int i = 0; i < N_MODELS; i++)
        if (strcmp(MODELS[i].name, name) == 0) return &MODELS[i];
    return NULL;
}

void rng_seed(rng_t *r, uint64_t seed) { r->s = seed * RNG_GAMMA + 1; }

uint64_t rng_u64(rng_t *r) { return rng_mix(r->s += RNG_GAMMA); }

float rng_uniform(rng_t *r, float lo, float hi) { return rng_word_uniform(rng_u64(r), lo, hi); }

void *xaligned(size_t bytes) {
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded == 0) rounded = 64;
    if (posix_memalign(&p, 64, rounded) != 0) {
        fprintf(stderr, "error: cannot allocate %zu bytes\n", bytes);
        exit(EXIT_BADARG);
    }
    memset(p, 0, rounded);
    return p;
}

roi_mode parse_roi(args_t *a) {
    static const char *const modes[] = {"none", "m5", NULL};
    return strcmp(arg_choice(a, "roi", "none", modes), "m5") == 0 ? ROI_M5 : ROI_NONE;
}

/* The m5ops and what they do: common/m5op.h. */
void roi_begin(roi_mode m) {
    if (m != ROI_M5) return;
    __asm__ volatile(M5_SWITCH_CPU M5_RESET_STATS ::: "a0", "a1", "memory");
}

void roi_end(roi_mode m) {
    if (m != ROI_M5) return;
    __asm__ volatile(M5_DUMP_STATS M5_SWITCH_CPU ::: "a0", "a1", "memory");
}

unsigned vlen_bits(void) {
#if defined(__riscv_vector)
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb));
    return (unsigned)(vlenb * 8);
#else
    return 0;
#endif
}

void err_reset(err_stats *e) { memset(e, 0, sizeof *e); }

void err_add(err_stats *e, double got, double ref, double atol, double rtol, double rel_floor) {
    double d = fabs(got - ref);
    double rel = d / fmax(fabs(ref), rel_floor);
    e->n++;
    if (!isfinite(got) || !isfinite(d)) {
        e->n_bad++;
        e->max_abs = e->max_rel = INFINITY;
        return;
    }
    if (d > e->max_abs) e->max_abs = d;
    if (rel > e->max_rel) e->max_rel = rel;
    if (d > atol + rtol * fabs(ref)) e->n_bad++;
}

static int json_first;

void json_begin(void) {
    json_first = 1;
    fputc('{', stdout);
}

static void json_key(const char *k) {
    printf("%s\"%s\": ", json_first ? "" : ", ", k);
    json_first = 0;
}

void json_str(const char *k, const char *v) {
    json_key(k);
    fputc('"', stdout);
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\') fputc('\\', stdout);
        fputc(*c, stdout);
    }
    fputc('"', stdout);
}

void json_int(const char *k, long v) { json_key(k); printf("%ld", v); }

void json_num(const char *k, double v) {
    json_key(k);
    if (isfinite(v)) printf("%.6g", v);
    else fputs("null", stdout); /* JSON has no inf/nan */
}

void json_bool(const char *k, int v) { json_key(k); fputs(v ? "true" : "false", stdout); }

void json_errors(const err_stats *e) {
    json_num("max_abs_err", e->max_abs);
    json_num("max_rel_err", e->max_rel);
    json_int("n_bad", (long)e->n_bad);
}

void json_end(void) {
    fputs("}\n", stdout);
    fflush(stdout);
}

FILE *dump_open(const char *dir, const char *file) {
    mkdir(dir, 0777); /* may already exist */
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "error: --dump: cannot write %s\n", path);
        exit(EXIT_BADARG);
    }
    return f;
}

void dump_array(const char *dir, const char *name, const void *p, size_t bytes) {
    if (!dir) return;
    char file[256];
    snprintf(file, sizeof file, "%s.bin", name);
    FILE *f = dump_open(dir, file);
    if (fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "error: --dump: cannot write %s/%s\n", dir, file);
        exit(EXIT_BADARG);
    }
}
