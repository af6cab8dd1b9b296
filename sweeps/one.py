"""Run one workload on one (uarch, VLEN, lanes) point in gem5, with one command.

    python -m sweeps.one UARCH VLEN LANES -- --kernel fa-v --model tinyllama-1.1b \
        --phase prefill --n 64
    python -m sweeps.one paper-vl-scaled 8192 8 --binary vbench -- --op vfadd --dep chain
    make run-one UARCH=vitruvius-plus VLEN=2048 LANES=16 ARGS="--kernel fa-v ..."

Everything is checked before gem5 starts (uarch file and point, GEM5, workload binary). The
run folder (results/one/<point>/) holds run.json, stats.txt, simout, simerr; the workload's
JSON line and the ROI cycles are printed. Exit: the workload's exit code, 2 on bad input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from sweeps.gem5check import Gem5Error, check
from sweeps.plan import binary_for, workload_dir
from sweeps.uarch import UarchError, load_uarch, resolve

REPO = Path(__file__).resolve().parent.parent


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m sweeps.one", description=__doc__.split("\n")[0])
    ap.add_argument("uarch")
    ap.add_argument("vlen", type=int)
    ap.add_argument("lanes", help="lane count, or 'none' for a uarch that ignores lanes")
    ap.add_argument("--results", type=Path, default=REPO / "results" / "one")
    ap.add_argument("--binary", help="workload binary (default: from --kernel; e.g. vbench)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then the workload arguments")
    ns = ap.parse_args(argv)
    ns.args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    return ns


def main(argv: list[str] | None = None) -> int:
    ns = parse(argv)
    try:
        ua = load_uarch(ns.uarch)
        lanes = None if ns.lanes == "none" else int(ns.lanes)
        system = resolve(ua, ns.vlen, lanes)
        gem5 = check()
    except (UarchError, Gem5Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError:
        print(f"error: lanes: expected an integer or 'none', got {ns.lanes!r}", file=sys.stderr)
        return 2
    binary = ns.binary
    if binary is None:
        if "--kernel" not in ns.args[:-1]:
            print("error: workload arguments: --kernel KERNEL is required (or --binary)",
                  file=sys.stderr)
            return 2
        binary = binary_for(ns.args[ns.args.index("--kernel") + 1])
    path = workload_dir() / binary
    if not path.is_file():
        print(f"error: workload binary {path.name} not found: run `make workloads`",
              file=sys.stderr)
        return 2
    # The ROI is what gets measured: always delimit it with m5ops.
    args = list(ns.args)
    if "--roi" in args[:-1]:
        del args[args.index("--roi"): args.index("--roi") + 2]
    args += ["--roi", "m5"]
    key = hashlib.sha256(json.dumps([system, args]).encode()).hexdigest()[:10]
    rundir = ns.results / f"{ns.uarch}-{ns.vlen}-{ns.lanes}-{key}"
    rundir.mkdir(parents=True, exist_ok=True)
    run = {"schema": 1, "target": "gem5", "system": system, "roi_dump": 1,
           "axes": {"uarch": ns.uarch, "vlen": ns.vlen, "lanes": lanes},
           "workload": {"binary": binary, "path": str(path), "args": args}}
    (rundir / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    proc = subprocess.run([gem5["path"], "-re", f"--outdir={rundir}",
                           str(REPO / "configs" / "run.py"), str(rundir / "run.json")])
    exit_file = rundir / "workload_exit.json"
    if not exit_file.is_file():
        print(f"error: gem5 failed (exit {proc.returncode}); see {rundir / 'simerr'}",
              file=sys.stderr)
        return 1
    code = json.loads(exit_file.read_text())["exit_code"]
    for line in (rundir / "simout").read_text().splitlines():
        if line.startswith("{"):
            print(line)
    from analysis.stats import StatsError, roi_dump

    try:
        cycles = roi_dump(rundir / "stats.txt", 1).get("system.cpu.numCycles")
        print(f"ROI cycles: {int(cycles)}  (run folder: {rundir})")
    except StatsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
