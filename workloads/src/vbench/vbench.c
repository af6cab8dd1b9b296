/* vbench: timing microbenchmark for the gem5 vector timing models.
 *
 * Runs `--iters` loop iterations of 128 copies of one vector instruction (e32, m1) at a chosen
 * vl, inside the ROI. `--dep chain` makes each copy depend on the previous one (measures
 * result latency); `--dep indep` uses 8 independent destinations (measures issue/occupancy
 * throughput). Cycles per instruction = ROI cycles / (128 * iters), read from stats.txt.
 * The values computed are checked after the ROI like every other workload. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/harness.h"

#if VLSCALE_VECTOR
#include <riscv_vector.h>

enum { UNROLL = 128 }; /* vector instructions per loop iteration */
/* 16 copies of an 8-instruction body: a taken loop branch costs Minor about 2 fetch cycles,
 * which 128 instructions per iteration make a 1.6% effect at one instruction per cycle */
#define X4(b) b b b b
#define X16(b) X4(X4(b))

static const char *const OPS[] = {"vfadd", "vfmacc", "vfredusum", "vslideup",
                                  "vle32", "vse32",  "vsetvli", NULL};
static const char *const DEPS[] = {"chain", "indep", NULL};

/* Eight copies of one instruction; v16/v17 are sources, v8..v15 destinations. */
#define BODY_CHAIN(insn) insn " v8, v8, v16\n\t" insn " v8, v8, v16\n\t" insn " v8, v8, v16\n\t" \
    insn " v8, v8, v16\n\t" insn " v8, v8, v16\n\t" insn " v8, v8, v16\n\t"                      \
    insn " v8, v8, v16\n\t" insn " v8, v8, v16\n\t"
#define BODY_INDEP(insn) insn " v8, v8, v16\n\t" insn " v9, v9, v16\n\t" insn " v10, v10, v16\n\t" \
    insn " v11, v11, v16\n\t" insn " v12, v12, v16\n\t" insn " v13, v13, v16\n\t"                 \
    insn " v14, v14, v16\n\t" insn " v15, v15, v16\n\t"
#define CLOBBERS "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "memory"

/* Runs the loop; returns via out[] the first `vl` elements of v8 (and v9 for slides). */
static void run_arith(const char *op, int chain, long iters, size_t vl, float *out, float *buf) {
    /* v8..v15 = 1.0, v16 = 0.5, v17 = 2.0 */
    __asm__ volatile(
        "vsetvli zero, %[vl], e32, m1, ta, ma\n\t"
        "vle32.v v16, (%[src])\n\t"
        "vfmv.v.f v8, %[one]\n\tvfmv.v.f v9, %[one]\n\tvfmv.v.f v10, %[one]\n\t"
        "vfmv.v.f v11, %[one]\n\tvfmv.v.f v12, %[one]\n\tvfmv.v.f v13, %[one]\n\t"
        "vfmv.v.f v14, %[one]\n\tvfmv.v.f v15, %[one]\n\t"
        "vfmv.v.f v17, %[two]\n\t"
        :
        : [vl] "r"(vl), [src] "r"(buf), [one] "f"(1.0f), [two] "f"(2.0f)
        : CLOBBERS);
    long n = iters;
#define LOOP(body)                                                                    \
    __asm__ volatile("1:\n\t" X16(body) "addi %[n], %[n], -1\n\tbnez %[n], 1b\n\t"                  \
                     : [n] "+r"(n)                                                    \
                     :                                                                \
                     : CLOBBERS)
    if (!strcmp(op, "vfadd")) {
        if (chain) LOOP(BODY_CHAIN("vfadd.vv")); else LOOP(BODY_INDEP("vfadd.vv"));
    } else if (!strcmp(op, "vfmacc")) {
        /* vfmacc.vv vd, vs1, vs2: vd += vs1 * vs2 -> operands (v8, v8, v16) would square;
         * use v16 * v17 instead. */
#define MACC_CHAIN "vfmacc.vv v8, v16, v17\n\t"
#define MACC_INDEP(r) "vfmacc.vv " r ", v16, v17\n\t"
        if (chain)
            LOOP(MACC_CHAIN MACC_CHAIN MACC_CHAIN MACC_CHAIN MACC_CHAIN MACC_CHAIN MACC_CHAIN
                     MACC_CHAIN);
        else
            LOOP(MACC_INDEP("v8") MACC_INDEP("v9") MACC_INDEP("v10") MACC_INDEP("v11")
                     MACC_INDEP("v12") MACC_INDEP("v13") MACC_INDEP("v14") MACC_INDEP("v15"));
    } else if (!strcmp(op, "vfredusum")) {
        /* vfredusum.vs vd, vs2, vs1: vd[0] = vs1[0] + sum(vs2). Chain through v8[0]. */
#define RED_CHAIN "vfredusum.vs v8, v16, v8\n\t"
#define RED_INDEP(r) "vfredusum.vs " r ", v16, " r "\n\t"
        if (chain)
            LOOP(RED_CHAIN RED_CHAIN RED_CHAIN RED_CHAIN RED_CHAIN RED_CHAIN RED_CHAIN RED_CHAIN);
        else
            LOOP(RED_INDEP("v8") RED_INDEP("v9") RED_INDEP("v10") RED_INDEP("v11")
                     RED_INDEP("v12") RED_INDEP("v13") RED_INDEP("v14") RED_INDEP("v15"));
    } else { /* vslideup: vd must differ from vs2; chain v8 -> v9 -> v8 */
#define SL_CHAIN "vslideup.vi v9, v8, 1\n\tvslideup.vi v8, v9, 1\n\t"
#define SL_INDEP(r) "vslideup.vi " r ", v16, 1\n\t"
        if (chain)
            LOOP(SL_CHAIN SL_CHAIN SL_CHAIN SL_CHAIN);
        else
            LOOP(SL_INDEP("v8") SL_INDEP("v9") SL_INDEP("v10") SL_INDEP("v11")
                     SL_INDEP("v12") SL_INDEP("v13") SL_INDEP("v14") SL_INDEP("v15"));
    }
    __asm__ volatile("vse32.v v8, (%[o])\n\t" : : [o] "r"(out) : "memory");
}

/* vsetvli stream: `keep` repeats the same vl/vtype (a well-built core neither stalls nor
 * flushes on it); otherwise vtype alternates between e32,m1 and e32,m2 every instruction.
 * Returns the vl the last one set (the e32,m1 vl). */
static size_t run_vset(int keep, long iters, size_t vl) {
    long n = iters;
    size_t got = 0;
#define VS1 "vsetvli %[g], %[vl], e32, m1, ta, ma\n\t"
#define VS2 "vsetvli %[g], %[vl], e32, m2, ta, ma\n\t"
#define VS_LOOP(a, b)                                                                          \
    __asm__ volatile("1:\n\t" X16(a b a b a b a b)                                              \
                     "addi %[n], %[n], -1\n\tbnez %[n], 1b\n\t"                                 \
                     : [n] "+r"(n), [g] "=&r"(got)                                             \
                     : [vl] "r"(vl))
    if (keep) VS_LOOP(VS1, VS1); else VS_LOOP(VS2, VS1);
    return got;
}

/* Loads or stores stream over a buffer of 8 * vl floats that stays in L1. */
static void run_mem(int store, long iters, size_t vl, float *buf) {
    long n = iters;
    const size_t stride = vl * sizeof(float);
    __asm__ volatile("vsetvli zero, %[vl], e32, m1, ta, ma\n\tvfmv.v.f v16, %[x]\n\t"
                     :
                     : [vl] "r"(vl), [x] "f"(3.0f)
                     : CLOBBERS);
#define ADDR_STEP "add t0, t0, %[st]\n\t"
#define MEM8(insn)                                                                         \
    "mv t0, %[b]\n\t" insn " v8, (t0)\n\t" ADDR_STEP insn " v9, (t0)\n\t" ADDR_STEP insn         \
    " v10, (t0)\n\t" ADDR_STEP insn " v11, (t0)\n\t" ADDR_STEP insn " v12, (t0)\n\t" ADDR_STEP   \
    insn " v13, (t0)\n\t" ADDR_STEP insn " v14, (t0)\n\t" ADDR_STEP insn " v15, (t0)\n\t"
#define MEM_LOOP(insn)                                                                     \
    __asm__ volatile("1:\n\t" X16(MEM8(insn))                                                 \
                     "addi %[n], %[n], -1\n\tbnez %[n], 1b\n\t"                               \
                     : [n] "+r"(n)                                                          \
                     : [b] "r"(buf), [st] "r"(stride)                                       \
                     : "t0", CLOBBERS)
    if (store) {
        /* store v16 (= 3.0) everywhere */
        __asm__ volatile("vmv.v.v v8, v16\n\tvmv.v.v v9, v16\n\tvmv.v.v v10, v16\n\t"
                         "vmv.v.v v11, v16\n\tvmv.v.v v12, v16\n\tvmv.v.v v13, v16\n\t"
                         "vmv.v.v v14, v16\n\tvmv.v.v v15, v16\n\t" ::: CLOBBERS);
        MEM_LOOP("vse32.v");
    } else {
        MEM_LOOP("vle32.v");
        /* fold the loaded registers into buf[0..vl) to check them */
        __asm__ volatile("vfadd.vv v8, v8, v15\n\tvse32.v v8, (%[b])\n\t"
                         :
                         : [b] "r"(buf)
                         : CLOBBERS);
    }
}

/* One function on purpose: the steps in the order they run. A gem5-gated test checks
 * the stored table (configs/data/vbench.csv) cycle for cycle, and splitting this moves
 * code and with it the timed loops' addresses, so it is split when that table is
 * regenerated, not before. */
int main(int argc, char **argv) {
    args_t a;
    args_init(&a, argc, argv);
    const char *op = arg_choice(&a, "op", NULL, OPS);
    const char *dep = arg_choice(&a, "dep", "indep", DEPS);
    long iters = arg_long(&a, "iters", 1000, 1, 100000000);
    const char *vl_arg = arg_str(&a, "vl", "max");
    roi_mode roi = parse_roi(&a);
    int perturb = arg_flag(&a, "test-perturb");
    args_finish(&a);

    const size_t vlmax = __riscv_vsetvlmax_e32m1();
    size_t vl;
    if (!strcmp(vl_arg, "max")) vl = vlmax;
    else if (!strcmp(vl_arg, "half")) vl = vlmax / 2 ? vlmax / 2 : 1;
    else {
        char *end;
        long v = strtol(vl_arg, &end, 10);
        if (*end || v < 1 || (size_t)v > vlmax)
            die_arg("--vl: expected max, half or 1..%zu, got '%s'", vlmax, vl_arg);
        vl = (size_t)v;
    }
    const int chain = !strcmp(dep, "chain");
    const int is_mem = !strcmp(op, "vle32") || !strcmp(op, "vse32");
    const int is_vset = !strcmp(op, "vsetvli");
    if (is_mem && chain) die_arg("--dep chain: not defined for %s (use indep)", op);

    float *buf = xaligned(8 * vlmax * sizeof(float));
    float *out = xaligned(vlmax * sizeof(float));
    for (size_t i = 0; i < 8 * vlmax; i++) buf[i] = 0.5f; /* v16 source for arith ops */

    size_t vset_vl = 0;
    roi_begin(roi);
    if (is_mem) run_mem(!strcmp(op, "vse32"), iters, vl, buf);
    else if (is_vset) vset_vl = run_vset(!chain, iters, vl);
    else run_arith(op, chain, iters, vl, out, buf);
    roi_end(roi);

    /* Expected values (all exact in fp32 for the iteration counts allowed here). */
    err_stats e;
    err_reset(&e);
    const double k = (double)UNROLL * (double)iters; /* chained updates */
    const double m = (double)(UNROLL / 8) * (double)iters; /* updates per register, indep */
    if (perturb) out[0] += 1.0f, buf[0] += 1.0f;
    for (size_t i = 0; i < vl; i++) {
        double got, want;
        if (!strcmp(op, "vfadd")) { got = out[i]; want = 1.0 + (chain ? k : m) * 0.5; }
        else if (!strcmp(op, "vfmacc")) { got = out[i]; want = 1.0 + (chain ? k : m); }
        else if (!strcmp(op, "vfredusum")) {
            if (i > 0) break; /* only element 0 is defined */
            got = out[0];
            want = 1.0 + (chain ? k : m) * 0.5 * (double)vl;
        } else if (!strcmp(op, "vslideup")) {
            /* vslideup by 1 keeps element 0 of vd and shifts the source up. */
            got = out[i];
            want = chain ? 1.0 : (i == 0 ? 1.0 : 0.5);
        } else if (is_vset) {
            if (i > 0) break; /* one value: the vl set */
            got = (double)vset_vl + (perturb ? 1.0 : 0.0);
            want = (double)vl;
        } else if (!strcmp(op, "vle32")) { got = buf[i]; want = 1.0; }
        else { got = buf[i]; want = 3.0; }
        err_add(&e, got, want, 1e-3 * fabs(want), 0.0, 1.0);
    }
    const int pass = e.n > 0 && e.n_bad == 0;
    json_begin();
    json_str("workload", "vbench");
    json_str("op", op);
    json_str("dep", dep);
    json_int("iters", iters);
    json_int("vl", (long)vl);
    json_int("insts", (long)(UNROLL * iters));
    json_int("vlen", (long)vlen_bits());
    json_errors(&e);
    json_bool("pass", pass);
    json_end();
    return pass ? EXIT_OK : EXIT_WRONG;
}
#else
int main(void) {
    die_arg("vbench needs the vector build");
}
#endif
