"""Slurm executor: one `sbatch --array` per submission, followed with squeue until done.

The array script (templates/slurm_array.sh.j2) maps SLURM_ARRAY_TASK_ID to a line of a runs
file and execs that run's cmd.sh, so the batch shell *is* the runner and Slurm's
``--signal=B:INT@60`` reaches it. Runs that end without a status.json (node failure,
cancelled before start) are resubmitted; failed runs only with --retry-failed (decided by the
driver before the executor is called).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sweeps.executors import Executor
from sweeps.render import environment, render
from sweeps.results import read_status


@dataclass(frozen=True)
class SlurmSettings:
    """What the Slurm executor takes from the command line."""

    max_parallel: int = 64  # array throttle %K
    sbatch_args: tuple[str, ...] = ()  # extra #SBATCH lines
    resubmit: int = 1  # resubmissions of runs that left no status.json
    poll_s: float = 5.0  # squeue interval
    grace: float = 30.0  # seconds between SIGINT and SIGKILL of a run
    templates: Path | None = None  # folder overriding sweeps/templates/ by name


class SlurmError(RuntimeError):
    pass


def _slurm_time(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}"


def _cmd(argv: list[str], timeout: float = 60) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]}: not found (is Slurm installed on this host?)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:2])}: no answer within {timeout:g} s") from None
    if p.returncode != 0:
        msg = " ".join(p.stderr.split())[:300] or f"exit {p.returncode}"
        raise SlurmError(f"{argv[0]}: {msg}")
    return p.stdout


class SlurmExecutor(Executor):
    def __init__(self, folder: Path, sweep: str, target: str, timeout: float | None,
                 settings: SlurmSettings) -> None:
        super().__init__()
        self.folder = folder
        self.sweep = sweep
        self.timeout = timeout
        self.opts = settings
        self.dir = folder / "slurm"
        self.env = environment(settings.templates)
        self.target = target

    def submit(self, rundirs: list[Path]) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        n = len(list(self.dir.glob("array-*.sh")))
        runs_file = self.dir / f"runs-{n}.txt"
        runs_file.write_text("".join(f"{d}\n" for d in rundirs))
        limit = (self.timeout or 7 * 86400) + self.opts.grace + 120
        script = render(self.env, "slurm_array.sh.j2", sweep=self.sweep, n_runs=len(rundirs),
                        max_parallel=max(1, self.opts.max_parallel), runs_file=str(runs_file),
                        time_limit=_slurm_time(limit), log_dir=str(self.dir / "logs"),
                        mem_mb=2048 if self.target == "gem5" else 256,
                        sbatch_extra=list(self.opts.sbatch_args))
        path = self.dir / f"array-{n}.sh"
        path.write_text(script)
        out = _cmd(["sbatch", "--parsable", str(path)])
        job = out.strip().split(";")[0]
        if not job.isdigit():
            raise SlurmError(f"sbatch: unexpected answer {out.strip()!r} (expected a job id)")
        self.job_ids.append(job)
        sys.stderr.write(f"submitted Slurm array job {job}: {len(rundirs)} runs ({path})\n")
        return job

    def follow(self, job: str, rundirs: list[Path]) -> None:
        failures = 0
        last = ""
        while True:
            try:
                out = _cmd(["squeue", "-h", "-j", job, "-o", "%T"])
                failures = 0
            except SlurmError as e:
                if "Invalid job id" in str(e):
                    out = ""
                else:
                    failures += 1
                    if failures > 5:
                        raise
                    out = "?"
            states = out.split()
            done = sum(1 for d in rundirs if read_status(d) is not None)
            line = (f"job {job}: {done}/{len(rundirs)} finished, "
                    f"{states.count('RUNNING')} running, {states.count('PENDING')} pending")
            if line != last:
                sys.stderr.write(line + "\n")
                last = line
            if not states:
                return
            time.sleep(self.opts.poll_s)

    def accounting(self, job: str) -> str | None:
        try:
            return _cmd(["sacct", "-n", "-P", "-X", "-j", job, "-o", "JobID,State,ExitCode"],
                        timeout=20)
        except SlurmError:
            return None  # no accounting storage configured: status.json is the record

    def run(self, rundirs: list[Path], costs: list[float] | None = None) -> None:
        todo = list(rundirs)
        try:
            for attempt in range(1 + max(0, self.opts.resubmit)):
                job = self.submit(todo)
                self.follow(job, todo)
                acct = self.accounting(job)
                if acct:
                    states = Counter(ln.split("|")[1].split()[0] for ln in acct.splitlines()
                                     if ln.count("|") >= 2)
                    sys.stderr.write(f"job {job} (sacct): "
                                     + ", ".join(f"{k} {v}" for k, v in states.items()) + "\n")
                todo = [d for d in todo if read_status(d) is None]
                if not todo:
                    return
                sys.stderr.write(f"job {job}: {len(todo)} runs left no status.json"
                                 + ("; resubmitting them\n" if attempt < self.opts.resubmit
                                    else "\n"))
        except KeyboardInterrupt:
            self.interrupted = True
            for job in self.job_ids:
                try:
                    _cmd(["scancel", "--signal=INT", "--full", job])
                    _cmd(["scancel", job])
                except SlurmError as e:
                    sys.stderr.write(f"scancel {job}: {e}\n")
            sys.stderr.write("interrupted: cancelled the Slurm job(s); finished runs kept\n")
