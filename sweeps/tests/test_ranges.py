"""The workloads' integer arguments are checked at plan time from one description, the kernel
registry's ranges (workloads/kernels.py), and that description is the workloads' own: at
every edge (lo - 1, lo, hi, hi + 1) of every range of every kernel, the planner's answer
is the real binary's under QEMU (issue 19, item 6)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeps.hashes import HashCache
from sweeps.plan import build_plan
from sweeps.spec import SpecError, load_spec
from sweeps.tests.conftest import ROOT
from workloads.kernels import KERNELS, Range, arg_problem, ranges

BUILD = ROOT / "workloads" / "build"
#: edges whose run would cost minutes under QEMU (a 65536-token prefill): the workload's
#: refusal of hi + 1 names its range, which is compared instead
COSTLY = {("n", "hi"), ("l", "hi")}
#: a small problem of each family, as a run's axes
SMALL = {"attention": {"phase": "prefill", "n": 9, "precision": "fp32", "seed": 1},
         "q8": {"proj": "k", "max_rows": 2, "seed": 1},
         "layer": {"phase": "prefill", "n": 2, "seed": 1}}
RANGE_IN_MESSAGE = re.compile(r"\[(-?\d+), (-?\d+)\]")


def edge_cases() -> list[Any]:
    """(kernel, precision, range, edge name, value): each binary and argument once."""
    out, seen = [], set()
    for k in KERNELS.values():
        precisions = ("fp32", "fp16") if k.fp16_binary else ("fp32",)
        for prec in precisions:
            binary = k.binary_for(prec)
            for r in ranges(k.name):
                if (binary, r.axis) in seen:
                    continue
                seen.add((binary, r.axis))
                for edge, v in (("below", r.lo - 1), ("lo", r.lo), ("hi", r.hi),
                                ("above", r.hi + 1)):
                    out.append(pytest.param(k.name, prec, r, edge, v,
                                            id=f"{binary}-{r.axis}-{edge}"))
    return out


EDGES = edge_cases()


def _axes(name: str, prec: str, r: Range, value: int) -> dict[str, Any]:
    k = KERNELS[name]
    axes = {"kernel": name, "model": "tinyllama-1.1b", **SMALL[k.family.name]}
    if prec != "fp32":
        axes["precision"] = prec
    if r.axis == "l":
        axes.update(phase="decode", n=None)
    axes[r.axis] = value
    return axes


@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
@pytest.mark.skipif(not (BUILD / "attention-fa-v").exists(),
                    reason="workloads/build missing: run `make workloads` first")
@pytest.mark.parametrize(("name", "prec", "r", "edge", "value"), EDGES)
def test_planner_and_workload_agree_at_the_edges(name: str, prec: str, r: Range, edge: str,
                                                 value: int) -> None:
    from workloads.kernels import workload_args

    axes = _axes(name, prec, r, value)
    host_ok = arg_problem(axes) is None
    assert host_ok == (edge in ("lo", "hi"))
    if (r.axis, edge) in COSTLY:
        value = r.hi + 1  # ask for one more: the refusal names the range the workload has
        axes[r.axis] = value
    args = workload_args(axes, "none")
    cpu = "rv64,v=true,vlen=256" + (",zvfh=true" if prec == "fp16" else "")
    p = subprocess.run(["qemu-riscv64", "-cpu", cpu, str(BUILD / KERNELS[name].binary_for(prec)),
                        *args], capture_output=True, text=True, timeout=300)
    if (r.axis, edge) in COSTLY:
        m = RANGE_IN_MESSAGE.search(p.stderr)
        assert p.returncode == 2 and m and (int(m[1]), int(m[2])) == (r.lo, r.hi), p.stderr
        return
    assert (p.returncode != 2) == host_ok, (args, p.returncode, p.stderr)
    if host_ok:
        assert p.returncode == 0, p.stderr
        return
    assert r.flag in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    m = RANGE_IN_MESSAGE.search(p.stderr)
    if m:  # the workload says its range: it must be the registry's
        assert (int(m[1]), int(m[2])) == (r.lo, r.hi), p.stderr


# (axis, a value beyond its range, the spec key and text the planner's one line names)
SPEC_CASES = [
    ("n", [4, 70000], "axes.n.1: 70000 is out of range for --n of the attention workload "
                      "(expected 1..65536)"),
    ("l", [2_000_000], "axes.l.0: 2000000 is out of range for --l"),
    ("seed", [1, -1], "axes.seed.1: -1 is out of range for --seed of the attention workload "
                      "(expected 0..2147483647)"),
    ("seed", [2**31], "axes.seed.0: 2147483648 is out of range for --seed"),
    ("unroll", [9], "axes.unroll.0: 9 is out of range for --unroll"),
    ("r", [5], "axes.r.0: 5 is out of range for --r"),
    ("block_r", [70000], "axes.block_r.0: 70000 is out of range for --block-r"),
    ("block_c", [65537], "axes.block_c.0: 65537 is out of range for --block-c"),
    ("strip", [100000], "axes.strip.0: 100000 is out of range for --strip"),
]
Q8_SPEC_CASES = [
    ("max_rows", [2**30 + 1], "axes.max_rows.0: 1073741825 is out of range for --max-rows"),
    ("seed", [2**63], "axes.seed.0: 9223372036854775808 is out of range for --seed of the "
                      "q8 workload"),
]
SPEC_BASE: dict[str, Any] = {
    "name": "r", "target": "qemu",
    "axes": {"vlen": [128], "kernel": ["fa-v"], "model": ["tinyllama-1.1b"],
             "phase": ["prefill", "decode"], "n": [4], "l": [8]}}
Q8_BASE: dict[str, Any] = {
    "name": "r", "target": "qemu",
    "axes": {"vlen": [128], "kernel": ["q8-packed"], "model": ["tinyllama-1.1b"],
             "proj": ["k"], "max_rows": [4]}}


def _plan(tmp_path: Path, body: dict[str, Any]):  # noqa: ANN202
    p = tmp_path / "r.yaml"
    p.write_text(yaml.safe_dump(body))
    spec, path, _ = load_spec(p)
    return build_plan(spec, str(path), HashCache(None))


@pytest.mark.parametrize(("axis", "values", "want"), SPEC_CASES + Q8_SPEC_CASES,
                         ids=[f"{c[0]}={c[1][-1]}" for c in SPEC_CASES + Q8_SPEC_CASES])
def test_out_of_range_spec_value_is_one_line(tmp_path: Path, axis: str, values: list[int],
                                             want: str) -> None:
    base = Q8_BASE if (axis, values, want) in Q8_SPEC_CASES else SPEC_BASE
    body = {**base, "axes": {**base["axes"], axis: values}}
    with pytest.raises(SpecError) as e:
        _plan(tmp_path, body)
    assert want in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert str(e.value).startswith(str(tmp_path / "r.yaml"))


def test_max_rows_beyond_the_layer_runs_and_is_labelled_the_layer(tmp_path: Path) -> None:
    """tinyllama's k projection has 256 rows: max_rows 300 and 5000 are one run of 256
    rows (what q8_main.c computes), labelled 256, and the plan says so."""
    body = {**Q8_BASE, "axes": {**Q8_BASE["axes"], "max_rows": [4, 256, 300, 5000]}}
    plan = _plan(tmp_path, body)
    assert len(plan.points) == 4 and len(plan.runs) == 2
    labels = sorted(r.axes["max_rows"] for r in plan.runs.values())
    assert labels == [4, 256]
    for r in plan.runs.values():
        args = r.run_json["workload"]["args"]
        assert args[args.index("--max-rows") + 1] == str(r.axes["max_rows"])
    assert [w.split(": ", 1)[1] for w in plan.warnings] == [
        "axes.max_rows: 300 is more than the 256 rows of tinyllama-1.1b's k projection: "
        "those runs compute (and are labelled) 256",
        "axes.max_rows: 5000 is more than the 256 rows of tinyllama-1.1b's k projection: "
        "those runs compute (and are labelled) 256"]


@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
@pytest.mark.skipif(not (BUILD / "q8").exists(), reason="workloads/build/q8 missing")
def test_max_rows_beyond_the_layer_is_what_the_workload_computes() -> None:
    import json

    from workloads.kernels import q8_layer_rows
    from workloads.models import load_models

    layer = q8_layer_rows(load_models()["tinyllama-1.1b"], "k")
    p = subprocess.run(["qemu-riscv64", "-cpu", "rv64,v=true,vlen=256", str(BUILD / "q8"),
                        "--kernel", "q8-ggml", "--model", "tinyllama-1.1b", "--proj", "k",
                        "--max-rows", str(layer + 44)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.splitlines()[-1])["rows"] == layer
