"""Driver benchmark (not a test): `python -m sweeps.bench` / `make bench-driver`.

1. plan time for a synthetic 10,000-run gem5 grid (goal < 2 s);
2. driver overhead per run for 200 trivial runs on the qemu target with a fake qemu that
   only prints a result line (goal < 50 ms per run), at -j 1 and at -j <cores>.
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from sweeps import driver
from sweeps.hashes import HashCache
from sweeps.plan import build_plan
from sweeps.spec import load_spec

FAKE_QEMU = """#!/bin/sh
echo '{"workload": "bench", "pass": true, "max_abs_err": 0, "max_rel_err": 0}'
"""


def bench_plan(tmp: Path) -> tuple[int, float]:
    gem5 = tmp / "gem5.opt"
    gem5.write_bytes(b"\0" * (1 << 20))
    os.environ["GEM5"] = str(gem5)
    spec_file = tmp / "bench-plan.yaml"
    spec_file.write_text(yaml.safe_dump({
        "name": "bench-plan", "target": "gem5",
        "axes": {"uarch": ["vitruvius-plus", "paper-vl-scaled"],
                 "vlen": [512, 1024, 2048, 4096, 8192], "lanes": [8, 16, 32, 64],
                 "kernel": ["fa-v", "ggml-vec"],
                 "model": ["tinyllama-1.1b", "llama-3.2-1b", "llama-3.2-3b", "qwen2.5-0.5b",
                           "qwen2.5-1.5b", "qwen2.5-3b", "pythia-410m"],
                 "phase": ["prefill"], "n": [16 * (i + 1) for i in range(18)]}}))
    t0 = time.perf_counter()
    spec, path, _ = load_spec(spec_file)
    plan = build_plan(spec, str(path), HashCache(tmp / "hashes.json"))
    return len(plan.runs), time.perf_counter() - t0


def bench_runs(tmp: Path, jobs: int, n: int = 200) -> tuple[float, float, float]:
    qemu = tmp / "fake-qemu"
    qemu.write_text(FAKE_QEMU)
    qemu.chmod(0o755)
    os.environ["QEMU"] = str(qemu)
    spec_file = tmp / f"bench-runs-{jobs}.yaml"
    spec_file.write_text(yaml.safe_dump({
        "name": f"bench-runs-{jobs}", "target": "qemu",
        "axes": {"vlen": [128], "kernel": ["fa-v"], "model": ["tinyllama-1.1b"],
                 "phase": ["prefill"], "n": [4], "seed": list(range(n))}}))
    t_target = min(_time([str(qemu)]) for _ in range(5))
    opts = driver.Options(results=tmp / "results", jobs=jobs, timeout=60, grace=1)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    me0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    rc = driver.run_sweep(str(spec_file), opts, out=io.StringIO())
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    me1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
           + me1.ru_utime + me1.ru_stime - me0.ru_utime - me0.ru_stime)
    if rc != 0:
        raise SystemExit(f"bench: trivial sweep failed (rc {rc}); see {tmp / 'results'}")
    return wall, t_target, cpu


def _time(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="vecscale-bench-") as d:
        tmp = Path(d)
        runs, t = bench_plan(tmp)
        ok = "ok" if t < 2 else "SLOWER than goal"
        print(f"plan: {runs} runs in {t:.2f} s (goal < 2 s: {ok})")
        cores = os.cpu_count() or 1
        print(f"host: {cores} cores, load average {os.getloadavg()[0]:.1f} (other work on "
              "the host inflates wall times; CPU time per run is load-independent)")
        for jobs in sorted({1, cores}):
            wall, t_target, cpu = bench_runs(tmp, jobs)
            per = wall / 200
            over = per - t_target / jobs
            ok = "ok" if over < 0.05 else "SLOWER than goal"
            print(f"run -j {jobs}: 200 trivial runs in {wall:.2f} s = {per * 1000:.1f} ms/run "
                  f"wall, target alone {t_target * 1000:.1f} ms -> driver overhead "
                  f"{over * 1000:.1f} ms/run wall (goal < 50 ms: {ok}); "
                  f"driver+runner CPU {cpu / 200 * 1000:.1f} ms/run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
