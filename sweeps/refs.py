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

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sweeps.identity import ID_LEN, canonical
from sweeps.runjson import Reference, RunJson
from vecscale.vocab import workload_dir
from workloads.kernels import ATTENTION, kernel

#: computes the references: the attention family's scalar kernel (rv64gc: no vector unit)
REF_KERNEL = ATTENTION.reference_kernel or "ggml-scalar"
REF_BINARY = kernel(REF_KERNEL).binary


def ref_binary(args: list[str]) -> str:
    """The binary that makes a reference: the reference kernel's, of its precision (fp16
    inputs are rounded by the fp16 binary)."""
    prec = args[args.index("--precision") + 1] if "--precision" in args[:-1] else "fp32"
    return kernel(REF_KERNEL).binary_for(prec)
#: where a sweep keeps reference files, relative to a run folder (results/<sweep>/runs/<id>)
REFS_FROM_RUN = "../../refs"


def reference_of(axes: Mapping[str, Any]) -> Reference:
    """The attention reference a gem5 run checks against: it depends on the problem and the
    seed only, so runs of every kernel, VLEN and uarch share one file, computed once on QEMU
    before the sweep instead of on gem5 after every kernel. `args` make it (with
    --make-ref FILE); `file` is relative to the run folder. Not part of the run id: with or
    without the file the run computes the same thing."""
    args = ["--kernel", REF_KERNEL, "--model", axes["model"], "--phase", axes["phase"]]
    args += ["--n", str(axes["n"])] if axes["phase"] == "prefill" else ["--l", str(axes["l"])]
    if axes["precision"] != "fp32":  # fp16: the reference of the fp16-rounded inputs
        args += ["--precision", axes["precision"]]
    args += ["--seed", str(axes["seed"])]
    key = hashlib.sha256(canonical(args).encode()).hexdigest()[:ID_LEN]
    return {"file": f"{REFS_FROM_RUN}/{key}.ref", "args": args}


def ref_path(run_dir: Path, ref: Mapping[str, Any]) -> Path:
    return (run_dir / ref["file"]).resolve()


def missing(runs: Mapping[str, RunJson], runs_dir: Path) -> dict[Path, list[str]]:
    """Reference files the runs (id -> run.json) need that do not exist yet -> the
    arguments that make them."""
    out: dict[Path, list[str]] = {}
    for rid, run in runs.items():
        ref = run["workload"].get("ref")
        if ref:
            path = ref_path(runs_dir / rid, ref)
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


def make_missing(runs: Mapping[str, RunJson], runs_dir: Path, jobs: int
                 ) -> tuple[int, float, list[str]]:
    """Compute the missing reference files of these runs (id -> run.json) on QEMU, `jobs` at
    a time.
    Returns (files written, seconds, problems); problems never stop the sweep."""
    todo = missing(runs, runs_dir)
    if not todo:
        return 0, 0.0, []
    qemu = shutil.which(os.environ.get("QEMU") or "qemu-riscv64")
    wdir = Path(workload_dir())
    absent = sorted({ref_binary(a) for a in todo.values()
                     if not (wdir / ref_binary(a)).is_file()})
    if qemu is None or absent:
        what = "qemu-riscv64 not found" if qemu is None else f"{absent[0]} not built"
        return 0, 0.0, [f"{what}: runs compute their own reference in gem5 (slower)"]
    next(iter(todo)).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(lambda kv: _make_one(qemu, wdir / ref_binary(kv[1]), *kv),
                                todo.items()))
    problems = [p for p in results if p]
    return len(todo) - len(problems), time.monotonic() - t0, problems
