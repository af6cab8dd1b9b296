"""Run one workload on one (uarch, VLEN, lanes) point in gem5, with one command.

    python -m tools.one UARCH VLEN LANES -- --kernel fa-v --model tinyllama-1.1b \
        --phase prefill --n 64
    python -m tools.one paper-vl-scaled 8192 8 --binary vbench -- --op vfadd --dep chain
    make run-one UARCH=vitruvius-plus VLEN=2048 LANES=16 ARGS="--kernel fa-v ..."

Everything is checked before gem5 starts (uarch file and point, gem5, workload binary). The
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

from sweeps.hashes import HashCache
from sweeps.runjson import RunJson, make_run_json, stack_layout
from sweeps.runner import gem5_argv
from sweeps.spec import stack_shift_problem
from system.gem5check import Gem5Error, check
from system.loader import UarchError, load_uarch
from system.resolved import ResolvedSystem, resolve
from vecscale.cmdline import OneLineParser, folder_problem
from vecscale.vocab import REPO, gem5_config, workload_dir
from workloads.kernels import kernel


class BadInput(ValueError):
    """One line for stderr; exit status 2."""


def parse(argv: list[str] | None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    ap = OneLineParser(prog="python -m tools.one", description=__doc__.split("\n")[0],
                                 usage="%(prog)s UARCH VLEN LANES [options] -- WORKLOAD ARGS")
    ap.add_argument("uarch")
    ap.add_argument("vlen", type=int)
    ap.add_argument("lanes", help="lane count, or 'none' for a uarch that ignores lanes")
    ap.add_argument("--results", type=Path, default=Path(REPO) / "results" / "one")
    ap.add_argument("--binary", help="workload binary (default: from --kernel; e.g. vbench)")
    ap.add_argument("--stack-shift", type=int, default=0, metavar="BYTES",
                    help="move the workload's initial stack down by BYTES (a multiple of 16; "
                    "layout studies; default 0, the same layout as every sweep run)")
    ns = ap.parse_args(argv[:cut])
    ns.args = argv[cut + 1:]
    return ns


def simulate(gem5: str, rundir: Path, run: RunJson, quiet: bool = False) -> int | None:
    """Write run.json into rundir and run gem5 on it; the workload's exit code, or None
    when gem5 itself failed (no workload_exit.json; see rundir/simerr)."""
    rundir.mkdir(parents=True, exist_ok=True)
    (rundir / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    out = subprocess.DEVNULL if quiet else None
    subprocess.run(gem5_argv(gem5, str(rundir), gem5_config()), stdout=out, stderr=out)
    exit_file = rundir / "workload_exit.json"
    if not exit_file.is_file():
        return None
    return int(json.loads(exit_file.read_text())["exit_code"])


def _point(ns: argparse.Namespace) -> tuple[ResolvedSystem, str]:
    """The resolved system of the point and the gem5 to run (checked)."""
    if problem := stack_shift_problem(ns.stack_shift):
        raise BadInput(f"--stack-shift: {problem}")
    try:
        lanes = None if ns.lanes == "none" else int(ns.lanes)
    except ValueError:
        raise BadInput(f"lanes: expected an integer or 'none', got {ns.lanes!r}") from None
    try:
        system = resolve(load_uarch(ns.uarch), ns.vlen, lanes)
        return system, check()["path"]
    except (UarchError, Gem5Error) as e:
        raise BadInput(str(e)) from None


def _binary(ns: argparse.Namespace) -> Path:
    """The workload binary: --binary, else the one the registry names for --kernel."""
    name = ns.binary
    if name is None:
        if "--kernel" not in ns.args[:-1]:
            raise BadInput("workload arguments: --kernel KERNEL is required (or --binary)")
        try:
            prec = ns.args[ns.args.index("--precision") + 1] \
                if "--precision" in ns.args[:-1] else "fp32"
            name = kernel(ns.args[ns.args.index("--kernel") + 1]).binary_for(prec)
        except KeyError as e:
            raise BadInput(f"--kernel: {e.args[0]}") from None
    path = Path(workload_dir()) / name
    if not path.is_file():
        raise BadInput(f"workload binary {path.name} not found: run `make workloads`")
    return path


def main(argv: list[str] | None = None) -> int:
    ns = parse(argv)
    try:
        if problem := folder_problem(ns.results):
            raise BadInput(f"--results {ns.results}: {problem}")
        system, gem5 = _point(ns)
        binary = _binary(ns)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # The ROI is what gets measured: always delimit it with m5ops.
    args = list(ns.args)
    if "--roi" in args[:-1]:
        del args[args.index("--roi"): args.index("--roi") + 2]
    args += ["--roi", "m5"]
    stack = stack_layout(ns.stack_shift)
    key = hashlib.sha256(json.dumps([system, args, stack]).encode()).hexdigest()[:10]
    rundir = ns.results / f"{ns.uarch}-{ns.vlen}-{ns.lanes}-{key}"
    run = make_run_json(target="gem5", system=system, binary=binary.name, args=args,
                        axes={"uarch": ns.uarch, "vlen": ns.vlen, "lanes": system["lanes"]},
                        sha256=HashCache(None).file(binary), stack=stack)
    code = simulate(gem5, rundir, run)
    if code is None:
        print(f"error: gem5 failed; see {rundir / 'simerr'}", file=sys.stderr)
        return 1
    return _report(rundir, code)


def _report(rundir: Path, code: int) -> int:
    """Print the workload's JSON line and the ROI cycles; the exit status."""
    for line in (rundir / "simout").read_text().splitlines():
        if line.startswith("{"):
            print(line)
    from analysis.stats import StatsError, roi_dump

    try:
        dump = roi_dump(rundir / "stats.txt", 1)
        cycles = dump.get(dump.cpu() + ".numCycles")
        print(f"ROI cycles: {int(cycles)}  (run folder: {rundir})")
    except StatsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
