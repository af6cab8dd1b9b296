"""The kernel registry: every kernel a sweep can run, and what the host needs to know of it.

One entry per kernel: its name (the workload's `--kernel`), its family (the workload it
belongs to: argument set, JSON line, reference), the binary sweeps run it from, whether it
is vector code, the options a sweep may vary (each one an axis of a spec) and its role in
the tables. Spec validation, planning, the analysis, the figures and the tests read it from
here; adding a kernel is a C file, a row in its workload's kernel table (main.c,
q8_main.c) and an entry below (README.md, "Adding a kernel").

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tunable:
    """A workload option a sweep may vary: one spec axis, passed as `flag VALUE`."""

    axis: str
    flag: str
    kind: type  # int or str
    choices: tuple[Any, ...] = ()  # allowed values; () = an integer within `bounds`
    doc: str = ""
    #: an integer option's range as the workload checks it (inclusive; the workload's own
    #: check must agree: sweeps/tests/test_ranges.py runs both at the edges)
    bounds: tuple[int, int] | None = None


@dataclass(frozen=True)
class Range:
    """A problem argument's range as the workload checks it (inclusive)."""

    axis: str
    flag: str
    lo: int
    hi: int


#: every tunable, in the order their flags follow the problem arguments on a workload's
#: command line (that order is part of a run's id: append new ones at the end)
TUNABLES: dict[str, Tunable] = {t.axis: t for t in (
    Tunable("block_r", "--block-r", int, doc="fa-v: query tokens per block",
            bounds=(1, 65536)),
    Tunable("block_c", "--block-c", int, doc="fa-v: keys per block (default: auto)",
            bounds=(1, 65536)),
    Tunable("unroll", "--unroll", int, doc="fa-v blocked regime: heads per unrolled group",
            bounds=(1, 8)),
    Tunable("r", "--r", int, doc="fa-v packed regime: registers of packed heads",
            bounds=(1, 4)),
    Tunable("lmul", "--lmul", int, (1, 2, 4), "register grouping (default: auto)"),
    Tunable("regime", "--regime", str, ("auto", "blocked", "packed", "rows", "dot", "heads"),
            "fa-v: auto, blocked, packed, rows, dot or heads"),
    Tunable("strip", "--strip", int, doc="fa-v rows regime: query rows per strip "
                                         "(default: auto)", bounds=(1, 65536)),
    Tunable("pack_x", "--pack-x", str, ("row", "once"),
            "q8-packed: repack the x quants per row or once per call"),
    Tunable("split_mac", "--split-mac", str, ("pair", "sext"),
            "q8-split: int8 pair products or sign-extended int16 multiply-adds"),
    Tunable("fp16", "--fp16", str, ("bits", "table", "zvfh"),
            "q8: block scales decoded by bit manipulation, from a 65536-entry table, or "
            "converted by half-precision hardware (Zfhmin / Zvfh; vector kernels)"),
    Tunable("transpose", "--transpose", str, ("auto", "tile", "strided"),
            "fa-v: K^T, Q^T and O^T copies by tiles in registers or strided accesses"),
    Tunable("attn", "--attn", str, ("ggml-vec", "fa-v", "ggml-scalar"),
            "layer: the attention kernel (default ggml-vec, as llama.cpp; fp16 with "
            "precision fp16)"),
    Tunable("linear", "--linear", str, ("q8-ggml", "q8-packed", "q8-split", "q8-scalar"),
            "layer: the Q8_0 kernel and weight layout of the linear layers (default q8-ggml)"),
    Tunable("k_cache", "--k-cache", str, ("ggml", "transposed"),
            "fa-v: K cache in ggml's layout (copied to K^T per key block) or kept transposed"),
)}


@dataclass(frozen=True)
class Family:
    """A workload: kernels that share one argument set, JSON line and check."""

    name: str  # the JSON line's "workload"
    axes: tuple[str, ...]  # the problem's axes (which of them a point uses: used_axes)
    problem_args: Callable[[Mapping[str, Any]], list[str]]
    used_axes: Callable[[str | None], set[str]]  # phase -> problem axes a run uses
    by_hand: str  # binary with every kernel, built for use by hand and in the tests
    reference_kernel: str | None = None  # computes a sweep's reference files (sweeps/refs.py)
    #: axes removed from this family's points: a q8 point has no phase, so the attention
    #: axes would only repeat it (attention points keep proj and max_rows, which their runs
    #: set to null like every axis a kernel ignores)
    drops: tuple[str, ...] = ()
    #: the integer arguments' ranges as the workload checks them (seed included)
    ranges: tuple[Range, ...] = ()
    #: values the workload lowers to what the problem has, from the run's axes and the
    #: model's shape (models.yaml): {axis: (the value that runs, what limits it)} (q8:
    #: max_rows to the rows of the layer, as q8_main.c does); the planner labels the run
    #: with the value that runs
    lowered: Callable[[Mapping[str, Any], Mapping[str, int]], dict[str, tuple[int, str]]] = \
        lambda _axes, _shape: {}


def _attention_args(axes: Mapping[str, Any]) -> list[str]:
    size = ["--n", str(axes["n"])] if axes["phase"] == "prefill" else ["--l", str(axes["l"])]
    return ["--phase", axes["phase"], *size, "--precision", axes["precision"]]


def _q8_args(axes: Mapping[str, Any]) -> list[str]:
    rows = ["--max-rows", str(axes["max_rows"])] if axes.get("max_rows") is not None else []
    return ["--proj", axes["proj"], *rows]


def q8_layer_rows(shape: Mapping[str, int], proj: str) -> int:
    """Output rows of a model's linear layer (proj_shape in q8_main.c)."""
    qd, kvd = shape["heads"] * shape["head_dim"], shape["kv_heads"] * shape["head_dim"]
    return {"q": qd, "k": kvd, "v": kvd, "o": shape["hidden"], "gate": shape["intermediate"],
            "up": shape["intermediate"], "down": shape["hidden"]}[proj]


def _q8_lowered(axes: Mapping[str, Any], shape: Mapping[str, int]
                ) -> dict[str, tuple[int, str]]:
    rows = axes.get("max_rows")
    if rows is None or axes.get("proj") is None:
        return {}
    layer = q8_layer_rows(shape, axes["proj"])
    what = f"the {layer} rows of {axes['model']}'s {axes['proj']} projection"
    return {"max_rows": (layer, what)} if rows > layer else {}


ATTENTION = Family("attention", ("phase", "precision", "n", "l"), _attention_args,
                   lambda phase: {"phase", "precision", "n" if phase == "prefill" else "l"},
                   by_hand="attention", reference_kernel="ggml-scalar",
                   ranges=(Range("n", "--n", 1, 1 << 16), Range("l", "--l", 1, 1 << 20),
                           Range("seed", "--seed", 0, 2**31 - 1)))
Q8 = Family("q8", ("proj", "max_rows"), _q8_args, lambda _phase: {"proj", "max_rows"},
            by_hand="q8", drops=ATTENTION.axes,
            ranges=(Range("max_rows", "--max-rows", 1, 1 << 30),
                    Range("seed", "--seed", 0, 2**63 - 1)),
            lowered=_q8_lowered)


def _layer_args(axes: Mapping[str, Any]) -> list[str]:
    size = ["--n", str(axes["n"])] if axes["phase"] == "prefill" else ["--l", str(axes["l"])]
    # fp32 is the layer binaries' only precision and they take no --precision: an fp32
    # run's command line (and id) is the one it had before layer-fp16 existed
    prec = ["--precision", "fp16"] if axes.get("precision") == "fp16" else []
    return ["--phase", axes["phase"], *size, *prec]


#: one decoder layer (src/layer): fp32, or an F16 KV cache and fp16 attention in the
#: layer-fp16 binary; a q8 point's axes (proj, max_rows) mean nothing to it
LAYER = Family("layer", ("phase", "precision", "n", "l"), _layer_args,
               lambda phase: {"phase", "precision", "n" if phase == "prefill" else "l"},
               by_hand="layer", drops=("proj", "max_rows"),
               ranges=(Range("n", "--n", 1, 1 << 16), Range("l", "--l", 1, 1 << 20),
                       Range("seed", "--seed", 0, 2**31 - 1)))
FAMILIES: dict[str, Family] = {f.name: f for f in (ATTENTION, Q8, LAYER)}


@dataclass(frozen=True)
class Kernel:
    name: str
    family: Family
    binary: str  # what sweeps run it from; its sha256 is part of the run id
    vector: bool  # False: rv64gc code, so VLEN, lanes and the vector timing do not matter
    tunables: tuple[str, ...] = ()
    baseline: bool = False  # the tables give every kernel of its family a speedup over it
    headline: bool = False  # the kernel the figures follow
    doc: str = field(default="", compare=False)
    #: its fp16 binary (attention-<family>-fp16, layer-fp16: fp16 code never changes an fp32
    #: binary, so never an fp32 run's id); None: no fp16 kernel yet
    fp16_binary: str | None = None
    #: ggml's own kernel (ggml's library, workloads/ggml/README.md): the path it asks ggml
    #: for ("auto": ggml's own choice, "one-row", "tiled"); None: our code, in the family's
    #: by-hand binary
    ggml_path: str | None = None
    #: ggml's own kernel: our kernel that ports it (the fidelity table's pairs)
    port: str | None = None
    #: what the tables call a baseline (default: its name)
    label: str = ""
    #: (axes, model shape) -> why the kernel cannot run at those axes, else None; the
    #: planner drops such points and says so once per kernel (ggml's tiled path)
    limits: Callable[[Mapping[str, Any], Mapping[str, int]], str | None] | None = \
        field(default=None, compare=False)

    def binary_for(self, precision: str = "fp32") -> str:
        """The binary of this kernel at a precision (a family without the precision axis:
        fp32); KeyError when the kernel has none."""
        if precision == "fp32":
            return self.binary
        if precision == "fp16" and self.fp16_binary:
            return self.fp16_binary
        raise KeyError(f"kernel {self.name!r} has no {precision} binary yet")

    def cannot_run(self, axes: Mapping[str, Any], shape: Mapping[str, int]) -> str | None:
        """Why this kernel cannot run at a point's axes (model shape `shape`), else None."""
        return self.limits(axes, shape) if self.limits else None

    @property
    def shown(self) -> str:
        return self.label or self.name


#: ggml tiles (ggml_compute_forward_flash_attn_ext_tiled) from this many query tokens
#: (GGML_FA_TILE_Q) and, built with RVV, only when the head dim is a multiple of
#: GGML_F32_EPR (4); the -tiled kernels refuse other points (src/ggml/ggml_attn.c)
GGML_FA_TILE_Q = 64
GGML_F32_EPR_RVV = 4


def _ggml_tiles(vector: bool) -> Callable[[Mapping[str, Any], Mapping[str, int]], str | None]:
    def why_not(axes: Mapping[str, Any], shape: Mapping[str, int]) -> str | None:
        if axes.get("phase") != "prefill" or (axes.get("n") or 0) < GGML_FA_TILE_Q:
            return f"ggml tiles only prefill with n >= {GGML_FA_TILE_Q}"
        if vector and shape["head_dim"] % GGML_F32_EPR_RVV:
            return f"ggml with RVV tiles only a head dim that is a multiple of {GGML_F32_EPR_RVV}"
        return None
    return why_not


#: fa-v's rows regime under --regime auto: a kv head with at least this many query rows
FAV_ROWS_AUTO_MIN_ROWS = 64


def _fav_rows(axes: Mapping[str, Any], shape: Mapping[str, int]) -> bool:
    """Whether fa-v runs its rows regime at this point (auto's rule, src/attention/fa_v.c)."""
    if axes.get("k_cache") == "transposed":  # read by the blocked regime only
        return False
    regime = axes.get("regime") or "auto"
    if regime != "auto":
        return regime == "rows"
    n_q = (axes.get("n") or 0) if axes.get("phase") == "prefill" else 1
    return n_q * (shape["heads"] // shape["kv_heads"]) >= FAV_ROWS_AUTO_MIN_ROWS


def _fav_limits(axes: Mapping[str, Any], shape: Mapping[str, int]) -> str | None:
    """fa-v in fp16 has every regime but packed (src/attention/fa_v_f16.c), LMUL 1 and, in
    the rows regime only, 2; a transposed K cache is read by the blocked regime only."""
    transposed = axes.get("k_cache") == "transposed"
    fp16 = axes.get("precision") == "fp16"
    if fp16 and axes.get("regime") == "packed":
        return "fa-v has no packed regime in fp16"
    if fp16 and (axes.get("lmul") or 0) > 2:
        return "fa-v in fp16 has LMUL 1 and 2"
    if fp16 and axes.get("lmul") == 2 and not _fav_rows(axes, shape):
        return "fa-v in fp16 has LMUL 2 in the rows regime only"
    if transposed and axes.get("regime") not in (None, "auto", "blocked"):
        return "fa-v reads a transposed K cache in the blocked regime only"
    return None


def _q8_scalar_limits(axes: Mapping[str, Any], _shape: Mapping[str, int]) -> str | None:
    """q8-scalar is rv64gc code: no half-precision hardware (q8_main.c refuses it)."""
    if axes.get("fp16") == "zvfh":
        return "q8-scalar has no vector code for --fp16 zvfh"
    return None


def _layer_limits(axes: Mapping[str, Any], shape: Mapping[str, int]) -> str | None:
    """In the layer only fa-v reads a transposed K cache (the layer's default attention is
    ggml-vec, as llama.cpp's)."""
    if axes.get("k_cache") == "transposed" and axes.get("attn") != "fa-v":
        return "only fa-v reads a transposed K cache (attn: fa-v)"
    return None


KERNELS: dict[str, Kernel] = {k.name: k for k in (
    Kernel("ggml-scalar", ATTENTION, "attention-scalar", vector=False, baseline=True,
           doc="ggml's FlashAttention without vector code",
           fp16_binary="attention-scalar-fp16"),
    Kernel("ggml-vec", ATTENTION, "attention-ggml-vec", vector=True, tunables=("lmul",),
           baseline=True, doc="ggml's one-row RVV kernel, vectorised over D",
           fp16_binary="attention-ggml-vec-fp16"),
    Kernel("fa-v", ATTENTION, "attention-fa-v", vector=True, headline=True,
           tunables=("block_r", "block_c", "unroll", "r", "lmul", "regime", "strip",
                     "transpose", "k_cache"),
           doc="FlashAttention-V: blocked, packed, rows, dot and heads regimes",
           fp16_binary="attention-fa-v-fp16", limits=_fav_limits),
    Kernel("q8-scalar", Q8, "q8-scalar", vector=False, tunables=("fp16",),
           doc="Q8_0 GEMV without vector code", limits=_q8_scalar_limits),
    Kernel("q8-ggml", Q8, "q8", vector=True, tunables=("fp16",),
           doc="ggml's RVV vec_dot, one 32-block per iteration"),
    Kernel("q8-packed", Q8, "q8", vector=True, tunables=("pack_x", "fp16"),
           doc="blocks packed per register, masked per-block reductions (the paper's)"),
    Kernel("q8-split", Q8, "q8", vector=True, tunables=("split_mac", "fp16"),
           doc="row-interleaved tiles, scales kept apart"),
    # ggml's own kernels (workloads/ggml/README.md): no tunables; -onerow forces the path
    # our ports port, -tiled runs only where ggml tiles
    Kernel("ggml-lib-vec", ATTENTION, "attention-ggml-lib", vector=True, baseline=True,
           ggml_path="auto", label="current ggml",
           doc="ggml's own FlashAttention (rv64gcv), the path ggml picks: current ggml"),
    Kernel("ggml-lib-vec-onerow", ATTENTION, "attention-ggml-lib", vector=True,
           ggml_path="one-row", port="ggml-vec", doc="ggml's own one-row kernel (rv64gcv)"),
    Kernel("ggml-lib-vec-tiled", ATTENTION, "attention-ggml-lib", vector=True,
           ggml_path="tiled", limits=_ggml_tiles(vector=True),
           doc="ggml's own tiled kernel (rv64gcv)"),
    Kernel("ggml-lib-scalar", ATTENTION, "attention-ggml-lib-scalar", vector=False,
           ggml_path="auto", doc="ggml's own FlashAttention (rv64gc), the path ggml picks"),
    Kernel("ggml-lib-scalar-onerow", ATTENTION, "attention-ggml-lib-scalar", vector=False,
           ggml_path="one-row", port="ggml-scalar", doc="ggml's own one-row kernel (rv64gc)"),
    Kernel("ggml-lib-scalar-tiled", ATTENTION, "attention-ggml-lib-scalar", vector=False,
           ggml_path="tiled", limits=_ggml_tiles(vector=False),
           doc="ggml's own tiled kernel (rv64gc)"),
    Kernel("q8-ggml-lib", Q8, "q8-ggml-lib", vector=True, ggml_path="auto", port="q8-ggml",
           doc="ggml's own Q8_0 mul_mat (vec_dot_q8_0_q8_0, rv64gcv)"),
    Kernel("q8-ggml-lib-scalar", Q8, "q8-ggml-lib-scalar", vector=False, ggml_path="auto",
           port="q8-scalar", doc="ggml's own Q8_0 mul_mat (rv64gc)"),
    # one decoder layer: the q8 kernels for the linear layers, an attention kernel
    Kernel("layer", LAYER, "layer", vector=True, tunables=("attn", "linear", "k_cache"),
           doc="one decoder layer, nine sublayers (one ROI each): --linear, --attn",
           fp16_binary="layer-fp16",
           limits=_layer_limits),
    Kernel("layer-scalar", LAYER, "layer-scalar", vector=False,
           doc="one decoder layer without vector code (q8-scalar, ggml-scalar)"),
)}

#: axes every kernel reads: what it computes on (model, seed), a planted wrong result, and
#: where its stack lies (a layout, not a result, but it moves cycles)
COMMON_AXES = ("kernel", "model", "seed", "test_perturb", "stack_shift")
#: axes only vector code depends on
VECTOR_AXES = ("vlen", "lanes")


def kernel(name: str) -> Kernel:
    """The registry entry of a kernel; KeyError names the known ones."""
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r} (known: {', '.join(KERNELS)})") from None


def names(family: Family | None = None) -> tuple[str, ...]:
    """Kernel names, of one family or all, in registry order."""
    return tuple(k.name for k in KERNELS.values() if family is None or k.family is family)


def own(family: Family | None = None) -> tuple[str, ...]:
    """Our kernels (not ggml's own), of one family or all: those in the family's by-hand
    binary."""
    return tuple(n for n in names(family) if KERNELS[n].ggml_path is None)


def ports() -> dict[str, str]:
    """ggml's own kernel -> our kernel that ports it."""
    return {k.name: k.port for k in KERNELS.values() if k.port}


def family_of(name: str, default: str = "attention") -> str:
    """The family (workload) name of a kernel; `default` for a name the registry does not
    know (a run recorded by an older version)."""
    k = KERNELS.get(name)
    return k.family.name if k else default


def binaries() -> tuple[str, ...]:
    """Every binary a sweep runs (fp32, then fp16), in registry order."""
    return tuple(dict.fromkeys([*(k.binary for k in KERNELS.values()),
                                *(k.fp16_binary for k in KERNELS.values() if k.fp16_binary)]))


def baselines(family: Family = ATTENTION) -> tuple[Kernel, ...]:
    """The kernels a family's speedups are measured against, scalar first."""
    return tuple(sorted((k for k in KERNELS.values() if k.family is family and k.baseline),
                        key=lambda k: k.vector))


def headline() -> str:
    """The kernel the figures follow (FlashAttention-V)."""
    return next(k.name for k in KERNELS.values() if k.headline)


def used_axes(name: str, phase: str | None) -> set[str]:
    """Axes whose value changes a run of this kernel (and phase): a point's other axes are
    set to null in its run, so points that differ only there share the run."""
    k = kernel(name)
    used = {*COMMON_AXES, *k.family.used_axes(phase), *k.tunables}
    if k.vector:
        used |= set(VECTOR_AXES)
    return used


def ranges(name: str) -> tuple[Range, ...]:
    """Every integer argument of a kernel with the range its workload accepts: the family's
    problem arguments and seed, and the kernel's integer tunables."""
    k = kernel(name)
    own = tuple(Range(t, TUNABLES[t].flag, *TUNABLES[t].bounds) for t in k.tunables
                if TUNABLES[t].bounds is not None)
    return (*k.family.ranges, *own)


def arg_problem(axes: Mapping[str, Any]) -> tuple[str, str] | None:
    """(axis, one line) for the first value of a run's axes its workload would refuse as out
    of range, else None (what the planner checks before a run is made)."""
    k = kernel(axes["kernel"])
    for r in ranges(k.name):
        v = axes.get(r.axis)
        if v is not None and not r.lo <= v <= r.hi:
            return r.axis, (f"{v} is out of range for {r.flag} of the {k.family.name} "
                            f"workload (expected {r.lo}..{r.hi})")
    return None


def workload_args(axes: Mapping[str, Any], roi: str) -> list[str]:
    """The workload's command line for a run's axes (null where the kernel ignores one)."""
    k = kernel(axes["kernel"])
    args = ["--kernel", k.name, "--model", axes["model"], *k.family.problem_args(axes)]
    for name, t in TUNABLES.items():
        if axes.get(name) is not None:
            args += [t.flag, str(axes[name])]
    args += ["--seed", str(axes["seed"])]
    if axes.get("test_perturb"):
        args.append("--test-perturb")
    return [*args, "--roi", roi]
