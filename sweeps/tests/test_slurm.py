"""The Slurm executor against a real single-node Slurm cluster started on loopback.

The fixture writes slurm.conf for this host into a temp dir, starts munged (fresh key),
slurmctld and slurmd, and always stops the daemons it started. Skipped only when the
Slurm/munge binaries are missing or the test is not running as root.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweeps.tests.conftest import ROOT, Fakes

BINS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")
pytestmark = [
    pytest.mark.skipif(any(shutil.which(b) is None for b in BINS),
                       reason="Slurm/munge not installed (apt-get install slurm-wlm munge)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a private Slurm cluster needs root"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mem_mb() -> int:
    with open("/proc/meminfo") as f:
        kb = int(next(ln for ln in f if ln.startswith("MemTotal")).split()[1])
    return max(1024, kb // 1024 // 2)


@pytest.fixture
def slurm(tmp_path: Path) -> Iterator[dict[str, str]]:
    # Long on purpose: one readable script that starts munged, slurmctld and slurmd for
    # this test alone, waits for them, yields, and tears them down in reverse.
    d = tmp_path / "slurm"
    for sub in ("state", "spool", "munge"):
        (d / sub).mkdir(parents=True)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = d / "munge" / "munge.sock"
    host = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(f"""\
ClusterName=vecscaletest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=1
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={mem_mb()} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=str(conf))
    procs: list[subprocess.Popen] = []
    logs = []

    def start(argv: list[str], name: str) -> None:
        log = open(d / f"{name}.out", "w")
        logs.append(log)
        procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))

    try:
        start(["munged", "-F", "--force", f"--key-file={key}", f"--socket={sock}",
               f"--pid-file={d}/munge/munged.pid", f"--log-file={d}/munge/munged.log",
               f"--seed-file={d}/munge/munged.seed"], "munged")
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        start(["slurmctld", "-D", "-i", "-f", str(conf)], "slurmctld")
        time.sleep(1)
        start(["slurmd", "-D", "-N", host, "-f", str(conf)], "slurmd")
        deadline = time.monotonic() + 60
        state = ""
        while time.monotonic() < deadline:
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True,
                               text=True)
            state = p.stdout.strip()
            if state.startswith(("idle", "mixed", "allocated")):
                break
            dead = [x.args[0] for x in procs if x.poll() is not None]
            if dead:
                break
            time.sleep(0.5)
        else:
            dead = []
        if not state.startswith(("idle", "mixed", "allocated")):
            tails = {n: (d / n).read_text()[-600:] for n in ("slurmctld.log", "slurmd.log")
                     if (d / n).exists()}
            pytest.fail(f"Slurm did not come up (sinfo: {state!r}, exited: {dead}): {tails}")
        yield env
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def test_slurm_array_and_resubmit(fakes: Fakes, slurm: dict[str, str]) -> None:
    fakes.env["SLURM_CONF"] = slurm["SLURM_CONF"]
    real = (ROOT / "workloads" / "build" / "attention").exists() and \
        (ROOT / "workloads" / "build" / "q8").exists() and shutil.which("qemu-riscv64")
    if real:  # the real qemu grid with the real binaries
        fakes.use_real_workloads()
        spec, n_runs = "qemu-ci", 13
    else:
        spec = str(fakes.spec("slurm-fake", axes={
            "vlen": [128, 256], "kernel": ["fa-v", "ggml-vec"], "model": ["tinyllama-1.1b"],
            "phase": ["prefill"], "n": [4], "seed": [1, 2, 3]}))
        n_runs = 12
    name = "qemu-ci" if real else "slurm-fake"
    args = ("run", spec, "--executor", "slurm", "--results", str(fakes.results),
            "--poll", "0.5", "--max-parallel", "4")
    r = fakes.cli(*args, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    sts = fakes.statuses(name)
    assert len(sts) == n_runs
    for v in sts.values():
        st = v["status"]
        assert st["status"] == "ok", st
        assert st["provenance"]["slurm_job_id"], st["provenance"]
    prov = json.loads((fakes.results / name / "provenance.json").read_text())
    first_job = prov["invocations"][-1]["slurm_jobs"]
    assert len(first_job) == 1 and first_job[0].isdigit()
    assert all(v["status"]["provenance"]["slurm_job_id"].startswith(first_job[0] + "_")
               for v in sts.values())

    # delete some results: only those are resubmitted
    runs = fakes.results / name / "runs"
    gone = sorted(runs.glob("*/status.json"))[:3]
    for p in gone:
        p.unlink()
    kept = {p: p.stat().st_mtime_ns for p in runs.glob("*/status.json")}
    r = fakes.cli(*args, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{n_runs - 3} already done, 3 to run" in r.stdout
    assert all(p.stat().st_mtime_ns == m for p, m in kept.items())
    assert all(p.exists() for p in gone)
    prov = json.loads((fakes.results / name / "provenance.json").read_text())
    second_job = prov["invocations"][-1]["slurm_jobs"][0]
    assert second_job != first_job[0]
    for p in gone:
        st = json.loads(p.read_text())
        assert st["status"] == "ok" and st["provenance"]["slurm_job_id"].startswith(
            second_job + "_")
    script = (fakes.results / name / "slurm" / "array-1.sh").read_text()
    assert "#SBATCH --array=0-2%4" in script and "#SBATCH --signal=B:INT@60" in script
