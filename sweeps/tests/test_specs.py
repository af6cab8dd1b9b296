"""Spec validation (one-line errors), schema export, dedupe and run identity."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeps.hashes import HashCache
from sweeps.plan import build_plan
from sweeps.spec import SCHEMA_FILE, SpecError, load_spec, schema_text
from sweeps.tests.conftest import ROOT

GOOD_Q: dict[str, Any] = {
    "name": "t", "target": "qemu",
    "axes": {"vlen": [128, 256], "kernel": ["fa-v", "ggml-scalar"], "model": ["tinyllama-1.1b"],
             "phase": ["prefill", "decode"], "n": [4], "l": [16]}}
GOOD_G: dict[str, Any] = {
    "name": "g", "target": "gem5",
    "axes": {"uarch": ["paper-fixed", "vitruvius-plus"], "vlen": [512, 1024],
             "lanes": [8, 16], "kernel": ["fa-v", "ggml-scalar"], "model": ["tinyllama-1.1b"],
             "phase": ["prefill"], "n": [8]}}


def with_(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    import copy

    d = copy.deepcopy(base)
    keys = path.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur[k]
    if value is DELETE:
        del cur[keys[-1]]
    else:
        cur[keys[-1]] = value
    return d


DELETE = object()

# (id, spec text or dict, substrings the one-line error must contain)
BAD: list[tuple[str, Any, list[str]]] = [
    ("yaml-syntax", "name: x\naxes: [1, 2\n", ["line", "YAML syntax error"]),
    ("not-mapping", "- 1\n- 2\n", ["(top level)", "mapping"]),
    ("unknown-top-key", with_(GOOD_Q, "colour", "red"), ["colour", "unknown key"]),
    ("unknown-axis", with_(GOOD_Q, "axes.vlenn", [128]), ["axes.vlenn", "unknown key"]),
    ("empty-axis", with_(GOOD_Q, "axes.vlen", []), ["axes.vlen", "must not be empty"]),
    ("missing-target", with_(GOOD_Q, "target", DELETE), ["target", "required"]),
    ("bad-target", with_(GOOD_Q, "target", "fpga"), ["target", "gem5"]),
    ("missing-kernel", with_(GOOD_Q, "axes.kernel", DELETE), ["axes.kernel", "required"]),
    ("unknown-kernel", with_(GOOD_Q, "axes.kernel", ["fa-x"]), ["axes.kernel.0", "fa-x"]),
    ("unknown-model", with_(GOOD_Q, "axes.model", ["gpt-5"]), ["axes.model.0", "gpt-5",
                                                               "models.yaml"]),
    ("vlen-string", with_(GOOD_Q, "axes.vlen", ["512"]), ["axes.vlen.0", "integer"]),
    ("stack-shift-qemu", with_(GOOD_Q, "axes.stack_shift", [0]),
     ["axes.stack_shift", "only for target gem5"]),
    ("stack-shift-unaligned", with_(GOOD_G, "axes.stack_shift", [0, 8]),
     ["axes.stack_shift.1", "multiple of 16"]),
    ("vlen-not-list", with_(GOOD_Q, "axes.vlen", 512), ["axes.vlen", "list"]),
    ("lmul-3", with_(GOOD_Q, "axes.lmul", [1, 3]), ["axes.lmul.1", "1, 2 or 4"]),
    ("regime-unknown", with_(GOOD_Q, "axes.regime", ["tiled"]), ["axes.regime.0"]),
    ("vlen-not-pow2", with_(GOOD_Q, "axes.vlen", [384]), ["axes.vlen.0", "power of two"]),
    ("vlen-negative", with_(GOOD_Q, "axes.vlen", [-128]), ["axes.vlen.0", "positive"]),
    ("qemu-vlen-2048", with_(GOOD_Q, "axes.vlen", [2048]), ["axes.vlen.0", "1024"]),
    ("qemu-lanes", with_(GOOD_Q, "axes.lanes", [8]), ["axes.lanes", "qemu"]),
    ("qemu-uarch", with_(GOOD_Q, "axes.uarch", ["paper-fixed"]), ["axes.uarch", "qemu"]),
    ("gem5-no-uarch", with_(GOOD_G, "axes.uarch", DELETE), ["axes.uarch", "required"]),
    ("gem5-no-lanes", with_(GOOD_G, "axes.lanes", DELETE), ["axes.lanes", "required"]),
    ("unknown-uarch", with_(GOOD_G, "axes.uarch", ["ara9"]), ["axes.uarch.0", "ara9"]),
    ("uarch-forbids-vlen", with_(GOOD_G, "axes.vlen", [512, 65536]), ["axes.vlen", "65536"]),
    ("phase-missing", with_(GOOD_Q, "axes.phase", DELETE), ["axes.phase", "required"]),
    ("prefill-needs-n", with_(GOOD_Q, "axes.n", DELETE), ["axes.n", "prefill"]),
    ("decode-needs-l", with_(GOOD_Q, "axes.l", DELETE), ["axes.l", "decode"]),
    ("q8-needs-proj", with_(GOOD_Q, "axes.kernel", ["q8-ggml"]), ["axes.proj", "q8"]),
    ("bad-proj", with_(with_(GOOD_Q, "axes.kernel", ["q8-ggml"]), "axes.proj", ["qkv"]),
     ["axes.proj.0", "qkv"]),
    ("bad-phase", with_(GOOD_Q, "axes.phase", ["train"]), ["axes.phase.0", "prefill"]),
    ("duplicate-values", with_(GOOD_Q, "axes.vlen", [128, 128]), ["axes.vlen", "duplicate"]),
    ("exclude-unknown-axis", with_(GOOD_Q, "exclude", [{"kernal": "fa-v"}]),
     ["exclude.0.kernal", "unknown axis"]),
    ("exclude-empty", with_(GOOD_Q, "exclude", [{}]), ["exclude.0", "empty"]),
    ("exclude-everything", with_(GOOD_Q, "exclude", [{"vlen": [128, 256]}]),
     ["exclude", "no point"]),
    ("include-only-nothing", with_(GOOD_Q, "include_only", [{"model": "pythia-410m"}]),
     ["include_only", "no point"]),
    ("bad-name", with_(GOOD_Q, "name", "../evil"), ["name", "pattern"]),
    ("timeout-negative", with_(GOOD_Q, "timeout_s", -1), ["timeout_s", "greater than 0"]),
    ("perturb-not-bool", with_(GOOD_Q, "axes.test_perturb", ["yes"]),
     ["axes.test_perturb.0", "boolean"]),
    ("estimate-bad-key", with_(GOOD_Q, "estimate_s", {"fa-x/prefill": 3}),
     ["estimate_s.fa-x/prefill", "kernel"]),
]


@pytest.mark.parametrize("case,body,want", BAD, ids=[b[0] for b in BAD])
def test_bad_spec_one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str,
                                 body: Any, want: list[str]) -> None:
    p = tmp_path / f"{case}.yaml"
    p.write_text(body if isinstance(body, str) else yaml.safe_dump(body))
    monkeypatch.setenv("GEM5", str(p))  # any file: the gem5 hash is not what is being tested
    with pytest.raises(SpecError) as e:
        spec, path, _ = load_spec(p)
        build_plan(spec, str(path), HashCache(None))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(p)), msg
    for w in want:
        assert w in msg, (w, msg)


def test_bad_spec_cli_no_traceback(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(with_(GOOD_Q, "axes.vlen", [4096])))
    r = subprocess.run([sys.executable, "-m", "sweeps", "plan", str(p)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "axes.vlen.0" in r.stderr
    r = subprocess.run([sys.executable, "-m", "sweeps", "plan", "no-such-sweep"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no-such-sweep.yaml" in r.stderr and "smoke" in r.stderr


def test_shipped_specs_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    names = sorted(f.stem for f in (ROOT / "sweeps").glob("*.yaml"))
    assert {"smoke", "edge", "block-c", "paper", "qemu-validate", "qemu-ci"} <= set(names)
    for name in names:
        spec, path, _ = load_spec(name)
        plan = build_plan(spec, str(path), HashCache(None))
        assert spec.name == name and plan.runs
        if name == "block-c":  # the tunable reaches the workload's command line
            args = [r.run_json["workload"]["args"] for r in plan.runs.values()]
            blocks = {a[a.index("--block-c") + 1] for a in args}
            assert blocks == {"16", "32", "64", "128"}


def test_schema_up_to_date() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), \
        "sweeps/schema/sweep.schema.json is stale: run `python -m sweeps schema`"


def plan_of(body: dict[str, Any], tmp_path: Path):  # noqa: ANN201
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(body))
    spec, path, _ = load_spec(p)
    return build_plan(spec, str(path), HashCache(None))


def test_dedupe_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    plan = plan_of(GOOD_G, tmp_path)
    # fa-v: paper-fixed ignores lanes (2 vlens), vitruvius-plus 2x2; ggml-scalar ignores
    # vlen/lanes/timing: one run per machine
    vec = [r for r in plan.runs.values() if r.kernel == "fa-v"]
    sca = [r for r in plan.runs.values() if r.kernel == "ggml-scalar"]
    assert len(vec) == 2 + 4
    assert 1 <= len(sca) <= 2
    assert len(plan.points) == 2 * 2 * 2 * 2
    assert all(rid in plan.runs for _, rid in plan.points)
    for r in sca:
        assert r.axes["vlen"] is None and r.axes["lanes"] is None
    fixed = [r for r in vec if r.axes["timing_model"] == "fixed"]
    assert fixed and all(r.axes["lanes"] is None for r in fixed)
    # prefill ignores l, decode ignores n
    plan = plan_of(with_(GOOD_Q, "axes.l", [16, 32]), tmp_path)
    pre = [r for r in plan.runs.values() if r.phase == "prefill"]
    assert len(pre) == 2 + 1  # fa-v at two VLENs, scalar once
    assert all(r.axes["l"] is None and r.axes["n"] == 4 for r in pre)


def test_identity_changes_with_inputs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    a = set(plan_of(GOOD_G, tmp_path).runs)
    assert a == set(plan_of(GOOD_G, tmp_path).runs)  # deterministic
    other = tmp_path / "gem5-other.opt"
    other.write_bytes(b"different gem5")
    monkeypatch.setenv("GEM5", str(other))
    assert not a & set(plan_of(GOOD_G, tmp_path).runs)  # new gem5 binary: all new runs
    q = plan_of(GOOD_Q, tmp_path)
    assert all(len(rid) == 16 for rid in q.runs)
    ex = plan_of(with_(GOOD_Q, "exclude", [{"kernel": "ggml-scalar", "phase": "decode"}]),
                 tmp_path)
    assert len(ex.points) == len(q.points) - 2 and set(ex.runs) < set(q.runs)


def test_plan_10k_runs_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    body = with_(GOOD_G, "axes", {
        "uarch": ["vitruvius-plus", "paper-vl-scaled"], "vlen": [512, 1024, 2048, 4096, 8192],
        "lanes": [8, 16, 32, 64], "kernel": ["fa-v", "ggml-vec"],
        "model": ["tinyllama-1.1b", "llama-3.2-1b", "llama-3.2-3b", "qwen2.5-0.5b",
                  "qwen2.5-1.5b", "qwen2.5-3b", "pythia-410m"],
        "phase": ["prefill"], "n": [16 * (i + 1) for i in range(18)]})
    t0 = time.perf_counter()
    plan = plan_of(body, tmp_path)
    dt = time.perf_counter() - t0
    assert len(plan.runs) == 10080
    assert dt < 6, f"planning 10k runs took {dt:.2f} s (goal < 2 s on an idle host)"


def test_gem5_runs_get_a_fixed_stack_layout(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """Every gem5 run carries the stack layout configs/run.py pads to; a shift is part of
    the run's identity, and QEMU runs have none."""
    from sweeps.runjson import STACK_AREA

    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    plain = plan_of(GOOD_G, tmp_path)
    for r in plain.runs.values():
        assert r.run_json["workload"]["stack"] == {"area": STACK_AREA, "shift": 0}
    shifted = plan_of(with_(GOOD_G, "axes.stack_shift", [0, 32]), tmp_path)
    assert len(shifted.runs) == 2 * len(plain.runs)
    assert set(plain.runs) < set(shifted.runs)  # shift 0 is the default: the same runs
    shifts = {r.run_json["workload"]["stack"]["shift"] for r in shifted.runs.values()}
    assert shifts == {0, 32}
    q = plan_of(GOOD_Q, tmp_path)
    assert all("stack" not in r.run_json["workload"] for r in q.runs.values())


def test_registry_tunables_are_axes_of_their_kernels_only(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """The Q8_0 options are axes: a run gets the flag when its kernel has the option, the
    other kernels' runs are shared across its values, and a spec without the axis plans
    the same runs as before the axis existed."""
    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    q8 = with_(GOOD_Q, "axes", {"vlen": [128], "kernel": ["q8-ggml", "q8-packed", "q8-split"],
                                "model": ["tinyllama-1.1b"], "proj": ["k"]})
    plain = plan_of(q8, tmp_path)
    axes = {**q8["axes"], "pack_x": ["row", "once"], "split_mac": ["pair", "sext"],
            "fp16": ["bits", "table"]}
    swept = plan_of(with_(q8, "axes", axes), tmp_path)
    args = {r.kernel: [] for r in swept.runs.values()}
    for r in swept.runs.values():
        args[r.kernel].append(r.run_json["workload"]["args"])
    assert len(args["q8-ggml"]) == 2 and len(args["q8-packed"]) == len(args["q8-split"]) == 4
    assert all("--pack-x" not in a and "--split-mac" not in a for a in args["q8-ggml"])
    assert {a[a.index("--pack-x") + 1] for a in args["q8-packed"]} == {"row", "once"}
    assert {a[a.index("--split-mac") + 1] for a in args["q8-split"]} == {"pair", "sext"}
    assert all("--fp16" in a for k in args for a in args[k])
    assert not set(plain.runs) & set(swept.runs)  # every swept run passes --fp16
    bad = with_(q8, "axes", {**q8["axes"], "strip": [0]})
    with pytest.raises(SpecError, match="axes.strip.0: expected a positive integer"):
        plan_of(bad, tmp_path)


def test_fp16_runs_use_fp16_binaries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """precision fp16 runs each attention kernel from its fp16 family binary and checks it
    against the reference of fp16-rounded inputs (made by attention-scalar-fp16); adding the
    fp16 axis value leaves every fp32 run, its id and its reference as they were; a kernel
    without an fp16 binary (ggml's own kernels) is a one-line error unless excluded."""
    from sweeps.refs import ref_binary
    from sweeps.runner import command
    from workloads.kernels import kernel

    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    body = with_(GOOD_G, "axes.kernel", ["ggml-vec", "ggml-scalar"])
    fp32 = plan_of(body, tmp_path)
    both = plan_of(with_(body, "axes.precision", ["fp32", "fp16"]), tmp_path)
    assert set(fp32.runs) < set(both.runs) and len(both.runs) == 2 * len(fp32.runs)
    for rid, r in both.runs.items():
        prec, wl = r.axes["precision"], r.run_json["workload"]
        assert wl["binary"] == kernel(r.kernel).binary_for(prec)
        assert wl["binary"].endswith("-fp16") == (prec == "fp16")
        assert ref_binary(wl["ref"]["args"]) == kernel("ggml-scalar").binary_for(prec)
        if prec == "fp32":
            assert wl["ref"] == fp32.runs[rid].run_json["workload"]["ref"]
    fav = plan_of(with_(with_(body, "axes.kernel", ["fa-v"]), "axes.precision",
                        ["fp32", "fp16"]), tmp_path)
    for r in fav.runs.values():  # fa-v in fp16 runs from its own binary
        assert r.run_json["workload"]["binary"] == \
            {"fp32": "attention-fa-v", "fp16": "attention-fa-v-fp16"}[r.axes["precision"]]
    assert {r.axes["precision"] for r in fav.runs.values()} == {"fp32", "fp16"}
    packed = plan_of(with_(with_(with_(body, "axes.kernel", ["fa-v"]), "axes.precision",
                                 ["fp32", "fp16"]), "axes.regime", ["packed"]), tmp_path)
    assert {r.axes["precision"] for r in packed.runs.values()} == {"fp32"}  # fp16 dropped
    lib = with_(with_(GOOD_G, "axes.precision", ["fp32", "fp16"]), "axes.kernel",
                ["ggml-lib-vec"])
    with pytest.raises(SpecError,
                       match=r"axes\.precision: kernel 'ggml-lib-vec' has no fp16 binary"):
        plan_of(lib, tmp_path)
    assert plan_of(with_(lib, "exclude", [{"precision": "fp16"}]), tmp_path).runs
    q = plan_of(with_(with_(GOOD_Q, "axes.kernel", ["ggml-vec"]), "axes.precision",
                      ["fp32", "fp16"]), tmp_path)
    for r in q.runs.values():  # QEMU runs fp16 vector code with zvfh=true, fp32 as before
        cpu = command(dict(r.run_json), str(tmp_path))[0][2]
        assert cpu.endswith(",zvfh=true") == (r.axes["precision"] == "fp16")
