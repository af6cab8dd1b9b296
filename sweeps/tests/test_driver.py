"""End-to-end tests of the driver: real driver, runner and executor processes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sweeps.tests.conftest import ROOT, Fakes, real_gem5
from vecscale.vocab import LEGACY_RUNS_ARCHIVES, RUNS_ARCHIVE
from workloads.kernels import kernel

BUILD = ROOT / "workloads" / "build"
REAL_GEM5 = real_gem5()


def attn(**over: Any) -> dict[str, Any]:
    axes: dict[str, Any] = {"vlen": [128], "kernel": ["fa-v"], "model": ["tinyllama-1.1b"],
                            "phase": ["prefill"], "n": [4]}
    axes.update(over)
    return axes


def by_seed(sts: dict[str, dict]) -> dict[tuple[int, bool], str]:
    out = {}
    for v in sts.values():
        args = v["run"]["workload"]["args"]
        out[(int(args[args.index("--seed") + 1]), "--test-perturb" in args)] = \
            v["status"]["status"]
    return out


@pytest.mark.skipif(not (BUILD / "attention").exists() or not (BUILD / "q8").exists(),
                    reason="workloads/build/attention missing: run `make workloads` first")
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
def test_qemu_ci_real_binaries(fakes: Fakes) -> None:
    fakes.use_real_workloads()
    r = fakes.cli("run", "qemu-ci", "--results", str(fakes.results), "-j", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    sts = fakes.statuses("qemu-ci")
    assert len(sts) == 13
    for rid, v in sts.items():
        st, run = v["status"], v["run"]
        assert st["status"] == "ok", (rid, st)
        res = json.loads((fakes.results / "qemu-ci" / "runs" / rid / "result.json").read_text())
        assert res["pass"] is True and res["max_abs_err"] >= 0
        assert res["kernel"] == run["axes"]["kernel"]
        if kernel(run["axes"]["kernel"]).vector:
            assert res["vlen"] == run["qemu"]["vlen"] == run["axes"]["vlen"]
        assert st["provenance"]["workload_sha256"] == run["workload"]["sha256"]
    points = json.loads((fakes.results / "qemu-ci" / "points.json").read_text())
    assert len(points) == 20 and {p["run"] for p in points} == set(sts)
    done = (fakes.results / "qemu-ci").glob("runs/*/status.json")
    mtimes = {p: p.stat().st_mtime_ns for p in done}
    r = fakes.cli("run", "qemu-ci", "--results", str(fakes.results))
    assert r.returncode == 0 and "13 already done, 0 to run" in r.stdout
    assert mtimes == {p: p.stat().st_mtime_ns for p in mtimes}
    r = fakes.cli("plan", "qemu-ci", "--results", str(fakes.results))
    assert "done 13, failed 0, to run 0" in r.stdout, r.stdout


@pytest.mark.skipif(not (BUILD / "attention").exists(),
                    reason="workloads/build/attention missing: run `make workloads` first")
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
def test_real_workload_perturbed_is_wrong_result(fakes: Fakes) -> None:
    fakes.use_real_workloads()
    spec = fakes.spec("perturb", axes=attn(kernel=["fa-v", "ggml-vec"],
                                           test_perturb=[False, True], vlen=[256]))
    r = fakes.cli("run", str(spec), "--results", str(fakes.results))
    assert r.returncode == 1, r.stdout + r.stderr
    got = {(v["run"]["axes"]["kernel"], v["run"]["axes"]["test_perturb"]): v["status"]
           for v in fakes.statuses("perturb").values()}
    assert {k: v["status"] for k, v in got.items()} == {
        ("fa-v", False): "ok", ("fa-v", True): "wrong-result",
        ("ggml-vec", False): "ok", ("ggml-vec", True): "wrong-result"}
    assert "self-check failed" in got[("fa-v", True)]["cause"]


def test_fault_classification_and_retry(fakes: Fakes) -> None:
    spec = fakes.spec("faults", axes=attn(seed=[1, 13, 14, 15], test_perturb=[False, True]))
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--timeout", "2",
                  "--grace", "1", "-j", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    got = by_seed(fakes.statuses("faults"))
    assert got == {(1, False): "ok", (1, True): "wrong-result",
                   (13, False): "crashed", (13, True): "crashed",
                   (14, False): "timeout", (14, True): "timeout",
                   (15, False): "bad-args", (15, True): "bad-args"}
    sts = fakes.statuses("faults")
    causes = {k: v["status"]["cause"] for k, v in sts.items()}
    assert any("SIGSEGV" in c for c in causes.values())
    assert any("timeout" in c for c in causes.values())
    assert "wrong-result" in r.stdout and "timeout" in r.stdout  # summary table
    n_calls = len(fakes.calls())
    assert n_calls == 8
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--timeout", "2",
                  "--grace", "1")
    assert r.returncode == 1 and len(fakes.calls()) == 8  # nothing missing: nothing rerun
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--timeout", "2",
                  "--grace", "1", "--retry-failed", "-j", "2")
    assert r.returncode == 1 and len(fakes.calls()) == 8 + 7  # only the 7 failed ones
    r = fakes.cli("status", str(spec), "--results", str(fakes.results))
    assert r.returncode == 1 and "ok" in r.stdout and "crashed" in r.stdout


def test_gem5_target_classification(fakes: Fakes) -> None:
    spec = fakes.spec("g5", target="gem5", axes={
        "uarch": ["vitruvius-plus"], "vlen": [512], "lanes": [8], "kernel": ["fa-v"],
        "model": ["tinyllama-1.1b"], "phase": ["prefill"], "n": [4],
        "seed": [1, 21, 22, 23, 24, 25]})
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "-j", "2")
    assert r.returncode == 1, r.stdout + r.stderr
    sts = fakes.statuses("g5")
    got = {s: st for (s, _), st in by_seed(sts).items()}
    assert got == {1: "ok", 21: "gem5-error", 22: "missing-stats", 23: "missing-stats",
                   24: "wrong-result", 25: "gem5-error"}
    for v in sts.values():
        run, st = v["run"], v["status"]
        assert run["target"] == "gem5" and run["system"]["vlen"] == 512
        assert run["workload"]["args"][-2:] == ["--roi", "m5"]
        assert st["provenance"]["gem5_sha256"] and st["provenance"]["patches_sha256"]
        if "--seed 21" in " ".join(run["workload"]["args"]):
            assert "panic: fake panic" in st["cause"] and "panic" in st["stderr_tail"]
        if "--seed 25" in " ".join(run["workload"]["args"]):
            assert "SIGABRT" in st["cause"]
    ok = [k for k, v in sts.items() if v["status"]["status"] == "ok"][0]
    res = json.loads((fakes.results / "g5" / "runs" / ok / "result.json").read_text())
    assert res["pass"] is True and res["vlen"] == 512
    del fakes.env["GEM5"]  # status still finds the runs (gem5 hash from provenance.json)
    r = fakes.cli("status", str(spec), "--results", str(fakes.results))
    assert "not run yet" not in r.stdout and "gem5-error" in r.stdout, r.stdout


@pytest.mark.gem5
@pytest.mark.skipif(REAL_GEM5 is None, reason="no gem5: GEM5 unset and no `make gem5` build")
@pytest.mark.skipif(not (ROOT / "configs" / "run.py").exists(), reason="no configs/run.py")
@pytest.mark.skipif(not (BUILD / "attention").exists(), reason="workloads not built")
def test_real_gem5_tiny_run(fakes: Fakes) -> None:
    for k in ("VECSCALE_WORKLOADS", "VECSCALE_GEM5_CONFIG"):
        fakes.env.pop(k)
    fakes.env["GEM5"] = str(REAL_GEM5)
    spec = fakes.spec("g5real", target="gem5", axes={
        "uarch": ["vitruvius-plus"], "vlen": [512], "lanes": [8],
        "kernel": ["fa-v", "ggml-scalar"], "model": ["tinyllama-1.1b"],
        "phase": ["decode"], "l": [16]})
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "-j", "2",
                  timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    for rid, v in fakes.statuses("g5real").items():
        assert v["status"]["status"] == "ok", v["status"]
        d = fakes.results / "g5real" / "runs" / rid
        assert "Begin Simulation Statistics" in (d / "stats.txt").read_text()
        assert json.loads((d / "result.json").read_text())["pass"] is True


def test_gem5_unset_is_one_line_error(fakes: Fakes) -> None:
    spec = fakes.spec("g5u", target="gem5", axes={
        "uarch": ["paper-fixed"], "vlen": [512], "lanes": [8], "kernel": ["fa-v"],
        "model": ["tinyllama-1.1b"], "phase": ["prefill"], "n": [4]})
    del fakes.env["GEM5"]
    r = fakes.cli("run", str(spec), "--results", str(fakes.results))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "GEM5 is not set" in r.stderr


def test_user_templates_override(fakes: Fakes, tmp_path: Path) -> None:
    tdir = tmp_path / "site"
    tdir.mkdir()
    (tdir / "run.sh.j2").write_text(
        '{% extends "default/run.sh.j2" %}\n{% block env %}\n# site: module load gem5\n'
        '{{ super() }}{% endblock %}\n')
    spec = fakes.spec("tpl", axes=attn())
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--templates", str(tdir))
    assert r.returncode == 0, r.stderr
    cmd = next((fakes.results / "tpl" / "runs").glob("*/cmd.sh")).read_text()
    assert "# site: module load gem5" in cmd and "sweeps.runner" in cmd
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--force",
                  "--templates", str(tmp_path / "nope"))
    assert r.returncode == 2 and "--templates" in r.stderr


@pytest.mark.skipif(not (BUILD / "attention-scalar").exists(), reason="workloads not built")
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
def test_gem5_sweep_precomputes_references_on_qemu(fakes: Fakes) -> None:
    """A gem5 sweep computes each distinct attention reference once on QEMU (real
    attention-scalar --make-ref) before its runs; the real workload accepts the file."""
    fakes.use_real_workloads()  # gem5 stays the fake
    spec = fakes.spec("g5ref", target="gem5", axes={
        "uarch": ["vitruvius-plus"], "vlen": [512, 1024], "lanes": [8],
        "kernel": ["fa-v", "ggml-vec"], "model": ["tinyllama-1.1b", "pythia-410m"],
        "phase": ["prefill", "decode"], "n": [6], "l": [9]})
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "-j", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "references: 4 computed on QEMU" in r.stdout  # 2 models x 2 phases
    refs = sorted((fakes.results / "g5ref" / "refs").glob("*.ref"))
    assert len(refs) == 4
    for v in fakes.statuses("g5ref").values():
        run = v["run"]
        ref = run["workload"]["ref"]
        path = (fakes.results / "g5ref" / "runs" / run["id"] / ref["file"]).resolve()
        assert path in refs
        args = [a for a in run["workload"]["args"] if a != "m5"][:-1] + ["--ref", str(path)]
        res = subprocess.run(["qemu-riscv64", "-cpu", "rv64,v=true,vlen=512",
                              str(BUILD / "attention"), *args], capture_output=True, text=True)
        assert res.returncode == 0 and '"pass": true' in res.stdout, res.stderr
    again = fakes.cli("run", str(spec), "--results", str(fakes.results), "--force")
    assert again.returncode == 0 and "references:" not in again.stdout


def test_progress_eta_weights_runs_by_expected_cost() -> None:
    """Finished expensive runs do not make the cheap rest look expensive (and vice versa)."""
    import io

    from sweeps.executors import Progress

    p = Progress(4, 2, io.StringIO(), costs=[100.0, 100.0, 10.0, 10.0])
    p.finished(0, True)
    p.finished(1, True)
    # 200 expected seconds took 100 s: the 20 left take about 10 s (the plain count says 100)
    assert p.eta(100.0) == "10s"
    plain = Progress(4, 2, io.StringIO())
    plain.finished(0, True)
    plain.finished(1, False)
    assert plain.eta(100.0) == "1m40s" and plain.failed == 1


def test_only_runs_a_slice_then_the_rest(fakes: Fakes) -> None:
    spec = fakes.spec("slice", axes=attn(seed=[1, 2, 3, 4]))
    r = fakes.cli("plan", str(spec), "--results", str(fakes.results), "--only", "seed=2,3")
    assert r.returncode == 0 and "-> 2 runs" in r.stdout, r.stdout + r.stderr
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--only", "seed=2,3",
                  "--only", "seed=3,4")  # repeated axis: values both allow
    assert r.returncode == 0, r.stdout + r.stderr
    assert [s for s, _ in by_seed(fakes.statuses("slice"))] == [3]
    r = fakes.cli("run", str(spec), "--results", str(fakes.results))
    assert r.returncode == 0 and "1 already done, 3 to run" in r.stdout, r.stdout
    assert sorted(int(c.split("--seed ")[1].split()[0]) for c in fakes.calls()) == [1, 2, 3, 4]
    for bad, msg in [("sed=1", "unknown axis 'sed'"), ("seed", "expected AXIS=VALUE"),
                     ("seed=9", "9 not a value of axis seed")]:
        r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--only", bad)
        assert r.returncode == 2 and msg in r.stderr and len(r.stderr.splitlines()) == 1, \
            r.stderr


def _archive_members(archive: Path) -> dict[str, bytes]:
    import tarfile

    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _repack(members: dict[str, bytes], folder: Path, archive: str = RUNS_ARCHIVE) -> Path:
    import io
    import tarfile

    folder.mkdir()
    with tarfile.open(folder / archive, f"w:{archive.rsplit('.', 1)[1]}") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return folder


@pytest.mark.skipif(not (BUILD / "attention").exists(), reason="workloads not built")
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
def test_run_from_a_kept_archive(fakes: Fakes, tmp_path: Path) -> None:
    """A partial grid compacted on one machine continues on another (`run --from`): the
    archive's runs of the plan are copied in, only the rest is simulated, and compacting
    again keeps both (with the copied runs' ROI dumps); a run whose run.json does not hash
    to its id is not taken."""
    import sys

    axes = {"uarch": ["vitruvius-plus"], "vlen": [512], "lanes": [8], "kernel": ["fa-v"],
            "model": ["tinyllama-1.1b"], "phase": ["prefill"], "n": [4], "seed": [1, 2]}
    spec = fakes.spec("kept", target="gem5", axes=axes)
    assert fakes.cli("run", str(spec), "--results", str(fakes.results)).returncode == 0

    def compact(src: Path, dst: Path) -> None:
        r = subprocess.run([sys.executable, "-m", "analysis", "compact", str(src), str(dst)],
                           cwd=ROOT, env=fakes.env, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr

    compact(fakes.results / "kept", tmp_path / "compacted")
    first = set(fakes.statuses("kept"))
    members = _archive_members(tmp_path / "compacted" / RUNS_ARCHIVE)
    # the fake gem5's stats are no real dump: give each run the ROI dump a real one leaves
    members.update({f"runs/{rid}/stats.roi.txt": f"roi of {rid}\n".encode() for rid in first})
    # kept as an older checkout named it: still read
    archive = _repack(members, tmp_path / "reference-kept", LEGACY_RUNS_ARCHIVES[0])

    # another machine: an empty results folder, the grid grown by one point
    fakes.results = tmp_path / "results2"
    fakes.counter.unlink()
    spec = fakes.spec("kept", target="gem5", axes={**axes, "seed": [1, 2, 3]})
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--from", str(archive))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 runs copied, 0 already here" in r.stdout and "2 already done, 1 to run" in r.stdout
    assert {c.split("--seed ")[1].split()[0] for c in fakes.calls()} == {"3"}  # ref + gem5
    assert first <= set(fakes.statuses("kept"))
    compact(fakes.results / "kept", tmp_path / "reference-kept2")
    kept = _archive_members(tmp_path / "reference-kept2" / RUNS_ARCHIVE)
    assert all(f"runs/{rid}/result.json" in kept for rid in fakes.statuses("kept"))
    assert all(kept[f"runs/{rid}/stats.roi.txt"] == f"roi of {rid}\n".encode() for rid in first)
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--from",
                  str(tmp_path / "reference-kept2"))
    assert "0 runs copied, 3 already here" in r.stdout and "0 to run" in r.stdout, r.stdout

    # a tampered archive: the run is reported and simulated instead
    bad = sorted(first)[0]
    run = json.loads(members[f"runs/{bad}/run.json"])
    run["system"]["vlen"] = 1024
    tampered = _repack({**members, f"runs/{bad}/run.json": json.dumps(run).encode()},
                       tmp_path / "tampered")
    fakes.results = tmp_path / "results3"
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--from", str(tampered))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{bad}: archived run.json does not hash to its id (not copied)" in r.stdout
    assert "1 runs copied" in r.stdout and "1 already done, 2 to run" in r.stdout
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--from", str(tmp_path))
    assert r.returncode == 2 and f"no {RUNS_ARCHIVE}" in r.stderr
    assert len(r.stderr.splitlines()) == 1
