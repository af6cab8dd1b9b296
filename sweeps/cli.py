"""Command line: `python -m sweeps` / `vecscale` with verbs plan, run, status, schema."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from sweeps.checks import MAX_POINTS
from sweeps.results import LockHeld
from sweeps.spec import SpecError, shipped_specs
from vecscale.cmdline import OneLineParser, os_error_line


def parser() -> argparse.ArgumentParser:
    from sweeps.driver import DEFAULT_RESULTS

    specs = ", ".join(shipped_specs())
    ap = OneLineParser(prog="vecscale", description="vecscale sweep driver",
                       epilog=f"SPEC is a name in sweeps/ ({specs}) or a path.")
    sub = ap.add_subparsers(dest="verb", required=True, parser_class=OneLineParser)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("spec", metavar="SPEC")
        p.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                       help="results root (default: results/ in the repo)")
        p.add_argument("--max-points", type=int, default=MAX_POINTS, metavar="N",
                       help="refuse a spec whose grid (cross product of its axes) has more "
                            f"points (default {MAX_POINTS:,})")

    def only(p: argparse.ArgumentParser) -> None:
        p.add_argument("--only", action="append", default=[], metavar="AXIS=V1,V2",
                       help="run (or plan) only the slice of the sweep whose points have "
                            "these axis values; repeatable; same run ids and folder")

    pl = sub.add_parser("plan", help="expand a spec and print what would run")
    common(pl)
    only(pl)
    common(sub.add_parser("status", help="counts per status of a sweep's runs"))
    r = sub.add_parser("run", help="run what is missing")
    common(r)
    only(r)
    r.add_argument("-j", "--jobs", type=int, default=None,
                   help="parallel runs (local; default: cores, ~1 GiB per gem5 run)")
    r.add_argument("--executor", choices=("local", "slurm"), default="local")
    r.add_argument("--timeout", type=float, default=None,
                   help="per-run seconds, > 0 (default: the spec's timeout_s)")
    r.add_argument("--grace", type=float, default=30.0,
                   help="seconds between SIGINT and SIGKILL when stopping a run (>= 0)")
    r.add_argument("--from", dest="from_archive", type=Path, default=None, metavar="ARCHIVE",
                   help="first copy in the finished runs of this plan that a kept archive "
                        "(results/reference-*) holds and the results folder lacks")
    r.add_argument("--retry-failed", action="store_true", help="rerun runs that failed")
    r.add_argument("--force", action="store_true", help="rerun every run")
    r.add_argument("--templates", type=Path, default=None,
                   help="folder whose *.j2 files override sweeps/templates/ by name")
    r.add_argument("--max-parallel", type=int, default=64,
                   help="slurm: array throttle %%K")
    r.add_argument("--sbatch-arg", action="append", default=[],
                   help="slurm: extra #SBATCH line, e.g. --sbatch-arg=--partition=long")
    r.add_argument("--resubmit", type=int, default=1,
                   help="slurm: resubmissions of runs that left no status (default 1)")
    r.add_argument("--poll", type=float, default=5.0, help="slurm: squeue poll seconds")
    sub.add_parser("schema", help="write sweeps/schema/sweep.schema.json")
    return ap


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """SIGTERM (kill, Slurm, systemd) stops a sweep like Ctrl-C: running runs are stopped and
    marked `killed`. SIGINT too, even when the shell started the driver with it ignored
    (`cmd &` in a script, nohup)."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def main(argv: list[str] | None = None) -> int:
    """The entry point: `_main`, and a reader that went away (`vecscale plan X | head -1`)
    ends the output quietly instead of with a traceback."""
    try:
        rc = _main(argv)
        sys.stdout.flush()  # inside the try: a closed pipe fails here, not at exit
        return rc
    except BrokenPipeError:
        # Python's advice: point stdout at devnull so the flush at exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE  # what a program killed by SIGPIPE reports (141)


def _main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.verb == "run":
        stop_on_signals()
    try:
        if a.verb == "schema":
            from sweeps.spec import write_schema

            print(write_schema())
            return 0
        from sweeps import driver
        from sweeps.checks import check_max_points, check_results_dir, check_run_options

        check_max_points(a.max_points)
        check_results_dir(a.results)
        if a.verb == "run":
            check_run_options(a)
        if a.verb == "plan":
            spec, _p, _t, plan = driver.load_and_plan(a.spec, a.results,
                                                      max_points=a.max_points)
            plan = driver.restrict(plan, driver.parse_only(a.only))
            driver.print_plan(spec, plan, a.results)
            return 0
        if a.verb == "status":
            return driver.status_sweep(a.spec, a.results, max_points=a.max_points)
        if a.jobs is not None and a.jobs < 1:
            raise SpecError("-j: expected a positive number of parallel runs")
        opts = driver.Options(results=a.results, jobs=a.jobs, executor=a.executor,
                              timeout=a.timeout, grace=a.grace, retry_failed=a.retry_failed,
                              force=a.force, templates=a.templates,
                              max_parallel=a.max_parallel, sbatch_args=tuple(a.sbatch_arg),
                              resubmit=a.resubmit, poll_s=a.poll, only=tuple(a.only),
                              max_points=a.max_points, from_archive=a.from_archive)
        return driver.run_sweep(a.spec, opts)
    except (SpecError, LockHeld, ValueError, RuntimeError) as e:
        print(f"vecscale: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise
    except OSError as e:  # a path that cannot be read or made: name it, no traceback
        print(f"vecscale: {os_error_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vecscale: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
