"""Executors: where runs execute. Each runs a list of prepared run folders; results are read
back from status.json.

Interface: ``Executor.run(rundirs, costs) -> None`` (abc below). Each run folder already
holds run.json and cmd.sh; an executor only has to get ``bash cmd.sh`` executed somewhere,
once. LocalExecutor is here, SlurmExecutor in slurm.py.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TextIO

from sweeps.lifetime import die_with_parent
from sweeps.results import read_status, write_json_atomic


class Executor(ABC):
    """Runs prepared run folders. After run(): `interrupted` says whether Ctrl-C or SIGTERM
    stopped it (finished runs are kept), `job_ids` names the batch jobs it submitted (for
    provenance.json; none for local runs)."""

    def __init__(self) -> None:
        self.interrupted = False
        self.job_ids: list[str] = []

    @abstractmethod
    def run(self, rundirs: list[Path], costs: list[float] | None = None) -> None:
        """Execute every folder's cmd.sh once; `costs` (expected seconds, same order) may
        refine a progress estimate."""


def default_jobs(target: str) -> int:
    """Cores, capped for gem5 by memory (about 1 GiB per gem5 process)."""
    cores = os.cpu_count() or 1
    if target != "gem5":
        return cores
    try:
        with open("/proc/meminfo") as f:
            info = {ln.split(":")[0]: int(ln.split()[1]) for ln in f if ":" in ln}
        gib = info.get("MemAvailable", 0) / (1 << 20)
        return max(1, min(cores, int(gib)))
    except (OSError, ValueError, IndexError):
        return cores


def fmt_s(s: float) -> str:
    s = int(s)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Progress line. With `costs` (expected seconds per run, in start order) the ETA scales
    the expected cost of what is left by how the finished runs compared with theirs, so a
    sweep that starts with its slowest runs does not promise hours too many."""

    def __init__(self, total: int, jobs: int, out: TextIO = sys.stderr,
                 costs: list[float] | None = None) -> None:
        self.total, self.jobs, self.out = total, jobs, out
        self.done = self.failed = 0
        self.t0 = time.monotonic()
        self.last = 0.0
        self.tty = out.isatty()
        self.costs = costs if costs and len(costs) == total else None
        self.done_cost = 0.0

    def finished(self, index: int, ok: bool) -> None:
        self.done += 1
        self.failed += not ok
        if self.costs:
            self.done_cost += self.costs[index]

    def eta(self, elapsed: float) -> str:
        if not self.done:
            return "?"
        if self.costs and self.done_cost > 0:
            left = sum(self.costs) - self.done_cost
            return fmt_s(elapsed * left / self.done_cost)
        return fmt_s(elapsed / self.done * (self.total - self.done))

    def update(self, running: int, force: bool = False) -> None:
        t = time.monotonic()
        if not force and t - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = t
        el = t - self.t0
        line = (f"[{self.done}/{self.total}] failed {self.failed}, running {running}, "
                f"elapsed {fmt_s(el)}, ETA {self.eta(el)}")
        self.out.write(("\r" + line + "\033[K") if self.tty else line + "\n")
        self.out.flush()

    def close(self) -> None:
        self.update(0, force=True)
        if self.tty:
            self.out.write("\n")


def mark(rundir: Path, status: str, cause: str) -> None:
    """Write a status for a run whose runner could not (it was SIGKILLed)."""
    if read_status(rundir) is None:
        write_json_atomic(rundir / "status.json", {
            "status": status, "cause": cause, "stderr_tail": "", "wall_s": None,
            "exit_code": None, "target": None, "provenance": {}})


class LocalExecutor(Executor):
    """A pool of `bash cmd.sh` subprocesses, each in its own process group."""

    def __init__(self, jobs: int, timeout: float | None, grace: float,
                 progress: TextIO | None = sys.stderr) -> None:
        super().__init__()
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.grace = grace
        self.progress_out = progress

    def run(self, rundirs: list[Path], costs: list[float] | None = None) -> None:
        """Run every folder's cmd.sh; `costs` (expected seconds, same order) refine the ETA."""
        pending = list(reversed(rundirs))
        order = {d: i for i, d in enumerate(rundirs)}
        running: dict[subprocess.Popen[bytes], tuple[Path, float]] = {}
        prog = Progress(len(rundirs), self.jobs, self.progress_out, costs) \
            if self.progress_out else None
        # the runner enforces the timeout; this is the backstop if the runner hangs
        backstop = (self.timeout + self.grace + 60) if self.timeout else None
        # the runner gets SIGTERM (a clean stop, recorded `killed`) when this driver ends
        preexec = die_with_parent(signal.SIGTERM)
        try:
            while pending or running:
                while pending and len(running) < self.jobs:
                    d = pending.pop()
                    p = subprocess.Popen(["bash", str(d / "cmd.sh")], start_new_session=True,
                                         stdin=subprocess.DEVNULL, preexec_fn=preexec)
                    running[p] = (d, time.monotonic())
                finished = [p for p in running if p.poll() is not None]
                if not finished:
                    t = time.monotonic()
                    for p, (d, t0) in list(running.items()):
                        if backstop and t - t0 > backstop:
                            _killpg(p, signal.SIGKILL)
                            p.wait()
                            mark(d, "timeout", f"runner did not stop within {backstop:g} s")
                            finished.append(p)
                    if not finished:
                        _wait_any(list(running), 0.5)
                for p in finished:
                    d, _ = running.pop(p)
                    if read_status(d) is None:
                        mark(d, "crashed", f"runner exited {p.returncode} without a status")
                    if prog:
                        st = read_status(d) or {}
                        prog.finished(order[d], st.get("status") == "ok")
                if prog and prog.done < prog.total:
                    prog.update(len(running))
        except KeyboardInterrupt:
            self.interrupted = True
            self._stop(running)
        finally:
            if prog:
                prog.close()

    def _stop(self, running: dict[subprocess.Popen[bytes], tuple[Path, float]]) -> None:
        sys.stderr.write(f"\ninterrupted: stopping {len(running)} running run(s)\n")
        for p in running:
            _killpg(p, signal.SIGINT)  # the runner forwards it and records `killed`
        deadline = time.monotonic() + self.grace + 10
        while running and time.monotonic() < deadline:
            try:
                for p in [p for p in running if p.poll() is not None]:
                    running.pop(p)
                time.sleep(0.05)
            except KeyboardInterrupt:
                break
        for p in running:
            _killpg(p, signal.SIGKILL)
            p.wait()
        for d in [d for d, _ in running.values()]:
            mark(d, "killed", "driver interrupted; run stopped with SIGKILL")


def _killpg(p: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_any(procs: list[subprocess.Popen[bytes]], timeout: float) -> None:
    """Sleep until one of `procs` exits (pidfd + select) or `timeout` passes."""
    fds = []
    try:
        for p in procs:
            try:
                fds.append(os.pidfd_open(p.pid))
            except ProcessLookupError:
                return  # already gone: reap it now
        select.select(fds, [], [], timeout)
    except (AttributeError, OSError):
        time.sleep(0.01)
    finally:
        for fd in fds:
            os.close(fd)
