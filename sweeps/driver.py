"""Plan -> results folder -> executor -> summary. Used by the CLI and by tests."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sweeps.checks import MAX_POINTS, check_grid, check_only_values
from sweeps.executors import Executor, LocalExecutor, default_jobs, fmt_s
from sweeps.hashes import HashCache
from sweeps.plan import Plan, Run, build_plan, point_matches
from sweeps.render import environment, render
from sweeps.results import (
    SweepLock,
    remove_stale_tmp,
    write_json_atomic,
    write_text_atomic,
)
from sweeps.spec import REPO, Spec, SpecError, _shown, load_spec
from sweeps.states import CORRUPT, RunState, inspect_runs, summary, to_rerun
from system.gem5find import Gem5Error, export_gem5, stamp_provenance
from vecscale.vocab import RESUMED, gem5_config

DEFAULT_RESULTS = REPO / "results"


@dataclass
class Options:
    results: Path = DEFAULT_RESULTS
    jobs: int | None = None
    executor: str = "local"
    timeout: float | None = None
    grace: float = 30.0
    retry_failed: bool = False
    force: bool = False
    templates: Path | None = None
    max_parallel: int = 64
    sbatch_args: tuple[str, ...] = ()
    resubmit: int = 1
    poll_s: float = 5.0
    only: tuple[str, ...] = ()
    max_points: int = MAX_POINTS
    from_archive: Path | None = None


def git_rev() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty",
                              "--abbrev=12"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def precompile_runner() -> None:
    """Write .pyc files for the modules every run imports: Python reads them even with
    PYTHONDONTWRITEBYTECODE set, and compiling them once per run is most of a trivial
    run's overhead."""
    import importlib.util
    import py_compile

    import vecscale.vocab

    here, vocab = Path(__file__), Path(vecscale.vocab.__file__)
    for src in (*(here.with_name(n) for n in ("__init__.py", "results.py", "runner.py",
                                              "lifetime.py")),
                vocab, vocab.with_name("__init__.py")):
        try:
            py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)),
                               doraise=True)
        except (OSError, py_compile.PyCompileError):
            pass


def gem5_found() -> bool:
    """Resolve gem5 once ($GEM5, else the `make gem5` build) and export it as $GEM5, so the
    plan, the rendered cmd.sh and the runs' processes all use that binary."""
    try:
        export_gem5()
    except Gem5Error:
        return False
    return True


def load_and_plan(spec_arg: str, results: Path, require_inputs: bool = False,
                  max_points: int = MAX_POINTS) -> tuple[Spec, Path, str, Plan]:
    spec, path, text = load_spec(spec_arg)
    check_grid(spec, _shown(path), max_points)  # before anything expands the grid
    found = spec.target == "gem5" and gem5_found()
    try:
        before = json.loads((results / spec.name / "provenance.json").read_text()
                            ).get("gem5_sha256")
    except (OSError, ValueError, AttributeError):
        before = None
    fallback = before if spec.target == "gem5" and not found else None
    plan = build_plan(spec, _shown(path), HashCache(results / ".sha256-cache.json"), require_inputs,
                      fallback)
    now = next((r.run_json.get("gem5_sha256") for r in plan.runs.values()), None)
    if found and isinstance(before, str) and now and now != before:
        # Run ids include the gem5 binary's hash: another binary finds none of the old runs.
        plan.warnings.append(f"gem5 {now[:12]} is not the binary ({before[:12]}) this sweep's "
                             "last invocation used: its runs are not reused (new run ids)")
    return spec, path, text, plan


def parse_only(items: tuple[str, ...] | list[str]) -> dict[str, list[Any]]:
    """`--only AXIS=V1,V2` arguments -> a filter like the spec's `include_only` entries
    ({axis: [values]}, values read as YAML scalars so `vlen=512` is the integer 512); an
    axis given twice narrows to the values both allow."""
    from sweeps.checks import only_value
    from sweeps.spec import AXIS_NAMES

    out: dict[str, list[Any]] = {}
    for item in items:
        axis, sep, vals = item.partition("=")
        axis = axis.strip()
        values = [only_value(item, v) for v in vals.split(",") if v.strip()]
        if not sep or not values:
            raise SpecError(f"--only {item}: expected AXIS=VALUE[,VALUE...]")
        if axis not in AXIS_NAMES:
            raise SpecError(f"--only {item}: unknown axis {axis!r} "
                            f"(expected one of: {', '.join(AXIS_NAMES)})")
        out[axis] = [v for v in out[axis] if v in values] if axis in out else values
    return out


def restrict(plan: Plan, only: dict[str, list[Any]]) -> Plan:
    """The slice of a plan whose points match the `only` filter (as `include_only` does):
    same run ids and folder, so a later full run of the sweep finds these runs done. A run
    is kept when any point it answers matches (the scalar run shared by every VLEN stays
    in a `--only vlen=` slice)."""
    if not only:
        return plan
    check_only_values(plan.spec, only)
    for axis, values in only.items():
        seen = {p.get(axis) for p, _ in plan.points}
        if not any(v in seen for v in values):
            raise SpecError(f"--only {axis}={','.join(map(str, values))}: no point of sweep "
                            f"{plan.spec.name} has it (values: "
                            f"{', '.join(sorted(map(str, seen)))})")
    points = [(p, rid) for p, rid in plan.points if point_matches(p, only)]
    keep = {rid for _, rid in points}
    return Plan(spec=plan.spec, runs={k: r for k, r in plan.runs.items() if k in keep},
                points=points, warnings=plan.warnings)


def states(plan: Plan, runs_dir: Path) -> dict[str, RunState]:
    """The state of every planned run: its verdict, or missing, corrupt, unknown status."""
    return inspect_runs(runs_dir, list(plan.runs))


def _size(r: Run) -> Any:
    return r.axes.get("n") if r.phase == "prefill" else r.axes.get("l") if r.phase \
        else r.axes.get("max_rows")


def run_costs(plan: Plan, sts: dict[str, RunState]) -> dict[str, float | None]:
    """Expected seconds of each run a plain `run` would run: the mean wall_s of finished runs
    of the same kernel, phase and size (and VLEN when there are such runs), else the spec's
    estimate_s guess for the kernel/phase or kernel, else None."""
    walls: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for rid, state in sts.items():
        st = state.status or {}
        if state.ok and isinstance(st.get("wall_s"), (int, float)):
            r = plan.runs[rid]
            base = (r.kernel, r.phase, _size(r))
            walls[base].append(float(st["wall_s"]))
            walls[(*base, r.axes.get("vlen"))].append(float(st["wall_s"]))
    guess = plan.spec.estimate_s
    out: dict[str, float | None] = {}
    for rid, r in plan.runs.items():
        if not to_rerun(sts[rid]):  # done, or failed: only missing, corrupt, killed run again
            continue
        base = (r.kernel, r.phase, _size(r))
        w = walls.get((*base, r.axes.get("vlen"))) or walls.get(base)
        if w:
            out[rid] = sum(w) / len(w)
        elif f"{r.kernel}/{r.phase}" in guess:
            out[rid] = float(guess[f"{r.kernel}/{r.phase}"])
        elif r.kernel in guess:
            out[rid] = float(guess[r.kernel])
        else:
            out[rid] = None
    return out


def estimate(plan: Plan, sts: dict[str, RunState]) -> tuple[float | None, str]:
    """Seconds of run time left, from wall_s of finished runs like each one (run_costs)."""
    costs = run_costs(plan, sts)
    total = sum(c for c in costs.values() if c is not None)
    unknown = sum(c is None for c in costs.values())
    note = f" (+{unknown} runs without an estimate)" if unknown else ""
    if unknown and not total:
        return None, "unknown (no finished runs of these kernels yet)"
    return total, f"{fmt_s(total)} of run time{note}"


def print_plan(spec: Spec, plan: Plan, results: Path, out: TextIO = sys.stdout) -> None:
    runs_dir = results / spec.name / "runs"
    sts = states(plan, runs_dir)
    done = sum(1 for s in sts.values() if s.ok)
    pending = sum(1 for s in sts.values() if to_rerun(s))
    failed = len(plan.runs) - done - pending  # a verdict other than ok (or an unknown one)
    killed = sum(1 for s in sts.values() if s.kind in RESUMED)
    corrupt = sum(1 for s in sts.values() if s.kind == CORRUPT)
    est, est_txt = estimate(plan, sts)
    for w in plan.warnings:
        out.write(f"warning: {w}\n")
    jobs = default_jobs(spec.target)
    out.write(f"sweep {spec.name} (target {spec.target}): {len(plan.points)} points -> "
              f"{len(plan.runs)} runs ({plan.shared} points shared by dedupe)\n")
    notes = [f"{killed} of them killed before finishing"] if killed else []
    notes += [f"{corrupt} of them with damaged files"] if corrupt else []
    again = f" ({'; '.join(notes)})" if notes else ""
    out.write(f"  done {done}, failed {failed}, to run {pending}{again}\n")
    par = f"; about {fmt_s(est / jobs)} with -j {jobs}" if est else ""
    out.write(f"  estimated cost: {est_txt}{par}\n")
    out.write(f"  results: {runs_dir}\n")


def _select(plan: Plan, runs_dir: Path, opts: Options) -> list[Run]:
    sts = states(plan, runs_dir)
    return [r for rid, r in plan.runs.items()
            if opts.force or to_rerun(sts[rid], opts.retry_failed)]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _prepare(todo: list[Run], runs_dir: Path, spec: Spec, opts: Options) -> list[Path]:
    env = environment(opts.templates)
    timeout = opts.timeout if opts.timeout is not None else spec.timeout_s
    common = {"sweep": spec.name, "repo": str(REPO), "git": git_rev() or "unknown",
              "python": sys.executable, "timeout": f"{timeout:g}", "grace": f"{opts.grace:g}",
              "gem5": os.environ.get("GEM5", ""), "qemu": os.environ.get("QEMU",
                                                                         "qemu-riscv64")}
    dirs = []
    for r in todo:
        d = runs_dir / r.id
        if d.exists() and not d.is_dir():
            raise SpecError(f"{d}: a file where the run's folder belongs (remove it to run "
                            "the run)")
        d.mkdir(parents=True, exist_ok=True)
        st = d / "status.json"
        if st.exists():  # --force / --retry-failed: keep the old verdict next to it
            os.replace(st, d / "status.prev.json")
        if _read_json(d / "run.json") != r.run_json:  # missing or damaged: the plan's
            write_json_atomic(d / "run.json", r.run_json)
        summary = " ".join(f"{k}={v}" for k, v in r.axes.items() if v is not None)
        write_text_atomic(d / "cmd.sh", render(env, "run.sh.j2", run=r.run_json,
                                               rundir=str(d), summary=summary, **common),
                          0o755)
        dirs.append(d)
    return dirs


def _sweep_files(spec: Spec, text: str, plan: Plan, folder: Path, opts: Options,
                 invocation: dict[str, Any]) -> None:
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / "sweep.yaml", text)
    write_json_atomic(folder / "points.json", [{"axes": p, "run": rid}
                                               for p, rid in plan.points])
    prov_path = folder / "provenance.json"
    try:
        prov = json.loads(prov_path.read_text())
    except (OSError, ValueError):
        prov = {"sweep": spec.name, "created": invocation["started"], "invocations": []}
    prov.update({"spec_sha256": hashlib.sha256(text.encode()).hexdigest(),
                 "vecscale_git": git_rev(), "target": spec.target,
                 "gem5": os.environ.get("GEM5") if spec.target == "gem5" else None,
                 **(stamp_provenance(os.environ.get("GEM5")) if spec.target == "gem5" else {}),
                 "gem5_sha256": next((r.run_json["gem5_sha256"] for r in plan.runs.values()),
                                     None)})
    prov["invocations"].append(invocation)
    write_json_atomic(prov_path, prov)


def _seed(plan: Plan, runs_dir: Path, archive: Path, out: TextIO) -> None:
    from sweeps.seed import seed_from

    got = seed_from(archive, plan, runs_dir)
    out.write(f"from {archive}: {got.copied} runs copied, {got.present} already here, "
              f"{got.not_in_plan} not of this plan (other code or points)\n")
    for p in got.problems:
        out.write(f"warning: from {archive}: {p} (not copied)\n")
    out.flush()


def _check_tools(spec: Spec) -> None:
    """What the target needs on this host, before anything is written."""
    if spec.target == "gem5" and not Path(gem5_config()).is_file():
        raise SpecError(f"{gem5_config()}: gem5 config script missing (configs/run.py)")
    if spec.target == "qemu" and not shutil.which(os.environ.get("QEMU") or "qemu-riscv64"):
        raise SpecError("qemu-riscv64: not found on PATH (apt-get install qemu-user)")


def _references(todo: list[Run], folder: Path, opts: Options, out: TextIO) -> None:
    """gem5 runs: the attention references they check against, computed once on QEMU."""
    from sweeps import refs

    made, secs, problems = refs.make_missing({r.id: r.run_json for r in todo}, folder / "runs",
                                             opts.jobs or os.cpu_count() or 1)
    for p in problems:
        out.write(f"warning: reference file: {p}\n")
    if made:
        out.write(f"references: {made} computed on QEMU in {fmt_s(secs)} ({folder / 'refs'})\n")
    out.flush()


def make_executor(spec: Spec, folder: Path, opts: Options) -> Executor:
    """The executor --executor names, with the options it takes."""
    timeout = opts.timeout if opts.timeout is not None else spec.timeout_s
    if opts.executor == "slurm":
        from sweeps.slurm import SlurmExecutor, SlurmSettings

        settings = SlurmSettings(max_parallel=opts.max_parallel, sbatch_args=opts.sbatch_args,
                                 resubmit=opts.resubmit, poll_s=opts.poll_s, grace=opts.grace,
                                 templates=opts.templates)
        return SlurmExecutor(folder, spec.name, spec.target, timeout or None, settings)
    return LocalExecutor(opts.jobs or default_jobs(spec.target), timeout or None, opts.grace)


def _execute(plan: Plan, dirs: list[Path], folder: Path, opts: Options) -> bool:
    """Run the prepared folders; True when interrupted. Expected costs order the local ETA;
    batch job ids go into provenance.json even when the run is interrupted."""
    ex = make_executor(plan.spec, folder, opts)
    known = run_costs(plan, states(plan, folder / "runs"))
    mean = [c for c in known.values() if c is not None]
    fill = sum(mean) / len(mean) if mean else 1.0
    try:
        ex.run(dirs, [known.get(d.name) or fill for d in dirs])
    finally:
        if ex.job_ids:
            prov = json.loads((folder / "provenance.json").read_text())
            prov["invocations"][-1]["slurm_jobs"] = ex.job_ids
            write_json_atomic(folder / "provenance.json", prov)
    return ex.interrupted


def run_sweep(spec_arg: str, opts: Options, out: TextIO = sys.stdout) -> int:
    """Run what is missing; returns the exit status (0 all ok, 1 failures, 130 interrupted)."""
    opts.results = opts.results.resolve()  # cmd.sh runs from the repo root
    spec, path, text, full = load_and_plan(spec_arg, opts.results, require_inputs=True,
                                           max_points=opts.max_points)
    plan = restrict(full, parse_only(opts.only))
    _check_tools(spec)
    folder = opts.results / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    interrupted = False
    with SweepLock(folder):
        remove_stale_tmp(folder)  # left by a driver killed mid-write (runners clean theirs)
        runs_dir = folder / "runs"
        invocation = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                      "argv": sys.argv[1:], "executor": opts.executor,
                      "host": os.uname().nodename, "slurm_jobs": []}
        _sweep_files(spec, text, full, folder, opts, invocation)
        if opts.from_archive is not None:
            _seed(full, runs_dir, opts.from_archive, out)
        todo = _select(plan, runs_dir, opts)
        for w in plan.warnings:
            out.write(f"warning: {w}\n")
        out.write(f"sweep {spec.name}: {len(plan.points)} points, {len(plan.runs)} runs, "
                  f"{len(plan.runs) - len(todo)} already done, {len(todo)} to run\n")
        out.flush()
        dirs = _prepare(todo, runs_dir, spec, opts)
        if dirs:
            precompile_runner()
            if spec.target == "gem5":
                _references(todo, folder, opts, out)
            interrupted = _execute(plan, dirs, folder, opts)
        out.write(f"\nsweep {spec.name}: summary ({folder})\n")
        bad = summary(states(plan, runs_dir), out)
    if interrupted:
        return 130
    return 1 if bad else 0


def status_sweep(spec_arg: str, results: Path, out: TextIO = sys.stdout,
                 max_points: int = MAX_POINTS) -> int:
    spec, _path, _text, plan = load_and_plan(spec_arg, results, max_points=max_points)
    folder = results / spec.name
    for w in plan.warnings:
        out.write(f"warning: {w}\n")
    out.write(f"sweep {spec.name}: {len(plan.points)} points, {len(plan.runs)} runs ({folder})\n")
    bad = summary(states(plan, folder / "runs"), out)
    return 1 if bad else 0
