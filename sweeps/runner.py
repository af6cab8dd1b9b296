"""Run one run folder: `python -m sweeps.runner RUNDIR [--timeout S] [--grace S]`.

Reads RUNDIR/run.json, starts the target (qemu-user or gem5) in its own process group,
enforces the timeout (SIGINT first, so gem5 can dump its statistics, SIGKILL after the
grace period), classifies the outcome and writes RUNDIR/status.json atomically, last.
SIGINT/SIGTERM to the runner stop the target the same way and record `killed`.

A flock on RUNDIR/.lock makes concurrent runners of one run (an orphan of a killed driver
and a new driver) wait for each other; the second one finds status.json and does nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sweeps.results import OUTPUTS, read_status, tail, write_json_atomic

REPO = Path(__file__).resolve().parents[1]
TAIL = 2000


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def parse_result(path: Path) -> dict[str, Any] | None:
    """The workload's JSON line: the last line of `path` that parses as a JSON object."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for ln in reversed(lines):
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                obj = json.loads(ln)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def command(run: dict[str, Any], rundir: Path) -> tuple[list[str], Path, Path]:
    """argv, stdout file, stderr file for this run's target."""
    wl = run["workload"]
    if run["target"] == "qemu":
        vlen = int(run["qemu"]["vlen"])
        qemu = os.environ.get("QEMU") or "qemu-riscv64"
        cpu = f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0"
        return ([qemu, "-cpu", cpu, wl["path"], *wl["args"]], rundir / "stdout",
                rundir / "stderr")
    gem5 = os.environ.get("GEM5")
    if not gem5:
        raise RuntimeError("GEM5 is not set (path to a patched gem5.opt)")
    config = os.environ.get("VECSCALE_GEM5_CONFIG") or str(REPO / "configs" / "run.py")
    return ([gem5, "-re", f"--outdir={rundir}", config, str(rundir / "run.json")],
            rundir / "gem5.log", rundir / "gem5.log")


class Stop:
    signum: int | None = None


def classify(run: dict[str, Any], rundir: Path, rc: int, why: str | None,
             stop_cause: str = "") -> tuple[str, str, int | None]:
    """(status, cause, workload exit code) from what the target left behind."""
    gem5 = run["target"] == "gem5"
    out = rundir / ("simout" if gem5 else "stdout")
    result = parse_result(out)
    if result is not None:
        write_json_atomic(rundir / "result.json", result)
    if why in ("timeout", "killed"):
        return why, stop_cause or why, None
    if gem5:
        try:
            wexit = json.loads((rundir / "workload_exit.json").read_text())
            code = int(wexit["exit_code"])
            wcause = str(wexit.get("cause", ""))
        except (OSError, ValueError, KeyError, TypeError):
            how = f"killed by {signal_name(-rc)}" if rc < 0 else f"exit code {rc}"
            last = [ln for ln in tail(rundir / "simerr").splitlines() if ln.strip()]
            hint = f": {last[-1].strip()[:200]}" if last else ""
            return "gem5-error", f"gem5 ended without workload_exit.json ({how}){hint}", None
        if code == 0:
            stats = rundir / "stats.txt"
            try:
                has_dump = "Begin Simulation Statistics" in stats.read_text(errors="replace")
            except OSError:
                return "missing-stats", "stats.txt was not written", code
            if not has_dump:
                return "missing-stats", "stats.txt has no statistics dump", code
        return _by_exit(code, result, f"workload {wcause}".strip()) + (code,)
    if rc < 0:
        return "crashed", f"target killed by {signal_name(-rc)}", None
    return _by_exit(rc, result, "") + (rc,)


def _by_exit(code: int, result: dict[str, Any] | None, extra: str) -> tuple[str, str]:
    note = f" ({extra})" if extra else ""
    if code == 0:
        if result is None:
            return "crashed", f"exit 0 but no JSON result line{note}"
        if result.get("pass") is False:
            return "wrong-result", "exit 0 but the result says pass=false"
        return "ok", "ok"
    if code == 1:
        err = ""
        if result:
            err = f": max_abs_err={result.get('max_abs_err')} max_rel_err=" \
                  f"{result.get('max_rel_err')}"
        return "wrong-result", f"self-check failed (exit 1){err}{note}"
    if code == 2:
        return "bad-args", f"workload rejected its arguments (exit 2){note}"
    if code >= 128:
        return "crashed", f"exit code {code} ({signal_name(code - 128)}?){note}"
    return "crashed", f"exit code {code}{note}"


def execute(rundir: Path, timeout: float | None, grace: float) -> int:
    run_path = rundir / "run.json"
    try:
        run = json.loads(run_path.read_text())
        run["workload"]["args"]  # noqa: B018
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{run_path}: cannot read run description: {e}", file=sys.stderr)
        return 3
    lock_fd = os.open(rundir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # waits for another runner of the same run
    if read_status(rundir) is not None:
        return 0  # finished by someone else meanwhile
    for name in OUTPUTS:
        try:
            os.unlink(rundir / name)
        except FileNotFoundError:
            pass
    stop = Stop()

    def on_signal(signum: int, _frame: object) -> None:
        stop.signum = signum

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    started, t0 = now(), time.monotonic()
    start_error: str | None = None
    rc, why = -1, None
    try:
        argv, out, err = command(run, rundir)
    except RuntimeError as e:
        argv, out, err = [], rundir / "stderr", rundir / "stderr"
        start_error = str(e)
    if argv:
        with open(out, "wb") as fo, open(err, "ab") if err == out else open(err, "wb") as fe:
            try:
                proc = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                        start_new_session=True, cwd=rundir)
                rc, why = _wait(proc, timeout, grace, stop)
            except OSError as e:
                start_error = f"cannot start {argv[0]}: {e.strerror}"
    wall = time.monotonic() - t0
    if start_error is not None:
        err.write_text(start_error + "\n")
        status, cause, code = "crashed", start_error, None
    else:
        if why == "timeout":
            stop_cause = f"exceeded the {timeout:g} s timeout; stopped with SIGINT"
        else:
            stop_cause = f"stopped by {signal_name(stop.signum or signal.SIGINT)} to the runner"
        if why and rc == -signal.SIGKILL:
            stop_cause += f", SIGKILL after {grace:g} s grace"
        status, cause, code = classify(run, rundir, rc, why, stop_cause)
    err_file = rundir / ("simerr" if run["target"] == "gem5" else "stderr")
    st = {
        "status": status,
        "cause": cause,
        "stderr_tail": tail(err_file if err_file.exists() else err, TAIL),
        "wall_s": round(wall, 3),
        "exit_code": code,
        "process_rc": rc,
        "target": run["target"],
        "id": run.get("id", rundir.name),
        "provenance": {
            "vecscale_git": os.environ.get("VECSCALE_GIT"),
            "workload_sha256": run["workload"].get("sha256"),
            "gem5_sha256": run.get("gem5_sha256"),
            "patches_sha256": run.get("patches_sha256"),
            "host": socket.gethostname(),
            "python": platform.python_version(),
            "slurm_job_id": _slurm_id(),
            "started": started,
            "finished": now(),
        },
    }
    write_json_atomic(rundir / "status.json", st)
    os.close(lock_fd)
    return 0 if status == "ok" else 1


def _slurm_id() -> str | None:
    job = os.environ.get("SLURM_ARRAY_JOB_ID")
    if job:
        return f"{job}_{os.environ.get('SLURM_ARRAY_TASK_ID', '')}"
    return os.environ.get("SLURM_JOB_ID")


def _wait(proc: subprocess.Popen[bytes], timeout: float | None, grace: float, stop: Stop
          ) -> tuple[int, str | None]:
    deadline = time.monotonic() + timeout if timeout else None
    why: str | None = None
    kill_at: float | None = None
    delay = 0.002
    while True:
        try:
            return proc.wait(timeout=delay), why
        except subprocess.TimeoutExpired:
            delay = min(delay * 2, 0.1)
        t = time.monotonic()
        if why is None and (stop.signum is not None or (deadline and t >= deadline)):
            why = "killed" if stop.signum is not None else "timeout"
            _signal_group(proc, signal.SIGINT)
            kill_at = t + grace
        if kill_at is not None and t >= kill_at:
            _signal_group(proc, signal.SIGKILL)
            kill_at = None


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sweeps.runner", description=__doc__)
    ap.add_argument("rundir", type=Path)
    ap.add_argument("--timeout", type=float, default=None, help="seconds; 0 = none")
    ap.add_argument("--grace", type=float, default=30.0,
                    help="seconds between SIGINT and SIGKILL")
    a = ap.parse_args(argv)
    if not (a.rundir / "run.json").is_file():
        print(f"{a.rundir}/run.json: missing (expected a run folder made by the driver)",
              file=sys.stderr)
        return 3
    return execute(a.rundir.resolve(), a.timeout or None, a.grace)


if __name__ == "__main__":
    sys.exit(main())
