"""Names shared by the host code and configs/run.py: gem5 op classes and their vector-unit
groups, timing models, memory types, run statuses, targets.

A leaf: standard library only and nothing of ours, so gem5's embedded Python can import it
(configs/run.py puts the repository on sys.path) and every host module can without a cycle.
Kernel names live in the kernel registry (workloads/kernels.py).
"""

from __future__ import annotations

import os

# ----------------------------------------------------------------------------- gem5

#: gem5 v24.0.0.1 OpClass names, in the order of src/cpu/FuncUnit.py (OpClass.vals); the
#: same set as the `static const OpClass ...Op` constants in src/cpu/op_class.hh
GEM5_OP_CLASSES: tuple[str, ...] = (
    "No_OpClass", "IntAlu", "IntMult", "IntDiv",
    "FloatAdd", "FloatCmp", "FloatCvt", "FloatMult", "FloatMultAcc", "FloatDiv", "FloatMisc",
    "FloatSqrt",
    "SimdAdd", "SimdAddAcc", "SimdAlu", "SimdCmp", "SimdCvt", "SimdMisc", "SimdMult",
    "SimdMultAcc", "SimdMatMultAcc", "SimdShift", "SimdShiftAcc", "SimdDiv", "SimdSqrt",
    "SimdFloatAdd", "SimdFloatAlu", "SimdFloatCmp", "SimdFloatCvt", "SimdFloatDiv",
    "SimdFloatMisc", "SimdFloatMult", "SimdFloatMultAcc", "SimdFloatMatMultAcc",
    "SimdFloatSqrt",
    "SimdReduceAdd", "SimdReduceAlu", "SimdReduceCmp", "SimdFloatReduceAdd",
    "SimdFloatReduceCmp",
    "SimdAes", "SimdAesMix", "SimdSha1Hash", "SimdSha1Hash2", "SimdSha256Hash",
    "SimdSha256Hash2", "SimdShaSigma2", "SimdShaSigma3", "SimdPredAlu",
    "Matrix", "MatrixMov", "MatrixOP",
    "MemRead", "MemWrite", "FloatMemRead", "FloatMemWrite", "IprAccess", "InstPrefetch",
    "SimdUnitStrideLoad", "SimdUnitStrideStore", "SimdUnitStrideMaskLoad",
    "SimdUnitStrideMaskStore", "SimdStridedLoad", "SimdStridedStore", "SimdIndexedLoad",
    "SimdIndexedStore", "SimdWholeRegisterLoad", "SimdWholeRegisterStore",
    "SimdUnitStrideFaultOnlyFirstLoad", "SimdUnitStrideSegmentedLoad",
    "SimdUnitStrideSegmentedStore", "SimdExt", "SimdFloatExt", "SimdConfig",
)  # fmt: skip

#: every vector (Simd*) class: what committedInstType counts as a vector micro-op
SIMD_CLASSES: tuple[str, ...] = tuple(c for c in GEM5_OP_CLASSES if c.startswith("Simd"))

#: vector memory classes (stock gem5 sends them to MinorDefaultMemFU, not the FloatSimd FU)
VECTOR_MEM_CLASSES: frozenset[str] = frozenset(
    c for c in SIMD_CLASSES if c.endswith("Load") or c.endswith("Store"))

#: class groups of the lanes timing model
LANE_GROUPS: tuple[str, ...] = ("arith", "mul", "fma", "div", "reduce", "permute")

#: the classes the gem5 patch gives a vector unit (VecTiming::unitOf in gem5-patches/0003)
#: and their default group: vector arithmetic, reductions and SimdMisc (RISC-V slides,
#: gathers, merges and moves go to the slide unit). Vector memory keeps gem5's LSQ timing
#: and SimdConfig (vset*vl*) its op latency, so neither has a group.
DEFAULT_LANE_GROUPS: dict[str, str] = {
    **{
        c: "arith"
        for c in (
            "SimdAdd", "SimdAddAcc", "SimdAlu", "SimdCmp", "SimdCvt", "SimdShift",
            "SimdShiftAcc", "SimdExt", "SimdPredAlu", "SimdFloatAdd", "SimdFloatAlu",
            "SimdFloatCmp", "SimdFloatCvt", "SimdFloatMisc", "SimdFloatExt",
        )
    },
    **{c: "mul" for c in ("SimdMult", "SimdFloatMult")},
    **{
        c: "fma"
        for c in ("SimdMultAcc", "SimdMatMultAcc", "SimdFloatMultAcc", "SimdFloatMatMultAcc")
    },
    **{c: "div" for c in ("SimdDiv", "SimdSqrt", "SimdFloatDiv", "SimdFloatSqrt")},
    **{
        c: "reduce"
        for c in (
            "SimdReduceAdd", "SimdReduceAlu", "SimdReduceCmp", "SimdFloatReduceAdd",
            "SimdFloatReduceCmp",
        )
    },
    "SimdMisc": "permute",
}  # fmt: skip

#: the classes with a vector unit: the lanes model times them, the vl-scaled model stretches
#: their latency with VLEN, and the patch's elementBits stat counts their elements only
VECTOR_UNIT_CLASSES: frozenset[str] = frozenset(DEFAULT_LANE_GROUPS)

#: MinorDefaultFloatSimdFU.opLat in gem5 v24.0.0.1: a vector class no op_latency lists
STOCK_FLOAT_SIMD_LATENCY = 6

#: the vector memory rate of a uarch without a `core` block: one 64-byte cache-line
#: fragment per cycle, the Minor LSQ's rate (its data interface is a cache line wide)
MEM_BYTES_PER_CYCLE = 64

#: Minor pipeline parameters a uarch's optional `core` block sets: key -> (BaseMinorCPU
#: parameter, gem5 v24.0.0.1's stock value, src/cpu/minor/BaseMinorCPU.py). A uarch without
#: `core` leaves them all stock (configs/run.py sets nothing). `memory_width` is
#: executeMemoryWidth in bytes: the LSQ splits every access at this width and sends one
#: fragment per cycle, so it is the vector memory rate (stock 0 means the cache line, 64)
MINOR_CORE_PARAMS: dict[str, tuple[str, int]] = {
    "decode_width": ("decodeInputWidth", 2),
    "execute_input_width": ("executeInputWidth", 2),
    "issue_limit": ("executeIssueLimit", 2),
    "memory_issue_limit": ("executeMemoryIssueLimit", 1),
    "commit_limit": ("executeCommitLimit", 2),
    "memory_commit_limit": ("executeMemoryCommitLimit", 1),
    "memory_width": ("executeMemoryWidth", MEM_BYTES_PER_CYCLE),
}
#: MinorDefaultFUPool's integer ALUs (MinorDefaultIntFU) in gem5 v24.0.0.1; `core.int_alus`
#: sets their number
STOCK_INT_ALUS = 2

#: vector timing models of gem5-patches/ (BaseMinorCPU.vecTimingModel)
TIMING_MODELS: tuple[str, ...] = ("fixed", "vl-scaled", "lanes")
#: timing models whose latencies do not depend on the lane count
LANE_FREE_TIMING_MODELS: frozenset[str] = frozenset({"fixed"})

#: DRAM interface -> the memory system of gem5 v24's standard library that configs/run.py
#: builds for it (src/python/gem5/components/memory/single_channel.py; DDR5 comes as a
#: two-channel DIMM there)
MEMORY_TYPES: dict[str, str] = {
    "DDR3_1600_8x8": "SingleChannelDDR3_1600",
    "DDR3_2133_8x8": "SingleChannelDDR3_2133",
    "DDR4_2400_8x8": "SingleChannelDDR4_2400",
    "LPDDR3_1600_1x32": "SingleChannelLPDDR3_1600",
    "HBM_1000_4H_1x128": "SingleChannelHBM",
    "DDR5_4400_4x8": "DIMM_DDR5_4400",
    "DDR5_6400_4x8": "DIMM_DDR5_6400",
    "DDR5_8400_4x8": "DIMM_DDR5_8400",
}

#: DRAM interfaces of gem5 v24's standard library that single_channel has no factory for:
#: name (the interface class) -> (its module under gem5/components/memory/dram_interfaces/,
#: channels). configs/run.py builds ChanneledMemory(class, channels, 64, size) for them.
#: LPDDR5-5500 x16: one 16-bit channel, 11 GB/s (gem5 has no LPDDR4/4X interface)
CHANNELED_MEMORY_TYPES: dict[str, tuple[str, int]] = {
    "LPDDR5_5500_1x16_BG_BL32": ("lpddr5", 1),
}
#: every memory type a uarch file may name
ALL_MEMORY_TYPES: tuple[str, ...] = (*MEMORY_TYPES, *CHANNELED_MEMORY_TYPES)

#: the simulated stack keeps its 16-byte alignment, so a stack shift moves it by exactly
#: that many bytes (configs/stack_layout.py)
STACK_SHIFT_ALIGN = 16

# ----------------------------------------------------------------------------- runs

#: where a run executes: gem5 (cycles) or qemu-user (functional only)
TARGETS: tuple[str, ...] = ("gem5", "qemu")
#: VLENs qemu-user 7.2 runs (vlen=128..1024)
QEMU_VLENS: tuple[int, ...] = (128, 256, 512, 1024)

#: a run's verdict in status.json (sweeps/README.md, "A run folder")
STATUSES: tuple[str, ...] = ("ok", "wrong-result", "gem5-error", "timeout", "killed",
                             "missing-stats", "bad-args", "crashed")
#: not results: the run was stopped (Ctrl-C, SIGTERM, its driver gone) before it ended, so a
#: plain `run` runs it again; every other status is a verdict that stays until --retry-failed
RESUMED: frozenset[str] = frozenset({"killed"})
FAILED: frozenset[str] = frozenset(STATUSES) - {"ok"} - RESUMED
#: what a planned run can be instead of a verdict: no status.json (or no folder), files that
#: cannot be read or parsed, a status this version does not know. `vecscale status` and the
#: report count and name every such run by id (sweeps/states.py, analysis/completeness.py)
MISSING, CORRUPT, UNKNOWN_STATUS = "missing", "corrupt", "unknown status"
RUN_PROBLEMS: tuple[str, ...] = (MISSING, CORRUPT, UNKNOWN_STATUS)

#: a kept archive (`python -m analysis compact`, read back by `collect` and `run --from`):
#: a sweep's runs in one file, each run as these JSON files and its compacted ROI dump. xz,
#: because the runs' files differ little from run to run and xz's dictionary spans them all
RUNS_ARCHIVE = "runs.tar.xz"
#: what kept archives were called before; read, never written, so older ones still load
LEGACY_RUNS_ARCHIVES: tuple[str, ...] = ("runs.tar.gz",)
KEPT_RUN_FILES: tuple[str, ...] = ("run.json", "status.json", "result.json")
ROI_ONLY_STATS = "stats.roi.txt"

# ----------------------------------------------------------------------------- files

#: the repository (this file is vecscale/vocab.py)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def runs_archive(folder: str | os.PathLike[str]) -> str | None:
    """The kept archive in folder (RUNS_ARCHIVE, else a legacy name), or None."""
    for name in (RUNS_ARCHIVE, *LEGACY_RUNS_ARCHIVES):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def workload_dir() -> str:
    """Where the workload binaries are: $VECSCALE_WORKLOADS (the tests put stand-ins there),
    else workloads/build. run.json names a binary only by file name."""
    return os.environ.get("VECSCALE_WORKLOADS") or os.path.join(REPO, "workloads", "build")


def gem5_config() -> str:
    """The script gem5 runs: $VECSCALE_GEM5_CONFIG (tests), else configs/run.py."""
    return os.environ.get("VECSCALE_GEM5_CONFIG") or os.path.join(REPO, "configs", "run.py")
