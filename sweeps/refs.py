"""Attention reference files for a gem5 sweep, computed on QEMU before the runs start.

A gem5 run of an attention kernel checks its output against a double-precision reference
outside the region of interest. Computed in gem5 (on its atomic CPU) that reference costs
more host time than the measured kernel; it depends only on the problem and the seed, so
the driver computes each distinct one once with `attention-scalar --make-ref FILE` under
qemu-user (a fraction of a second to seconds) into results/<sweep>/refs/, and configs/run.py
passes `--ref FILE` to the workload. The file's header names the problem and a checksum of
the generated inputs, so the workload refuses a file that does not match what it generated.
Without QEMU, or when a file is missing, a run computes its own reference as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sweeps.plan import Run, workload_dir

REF_BINARY = "attention-scalar"  # rv64gc: the reference needs no vector unit


def ref_path(run_dir: Path, ref: dict[str, Any]) -> Path:
    return (run_dir / ref["file"]).resolve()


def missing(runs: list[Run], runs_dir: Path) -> dict[Path, list[str]]:
    """Reference files the runs need that do not exist yet -> the arguments that make them."""
    out: dict[Path, list[str]] = {}
    for r in runs:
        ref = r.run_json["workload"].get("ref")
        if ref:
            path = ref_path(runs_dir / r.id, ref)
            if not path.exists():
                out[path] = list(ref["args"])
    return out


def _make_one(qemu: str, binary: Path, path: Path, args: list[str]) -> str | None:
    """Write one reference file atomically; None when done, else the reason it failed."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        proc = subprocess.run([qemu, "-cpu", "rv64", str(binary), *args, "--make-ref",
                               str(tmp)], capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path.name}: {exc}"
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{path.name}: exit {proc.returncode}: {last}"
    os.replace(tmp, path)
    return None


def make_missing(runs: list[Run], runs_dir: Path, jobs: int) -> tuple[int, float, list[str]]:
    """Compute the missing reference files of these runs on QEMU, `jobs` at a time.
    Returns (files written, seconds, problems); problems never stop the sweep."""
    todo = missing(runs, runs_dir)
    if not todo:
        return 0, 0.0, []
    qemu = shutil.which(os.environ.get("QEMU") or "qemu-riscv64")
    binary = workload_dir() / REF_BINARY
    if qemu is None or not binary.is_file():
        what = "qemu-riscv64 not found" if qemu is None else f"{binary.name} not built"
        return 0, 0.0, [f"{what}: runs compute their own reference in gem5 (slower)"]
    next(iter(todo)).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(lambda kv: _make_one(qemu, binary, *kv), todo.items()))
    problems = [p for p in results if p]
    return len(todo) - len(problems), time.monotonic() - t0, problems
