"""The kernel registry (workloads/kernels.py) against the workloads themselves: every kernel
it names is in its binary, every option a workload reads is a sweep axis or listed here as
not one (with the reason), every tunable reaches the workload and is accepted, and ggml's
own kernels ask ggml for the path the registry says and run exactly where it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT, qemu_run

from workloads.kernels import (
    ATTENTION,
    FAMILIES,
    KERNELS,
    TUNABLES,
    Family,
    Kernel,
    kernel,
    own,
    workload_args,
)
from workloads.models import load_models

SOURCES = {"attention": ROOT / "workloads/src/attention/main.c",
           "q8": ROOT / "workloads/src/q8/q8_main.c",
           "layer": ROOT / "workloads/src/layer/layer_main.c"}
#: the workloads of ggml's own kernels (one source, two binaries each)
GGML_SOURCES = {"attention": ROOT / "workloads/src/ggml/ggml_attn.c",
                "q8": ROOT / "workloads/src/ggml/ggml_q8.c"}
GGML_KERNELS = [k for k in KERNELS.values() if k.ggml_path is not None]
HARNESS = ROOT / "workloads/src/common/harness.c"
OPTION = re.compile(r'\barg_\w+\(&?a, "([a-z0-9-]+)"')
#: a row of a kernel table that names the kernel's own option (q8_main.c)
OWN_OPTION = re.compile(r'= \{"[a-z0-9-]+", \w+, "([a-z0-9-]+)", \w+\}')

#: options a workload reads that are not sweep axes, and why
NOT_AXES = {
    "heads": "a custom shape instead of --model (by hand and in the tests)",
    "kv-heads": "a custom shape", "head-dim": "a custom shape",
    "rows": "a custom shape", "cols": "a custom shape",
    "dump": "writes the inputs and outputs for the tests' numpy checks",
    "ref": "the precomputed reference a gem5 run reads (configs/run.py adds it)",
    "make-ref": "computes a reference instead of running a kernel (sweeps/refs.py)",
}

#: a small problem of each family, as the planner's axes (and the other phase's)
PROBLEM = {"attention": {"phase": "prefill", "n": 9, "precision": "fp32"},
           "q8": {"proj": "k", "max_rows": 4},
           "layer": {"phase": "decode", "l": 9, "precision": "fp32"}}
#: (the layer's other one in fp16, whose binary takes --precision)
OTHER = {"attention": {"phase": "decode", "l": 9}, "q8": {},
         "layer": {"phase": "prefill", "n": 2, "precision": "fp16"}}
#: the families with a workload on ggml's own kernels
GGML_FAMILIES = [f for f in FAMILIES.values() if f.name in GGML_SOURCES]


def source_text(path: Path) -> str:
    """A workload's main and the main_*.h parts it includes once (attention/main.c)."""
    parts = [path, *sorted(path.parent.glob(f"{path.stem}_*.h"))]
    return "".join(p.read_text() for p in parts)


def options(family: Family, sources: dict[str, Path] = SOURCES) -> set[str]:
    text = source_text(sources[family.name])
    return {*OPTION.findall(text), *OWN_OPTION.findall(text),
            *OPTION.findall(HARNESS.read_text())}


def planned_flags(family: Family) -> set[str]:
    """Every flag the planner can put on this family's command line."""
    axes = {"kernel": next(k for k in KERNELS.values() if k.family is family).name,
            "model": "tinyllama-1.1b", "seed": 1, "test_perturb": True, **PROBLEM[family.name],
            **{name: t.choices[0] if t.choices else 1 for name, t in TUNABLES.items()}}
    flags = set()
    for problem in ({}, OTHER[family.name]):
        args = workload_args({**axes, **problem}, "none")
        flags |= {a[2:] for a in args if a.startswith("--")}
    return flags


@pytest.mark.parametrize("family", FAMILIES.values(), ids=list(FAMILIES))
def test_every_workload_option_is_an_axis_or_says_why_not(family: Family) -> None:
    read = options(family)
    assert read, f"no options found in {SOURCES[family.name]}"
    unexplained = read - planned_flags(family) - set(NOT_AXES)
    assert not unexplained, (f"{family.name} reads {sorted(unexplained)}: add a tunable to "
                             "workloads/kernels.py or a reason to NOT_AXES")


@pytest.mark.parametrize("family", GGML_FAMILIES, ids=[f.name for f in GGML_FAMILIES])
def test_every_ggml_workload_option_is_an_axis_or_says_why_not(family: Family) -> None:
    """ggml's own workloads read no option a sweep cannot give or NOT_AXES does not explain
    (they take no tunable: the registry gives their kernels none)."""
    read = options(family, GGML_SOURCES)
    assert read, f"no options found in {GGML_SOURCES[family.name]}"
    unexplained = read - planned_flags(family) - set(NOT_AXES)
    assert not unexplained, f"{GGML_SOURCES[family.name]} reads {sorted(unexplained)}"


@pytest.mark.parametrize("name", KERNELS)
def test_tunables_are_options_of_their_workload(name: str) -> None:
    k = kernel(name)
    flags = {TUNABLES[t].flag[2:] for t in k.tunables}
    assert flags <= options(k.family, GGML_SOURCES if k.ggml_path else SOURCES)


def tunable_cases() -> list:
    return [pytest.param(k.name, t, v, id=f"{k.name}-{t}={v}") for k in KERNELS.values()
            for t in k.tunables
            for v in (TUNABLES[t].choices or (2,))]


@pytest.mark.parametrize(("name", "tunable", "value"), tunable_cases())
def test_each_tunable_value_is_accepted(name: str, tunable: str, value: object) -> None:
    """What a sweep passes for a tunable runs and passes its self-check (on the binary
    sweeps use for the kernel), or, where the registry's limits drop the point (the
    layer's transposed K cache with its default ggml-vec attention, q8-scalar's --fp16 zvfh),
    is refused (exit 2)."""
    k = kernel(name)
    axes = {"kernel": name, "model": "tinyllama-1.1b", "seed": 1, **PROBLEM[k.family.name],
            tunable: value}
    res = qemu_run(k.binary, workload_args(axes, "none"), vlen=512, zvfh=value == "zvfh")
    if k.cannot_run(axes, load_models()["tinyllama-1.1b"]):
        assert res.rc == 2, (res.rc, res.stderr)
        return
    assert res.rc == 0, res.stderr
    assert res.record["kernel"] == name and res.record["pass"] is True


def test_family_axes_reach_the_command_line() -> None:
    args = workload_args({"kernel": "fa-v", "model": "m", "seed": 3, "phase": "decode",
                          "l": 7, "precision": "fp32", "n": None, "strip": 64}, "m5")
    assert args == ["--kernel", "fa-v", "--model", "m", "--phase", "decode", "--l", "7",
                    "--precision", "fp32", "--strip", "64", "--seed", "3", "--roi", "m5"]
    assert ATTENTION.reference_kernel in KERNELS


def test_own_kernels_are_in_the_by_hand_binaries() -> None:
    """own(): the kernels the by-hand binaries hold (the tests of attention and q8 run them
    there); ggml's own kernels run from their own binaries only."""
    for family in FAMILIES.values():
        table = SOURCES[family.name].read_text()
        for name in own(family):
            assert f'"{name}"' in table, f"{name} not in {SOURCES[family.name]}"
    assert {k.name for k in GGML_KERNELS}.isdisjoint(own())
    assert all(k.binary not in {f.by_hand for f in FAMILIES.values()} for k in GGML_KERNELS)


def _point(k: Kernel) -> dict:
    """A small point where the kernel runs (ggml tiles from 64 query tokens)."""
    problem = dict(PROBLEM[k.family.name])
    if k.cannot_run({**problem, "model": "tinyllama-1.1b"}, load_models()["tinyllama-1.1b"]):
        problem["n"] = 64
    return {"kernel": k.name, "model": "tinyllama-1.1b", "seed": 1, **problem}


@pytest.mark.parametrize("k", GGML_KERNELS, ids=[k.name for k in GGML_KERNELS])
def test_ggml_kernel_runs_the_path_the_registry_names(k: Kernel) -> None:
    """What a sweep passes reaches ggml's workload, passes its self-check and asks ggml for
    the registry's path (a port's pair is of the same family)."""
    res = qemu_run(k.binary, workload_args(_point(k), "none"), vlen=512)
    assert res.rc == 0, res.stderr
    rec = res.record
    assert rec["kernel"] == k.name and rec["pass"] is True and rec["ggml_version"]
    assert rec.get("ggml_path_asked", "auto") == k.ggml_path
    assert k.port is None or kernel(k.port).family is k.family
    assert k.port is None or kernel(k.port).vector == k.vector


#: points on both sides of where ggml tiles: (phase, size) (the layer's limit, the models
#: it builds: tests/test_layer.py)
TILE_EDGES = [("prefill", 63), ("prefill", 64), ("decode", 64), ("decode", 520)]
LIMITED = [k for k in KERNELS.values() if k.limits is not None and k.ggml_path]


@pytest.mark.parametrize(("phase", "size"), TILE_EDGES, ids=[f"{p}-{s}" for p, s in TILE_EDGES])
@pytest.mark.parametrize("k", LIMITED, ids=[k.name for k in LIMITED])
def test_limits_are_the_workloads(k: Kernel, phase: str, size: int) -> None:
    """The registry's limits (what the planner drops) refuse exactly what the binary
    refuses (exit 2), and allow what it runs."""
    model = "pythia-410m"
    axes = {"kernel": k.name, "model": model, "seed": 1, "precision": "fp32", "phase": phase,
            "n": size if phase == "prefill" else None, "l": size if phase == "decode" else None}
    why = k.cannot_run(axes, load_models()[model])
    res = qemu_run(k.binary, workload_args(axes, "none"), vlen=256)
    assert res.rc == (2 if why else 0), (why, res.rc, res.stderr)
    assert bool(why) == (phase != "prefill" or size < 64)


#: (regime, lmul, phase, size, refused): fp16 fa-v has no packed regime, LMUL 1 and 2, and
#: LMUL 2 only where its rows regime runs (auto: a kv head with >= 64 query rows)
FAV16_LIMITS = [
    ("packed", None, "prefill", 8, True), ("rows", None, "prefill", 8, False),
    ("rows", 2, "prefill", 8, False), ("rows", 4, "prefill", 8, True),
    ("blocked", 2, "prefill", 8, True), ("auto", 2, "prefill", 8, True),
    ("auto", 2, "prefill", 64, False), ("auto", 2, "decode", 40, True),
    ("auto", 1, "decode", 40, False),
]


@pytest.mark.parametrize(("regime", "lmul", "phase", "size", "refused"), FAV16_LIMITS,
                         ids=[f"{r}-lmul{m}-{p}{s}" for r, m, p, s, _ in FAV16_LIMITS])
def test_fav_fp16_limit_is_the_workload(regime: str, lmul: int | None, phase: str, size: int,
                                        refused: bool) -> None:
    """fa-v's fp16 registry limits are what attention-fa-v-fp16 refuses (exit 2)."""
    k = kernel("fa-v")
    axes = {"kernel": "fa-v", "model": "pythia-410m", "seed": 1, "precision": "fp16",
            "phase": phase, "n": size if phase == "prefill" else None,
            "l": size if phase == "decode" else None, "regime": regime, "lmul": lmul}
    why = k.cannot_run(axes, load_models()["pythia-410m"])
    assert bool(why) == refused, why
    if regime == "packed":
        assert k.cannot_run({**axes, "precision": "fp32"}, load_models()["pythia-410m"]) is None
    res = qemu_run(k.binary_for("fp16"), workload_args(axes, "none"), vlen=256, zvfh=True)
    assert res.rc == (2 if why else 0), (why, res.rc, res.stderr)


@pytest.mark.parametrize(("precision", "regime"), [
    ("fp32", "auto"), ("fp32", "blocked"), ("fp32", "rows"), ("fp32", "heads"),
    ("fp16", "auto"), ("fp16", "blocked"), ("fp16", "rows"), ("fp16", "heads")])
def test_fav_k_cache_limit_is_the_workload(precision: str, regime: str) -> None:
    """fa-v's transposed K cache, in both precisions: the blocked regime only; the registry
    drops exactly the points its binaries refuse (exit 2)."""
    k = kernel("fa-v")
    axes = {"kernel": "fa-v", "model": "qwen2.5-0.5b", "seed": 1, "precision": precision,
            "phase": "decode", "n": None, "l": 30, "regime": regime, "k_cache": "transposed"}
    why = k.cannot_run(axes, load_models()["qwen2.5-0.5b"])
    assert bool(why) == (regime not in ("auto", "blocked"))
    res = qemu_run(k.binary_for(precision), workload_args(axes, "none"), vlen=256,
                   zvfh=precision == "fp16")
    assert res.rc == (2 if why else 0), (why, res.rc, res.stderr)
