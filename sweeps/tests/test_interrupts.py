"""A sweep stopped in every way (kill -9 of the driver or a runner, Ctrl-C, SIGTERM, a second
driver on the same folder) loses nothing finished and resumes: real driver, runner and
executor processes."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import time
from pathlib import Path

from sweeps.tests.conftest import Fakes
from sweeps.tests.test_driver import attn, by_seed


def alive(pid: int) -> bool:
    """True while `pid` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def started_pids(folder: Path) -> dict[str, tuple[int, int]]:
    """What the fake workloads wrote to FAKE_PIDS: name -> (workload pid, runner pid)."""
    out = {}
    for f in folder.iterdir():
        parts = f.read_text().split()
        if len(parts) == 2:
            out[f.name] = (int(parts[0]), int(parts[1]))
    return out


def test_kill9_driver_then_resume(fakes: Fakes) -> None:
    """kill -9 of the driver: no run outlives it (runner and workload gone within seconds),
    the run it stopped is recorded `killed` and rerun by a plain `run`, no finished run is
    lost or redone, and no temporary status file is left behind."""
    fakes.env["FAKE_SLEEP"] = "0.4"
    fakes.env["FAKE_HANG"] = "120"  # seed 14 is still running when the driver dies
    pids = fakes.root / "pids"
    pids.mkdir()
    fakes.env["FAKE_PIDS"] = str(pids)
    seeds = [14, *range(1, 10)]
    spec = fakes.spec("resume", axes=attn(seed=seeds))
    p = fakes.popen("run", str(spec), "--results", str(fakes.results), "-j", "2")
    runs = fakes.results / "resume" / "runs"
    deadline = time.monotonic() + 60
    while (len(list(runs.glob("*/status.json"))) < 3 or not list(pids.glob("14-*"))) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    started = started_pids(pids)
    assert any(k.startswith("14-") for k in started)
    procs = {pid for pair in started.values() for pid in pair}
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in procs if alive(pid)], "runs outlived their driver"
    sts = {s: st for (s, _), st in by_seed(fakes.statuses("resume")).items()}
    assert sts.get(14) == "killed", sts  # stopped by the runner on its parent's death
    ok_before = {s: s.stat().st_mtime_ns for s in runs.glob("*/status.json")
                 if json.loads(s.read_text())["status"] == "ok"}
    assert 3 <= len(ok_before) < 10
    assert set(sts.values()) <= {"ok", "killed"}
    r = fakes.cli("plan", str(spec), "--results", str(fakes.results))
    m = re.search(r"done (\d+), failed 0, to run (\d+) \((\d+) of them killed", r.stdout)
    assert m and int(m.group(1)) == len(ok_before), r.stdout
    assert int(m.group(2)) == 10 - len(ok_before) and int(m.group(3)) >= 1, r.stdout
    assert "of run time" in r.stdout  # estimated from the wall_s of the finished runs
    calls_before = len(fakes.calls())
    fakes.env["FAKE_HANG"] = "0.2"
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "-j", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(ok_before)} already done, {10 - len(ok_before)} to run" in r.stdout
    after = list(runs.glob("*/status.json"))
    assert len(after) == 10
    assert all(json.loads(s.read_text())["status"] == "ok" for s in after)
    assert all(s.stat().st_mtime_ns == m for s, m in ok_before.items())  # none lost or redone
    ran = [int(c.split("--seed ")[1].split()[0]) for c in fakes.calls()]
    assert sorted(set(ran)) == sorted(seeds)  # every run executed
    assert ran.count(14) == 2  # the killed run, once more
    assert len(ran) - calls_before == 10 - len(ok_before)  # the resume ran only the rest
    assert not list((fakes.results / "resume").rglob("*.tmp"))


def test_kill9_runner_takes_its_target_along(fakes: Fakes) -> None:
    """A runner killed hard (OOM killer, kill -9) leaves no workload behind; the driver
    records the run crashed and the sweep ends."""
    fakes.env["FAKE_HANG"] = "120"
    pids = fakes.root / "pids"
    pids.mkdir()
    fakes.env["FAKE_PIDS"] = str(pids)
    spec = fakes.spec("runner9", axes=attn(seed=[14]))
    p = fakes.popen("run", str(spec), "--results", str(fakes.results))
    deadline = time.monotonic() + 60
    while not list(pids.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    (wl, runner), = started_pids(pids).values()
    os.kill(runner, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while alive(wl) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(wl), "the workload outlived its runner"
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1, out + err
    (st,) = fakes.statuses("runner9").values()
    assert st["status"]["status"] == "crashed" and "without a status" in st["status"]["cause"]


def test_ctrl_c_marks_running_runs_killed(fakes: Fakes) -> None:
    fakes.env["FAKE_SLEEP"] = "0.3"
    spec = fakes.spec("intr", axes=attn(seed=[1, 2, 3, 14, 14 + 100]))
    p = fakes.popen("run", str(spec), "--results", str(fakes.results), "-j", "2",
                    "--grace", "1")
    runs = fakes.results / "intr" / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = list(runs.glob("*/status.json"))
        if len(done) >= 1 and sum(1 for c in fakes.calls() if "--seed 14 " in c):
            break
        time.sleep(0.05)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    got = by_seed(fakes.statuses("intr"))
    assert got[(14, False)] == "killed"
    assert got.get((1, False)) == "ok"
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "--retry-failed",
                  "--timeout", "1", "--grace", "1")
    assert r.returncode == 1
    assert by_seed(fakes.statuses("intr"))[(14, False)] == "timeout"
    assert len(by_seed(fakes.statuses("intr"))) == 5


def test_lock_held_gives_clear_message(fakes: Fakes) -> None:
    spec = fakes.spec("locked", axes=attn())
    folder = fakes.results / "locked"
    folder.mkdir(parents=True)
    with open(folder / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("pid 12345 on testhost\n")
        f.flush()
        r = fakes.cli("run", str(spec), "--results", str(fakes.results))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "another vecscale driver" in lines[0] and ".lock" in lines[0]
    assert "Traceback" not in r.stderr


def test_sigterm_stops_like_ctrl_c_even_with_sigint_ignored(fakes: Fakes) -> None:
    fakes.env["FAKE_SLEEP"] = "0.3"
    spec = fakes.spec("term", axes=attn(seed=[1, 14]))
    # what `cmd &` in a non-interactive shell does: SIGINT ignored in the child
    p = fakes.popen("run", str(spec), "--results", str(fakes.results), "-j", "2",
                    "--grace", "1", preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                     signal.SIG_IGN))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
            (fakes.results / "term" / "runs").exists()
            and sum(1 for c in fakes.calls() if "--seed 14 " in c)
            and len(list((fakes.results / "term" / "runs").glob("*/status.json"))) >= 1):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    got = by_seed(fakes.statuses("term"))
    assert got == {(1, False): "ok", (14, False): "killed"}


#: kill -9 of the driver in the middle of one sweep, resumed after each (issue 19 saw 17)
KILLS = 6
#: the kills each test of this module makes (sweeps/README.md's fault table counts them;
#: sweeps/tests/faults.py checks that every test here is listed)
KILLS_BY_TEST: dict[str, tuple[str, int]] = {
    "test_kill9_driver_then_resume": ("kill -9 of the driver", 1),
    "test_repeated_kill9_loses_and_redoes_nothing": ("kill -9 of the driver", KILLS),
    "test_kill9_runner_takes_its_target_along": ("kill -9 of a runner", 1),
    "test_ctrl_c_marks_running_runs_killed": ("Ctrl-C or SIGTERM of the driver", 1),
    "test_sigterm_stops_like_ctrl_c_even_with_sigint_ignored":
        ("Ctrl-C or SIGTERM of the driver", 1),
    "test_lock_held_gives_clear_message": ("a second driver on the same sweep", 1),
}


def test_repeated_kill9_loses_and_redoes_nothing(fakes: Fakes) -> None:
    """A sweep killed hard KILLS times, resumed by a plain `run` after each: no run outlives
    its driver, no finished run is lost or run again, and the last `run` completes it."""
    fakes.env["FAKE_SLEEP"] = "0.3"
    pids = fakes.root / "pids"
    pids.mkdir()
    fakes.env["FAKE_PIDS"] = str(pids)
    seeds = [s for s in range(1, 4 * KILLS + 4) if s not in (13, 14, 15)]
    spec = fakes.spec("kills", axes=attn(seed=seeds))
    runs = fakes.results / "kills" / "runs"
    finished: dict[int, tuple[int, int]] = {}  # seed -> (status.json mtime, calls then)

    def seed_calls(seed: int) -> int:
        return sum(1 for c in fakes.calls() if f"--seed {seed} " in c)

    for _ in range(KILLS):
        p = fakes.popen("run", str(spec), "--results", str(fakes.results), "-j", "2")
        deadline = time.monotonic() + 60
        while len(list(runs.glob("*/status.json"))) < len(finished) + 2 \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        procs = {pid for pair in started_pids(pids).values() for pid in pair}
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in procs if alive(pid)], "runs outlived their driver"
        got = {s: st for (s, _), st in by_seed(fakes.statuses("kills")).items()}
        assert set(got.values()) <= {"ok", "killed"}, got
        for seed, (mtime, _) in finished.items():  # still there, untouched
            assert got.get(seed) == "ok" and _mtime(runs, fakes, seed) == mtime, (seed, got)
        for seed, st in got.items():
            if st == "ok" and seed not in finished:
                finished[seed] = (_mtime(runs, fakes, seed), seed_calls(seed))
    assert len(finished) < len(seeds)  # the kills came before the end
    r = fakes.cli("run", str(spec), "--results", str(fakes.results), "-j", "2")
    assert r.returncode == 0 and f"ok {len(seeds)} of {len(seeds)}" in r.stdout, r.stdout
    for seed, (mtime, calls) in finished.items():
        assert _mtime(runs, fakes, seed) == mtime and seed_calls(seed) == calls
    assert not list((fakes.results / "kills").rglob("*.tmp"))


def _id_of(fakes: Fakes, seed: int) -> str:
    return next(rid for rid, v in fakes.statuses("kills").items()
                if f"--seed {seed} " in " ".join(v["run"]["workload"]["args"]) + " ")


def _mtime(runs: Path, fakes: Fakes, seed: int) -> int:
    return (runs / _id_of(fakes, seed) / "status.json").stat().st_mtime_ns
