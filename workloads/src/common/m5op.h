/* gem5 m5ops on RISC-V, for the region of interest (harness.c's roi_begin/roi_end, and
 * roi_next between the sublayers of a workload with several regions). Header-only: a
 * binary holds only the ones it uses. */
#pragma once
#include "common/harness.h"

/* m5ops on RISC-V: opcode 0x7b with func in bits 31:25, a0 = a1 = 0 (GEM5_NOTES.md).
 * They trap on real hardware and QEMU, hence only with --roi m5.
 * Around the kernel: switch_cpu (0x52) so that set-up and the reference check run on gem5's
 * fast functional CPU and only the kernel on the detailed one (configs/run.py switches on
 * it), then reset_stats; after it dump_stats, then switch back. */
#define M5OP(func) "li a0, 0\n\tli a1, 0\n\t.word " #func "\n\t"
#define M5_SWITCH_CPU M5OP(0xa400007b)
#define M5_RESET_STATS M5OP(0x8000007b)
#define M5_DUMP_STATS M5OP(0x8200007b)

/* Between two regions of interest on the detailed CPU: dump the stats of the one that
 * ends (one more stats dump) and reset them for the next. roi_begin ... roi_next ...
 * roi_next ... roi_end gives one dump per region, in order. No-op without --roi m5. */
static inline void roi_next(roi_mode m) {
    if (m != ROI_M5) return;
    __asm__ volatile(M5_DUMP_STATS M5_RESET_STATS ::: "a0", "a1", "memory");
}
