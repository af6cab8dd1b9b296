"""Run one run folder: `python -m sweeps.runner RUNDIR [--timeout S] [--grace S]`.

Reads RUNDIR/run.json, starts the target (qemu-user or gem5) in its own process group,
enforces the timeout (SIGINT first, so gem5 can dump its statistics, SIGKILL after the
grace period), classifies the outcome and writes RUNDIR/status.json atomically, last.
SIGINT/SIGTERM to the runner stop the target the same way and record `killed`.

A flock on RUNDIR/.lock makes concurrent runners of one run (an orphan of a killed driver
and a new driver) wait for each other; the second one finds status.json and does nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any

from sweeps.lifetime import die_with_parent
from sweeps.results import OUTPUTS, read_status, remove_stale_tmp, tail, write_json_atomic
from vecscale.vocab import gem5_config, workload_dir

# Imports are kept to the standard library's cheap modules (no pathlib, argparse, platform):
# this process starts once per run, and its start-up time is the driver's overhead.
TAIL = 2000


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


def _p(*parts: str) -> str:
    return os.path.join(*parts)


def parse_result(path: str) -> dict[str, Any] | None:
    """The workload's JSON line: the last line of `path` that parses as a JSON object."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
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


def command(run: dict[str, Any], rundir: str) -> tuple[list[str], str, str]:
    """argv, stdout file, stderr file for this run's target."""
    wl = run["workload"]
    if run["target"] == "qemu":
        vlen = int(run["qemu"]["vlen"])
        qemu = os.environ.get("QEMU") or "qemu-riscv64"
        cpu = f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0"
        args = wl["args"]
        if "--precision" in args[:-1] and args[args.index("--precision") + 1] == "fp16":
            cpu += ",zvfh=true"  # fp16 vector code (QEMU >= 10); fp32 runs as before
        binary = _p(workload_dir(), wl["binary"])  # run.json names no path of the host
        return ([qemu, "-cpu", cpu, binary, *wl["args"]], _p(rundir, "stdout"),
                _p(rundir, "stderr"))
    from system.gem5find import Gem5Error, find_gem5  # gem5 runs only: start-up cost

    try:
        gem5 = find_gem5()  # cmd.sh exports the path the driver resolved
    except Gem5Error as e:
        raise RuntimeError(str(e)) from None
    os.environ["GEM5"] = gem5  # what _stamp() reads for the provenance
    log = _p(rundir, "gem5.log")
    return gem5_argv(gem5, rundir, gem5_config()), log, log


def gem5_argv(gem5: str, rundir: str, config: str) -> list[str]:
    """gem5 on rundir/run.json; gem5 itself redirects the simulated program's output and its
    own messages into rundir/simout and rundir/simerr (-re)."""
    return [gem5, "-re", "--stdout-file=simout", "--stderr-file=simerr", f"--outdir={rundir}",
            config, _p(rundir, "run.json")]


class Stop:
    signum: int | None = None


def classify(run: dict[str, Any], rundir: str, rc: int, why: str | None,
             stop_cause: str = "") -> tuple[str, str, int | None]:
    """(status, cause, workload exit code) from what the target left behind."""
    gem5 = run["target"] == "gem5"
    out = _p(rundir, "simout" if gem5 else "stdout")
    result = parse_result(out)
    if result is not None:
        write_json_atomic(_p(rundir, "result.json"), result, sync=False)  # status.json syncs
    if why in ("timeout", "killed"):
        return why, stop_cause or why, None
    if gem5:
        try:
            with open(_p(rundir, "workload_exit.json")) as f:
                wexit = json.load(f)
            code = int(wexit["exit_code"])
            wcause = str(wexit.get("cause", ""))
        except (OSError, ValueError, KeyError, TypeError):
            how = f"killed by {signal_name(-rc)}" if rc < 0 else f"exit code {rc}"
            last = [ln for ln in tail(_p(rundir, "simerr")).splitlines() if ln.strip()]
            hint = f": {last[-1].strip()[:200]}" if last else ""
            return "gem5-error", f"gem5 ended without workload_exit.json ({how}){hint}", None
        if code == 0:
            try:
                with open(_p(rundir, "stats.txt"), errors="replace") as f:
                    has_dump = "Begin Simulation Statistics" in f.read()
            except OSError:
                return "missing-stats", "stats.txt was not written", code
            if not has_dump:
                return "missing-stats", "stats.txt has no statistics dump", code
        return _by_exit(code, result, f"gem5: {wcause}" if wcause else "") + (code,)
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


def execute(rundir: str, timeout: float | None, grace: float) -> int:
    run_path = _p(rundir, "run.json")
    try:
        with open(run_path) as f:
            run = json.load(f)
        run["workload"]["args"]  # noqa: B018
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{run_path}: cannot read run description: {e}", file=sys.stderr)
        return 3
    lock_fd = os.open(_p(rundir, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # waits for another runner of the same run
    if read_status(rundir) is not None:
        return 0  # finished by someone else meanwhile
    for name in OUTPUTS:
        try:
            os.unlink(_p(rundir, name))
        except FileNotFoundError:
            pass
    remove_stale_tmp(rundir)  # half-written files of a runner killed mid-write
    started, t0 = now(), time.monotonic()
    status, cause, code, rc, err = _run_target(run, rundir, timeout, grace)
    err_file = _p(rundir, "simerr" if run["target"] == "gem5" else "stderr")
    st = {
        "status": status,
        "cause": cause,
        "stderr_tail": tail(err_file if os.path.exists(err_file) else err, TAIL),
        "wall_s": round(time.monotonic() - t0, 3),
        "exit_code": code,
        "process_rc": rc,
        "target": run["target"],
        "id": run.get("id", os.path.basename(rundir)),
        "provenance": _provenance(run, started),
    }
    write_json_atomic(_p(rundir, "status.json"), st)
    os.close(lock_fd)
    return 0 if status == "ok" else 1


def _run_target(run: dict[str, Any], rundir: str, timeout: float | None, grace: float
                ) -> tuple[str, str, int | None, int, str]:
    """Start the target, wait for it (or stop it), classify: (status, cause, workload exit
    code, process return code, stderr file)."""
    stop = Stop()

    def on_signal(signum: int, _frame: object) -> None:
        stop.signum = signum

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    rc, why, start_error = -1, None, None
    try:
        argv, out, err = command(run, rundir)
    except RuntimeError as e:
        argv, out, err = [], _p(rundir, "stderr"), _p(rundir, "stderr")
        start_error = str(e)
    if argv:
        with open(out, "wb") as fo, open(err, "ab") if err == out else open(err, "wb") as fe:
            try:
                proc = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                        start_new_session=True, cwd=rundir,
                                        preexec_fn=die_with_parent(signal.SIGKILL))
                rc, why = _wait(proc, timeout, grace, stop)
            except OSError as e:
                start_error = f"cannot start {argv[0]}: {e.strerror}"
    if start_error is not None:
        with open(err, "w") as f:
            f.write(start_error + "\n")
        return "crashed", start_error, None, rc, err
    if why == "timeout":
        stop_cause = f"exceeded the {timeout:g} s timeout; stopped with SIGINT"
    else:
        stop_cause = f"stopped by {signal_name(stop.signum or signal.SIGINT)} to the runner"
    if why and rc == -signal.SIGKILL:
        stop_cause += f", SIGKILL after {grace:g} s grace"
    return (*classify(run, rundir, rc, why, stop_cause), rc, err)


def _provenance(run: dict[str, Any], started: str) -> dict[str, Any]:
    return {
        "vecscale_git": os.environ.get("VECSCALE_GIT"),
        "workload_sha256": run["workload"].get("sha256"),
        "gem5_sha256": run.get("gem5_sha256"),
        "patches_sha256": run.get("patches_sha256"),
        **_stamp(run),
        "host": os.uname().nodename,
        "python": sys.version.split()[0],
        "slurm_job_id": _slurm_id(),
        "started": started,
        "finished": now(),
    }


def _stamp(run: dict[str, Any]) -> dict[str, Any]:
    """The gem5 build stamp's series hash and commit (gem5 runs; None without a stamp)."""
    if run["target"] != "gem5":
        return {}
    from system.gem5find import stamp_provenance

    return stamp_provenance(os.environ.get("GEM5"))


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
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)  # readable when the child exits
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            rc = proc.poll()
            if rc is not None:
                return rc, why
            t = time.monotonic()
            if why is None and (stop.signum is not None or (deadline and t >= deadline)):
                why = "killed" if stop.signum is not None else "timeout"
                _signal_group(proc, signal.SIGINT)
                kill_at = t + grace
            if kill_at is not None and t >= kill_at:
                _signal_group(proc, signal.SIGKILL)
                kill_at = None
            nap = 0.1
            for edge in (deadline if why is None else None, kill_at):
                if edge is not None:
                    nap = min(nap, max(0.0, edge - t))
            if pidfd is not None:
                select.select([pidfd], [], [], nap)
            else:
                time.sleep(min(nap, 0.01))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


USAGE = "usage: python -m sweeps.runner RUNDIR [--timeout S] [--grace S]"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    opts = {"--timeout": 0.0, "--grace": 30.0}
    rundir = None
    try:
        while args:
            a = args.pop(0)
            if a in opts:
                opts[a] = float(args.pop(0))
            elif a.startswith("-") or rundir is not None:
                raise ValueError(a)
            else:
                rundir = a
    except (ValueError, IndexError):
        print(USAGE, file=sys.stderr)
        return 3
    if rundir is None:
        print(USAGE, file=sys.stderr)
        return 3
    if not os.path.isfile(_p(rundir, "run.json")):
        print(f"{rundir}/run.json: missing (expected a run folder made by the driver)",
              file=sys.stderr)
        return 3
    return execute(os.path.abspath(rundir), opts["--timeout"] or None, opts["--grace"])


if __name__ == "__main__":
    sys.exit(main())
