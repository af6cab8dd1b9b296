"""Fixtures for the sweep driver tests: fake workloads, fake qemu, fake gem5, CLI helper.

The fakes are real executables run as real processes by the real driver and runner; they
only stand in for what is slow or not built yet (the RISC-V binaries, gem5).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from workloads.kernels import FAMILIES, binaries

ROOT = Path(__file__).resolve().parents[2]

# Behaviour chosen by --seed: 1.. ok, 13 segfault, 14 hang (FAKE_HANG s, default 60), 15 bad
# arguments. With FAKE_PIDS set to a folder, each run writes its pid and its parent's there.
FAKE_WORKLOAD = r'''#!PYTHON
import json, os, signal, sys, time
args = sys.argv[1:]
opt = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
counter = os.environ.get("VECSCALE_TEST_COUNTER")
if counter:
    with open(counter, "a") as f:
        f.write(" ".join(args) + "\n")
seed = int(opt.get("--seed", "1"))
pids = os.environ.get("FAKE_PIDS")  # a folder: "<pid> <parent pid>" per started workload
if pids:
    with open(os.path.join(pids, f"{seed}-{os.getpid()}"), "w") as f:
        f.write(f"{os.getpid()} {os.getppid()}\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if seed == 13:
    os.kill(os.getpid(), signal.SIGSEGV)
if seed == 14:
    time.sleep(float(os.environ.get("FAKE_HANG", "60")))
if seed == 15:
    print("unknown argument --bogus", file=sys.stderr)
    sys.exit(2)
bad = "--test-perturb" in args
print(json.dumps({"workload": os.path.basename(sys.argv[0]), "kernel": opt.get("--kernel"),
                  "vlen": int(os.environ.get("FAKE_VLEN", "0")), "max_abs_err": 1.0 if bad else 0.0,
                  "max_rel_err": 1.0 if bad else 0.0, "pass": not bad}))
sys.exit(1 if bad else 0)
'''

# qemu-riscv64 stand-in: drops "-cpu SPEC", passes VLEN on, runs the "binary" natively.
FAKE_QEMU = r'''#!/bin/sh
cpu="$2"; shift 2
vlen=$(echo "$cpu" | sed -n 's/.*vlen=\([0-9]*\).*/\1/p')
FAKE_VLEN=$vlen exec "$@"
'''

# gem5 stand-in honouring the run.py contract; behaviour by --seed in the workload args:
# 21 gem5 panics (no workload_exit.json), 22 no stats.txt, 23 stats.txt without a dump,
# 24 workload exit 1, 25 killed by SIGABRT; anything else: a good run.
FAKE_GEM5 = r'''#!PYTHON
import json, os, signal, sys
outdir = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--outdir=")][0]
run = json.load(open(sys.argv[-1]))
args = run["workload"]["args"]
seed = int(args[args.index("--seed") + 1])
counter = os.environ.get("VECSCALE_TEST_COUNTER")
if counter:
    with open(counter, "a") as f:
        f.write(" ".join(args) + "\n")
def w(name, text):
    with open(os.path.join(outdir, name), "w") as f:
        f.write(text)
w("config.ini", "[root]\ntype=Root\n")
w("simerr", "gem5 Simulator System.\n")
if seed == 21:
    w("simerr", "gem5 Simulator System.\npanic: fake panic in Execute::issue\n")
    sys.exit(134)
if seed == 25:
    os.kill(os.getpid(), signal.SIGABRT)
code = 1 if seed == 24 else 0
w("simout", json.dumps({"workload": "attention", "vlen": run["system"]["vlen"],
                        "pass": code == 0, "max_abs_err": 0.0, "max_rel_err": 0.0}) + "\n")
if seed != 22:
    dump = "" if seed == 23 else "\n---------- Begin Simulation Statistics ----------\nsimTicks 1\n"
    w("stats.txt", dump)
w("workload_exit.json", json.dumps({"exit_code": code, "cause": "exiting with last thread"}))
'''


def _exe(path: Path, text: str) -> Path:
    path.write_text(text.replace("#!PYTHON", f"#!{sys.executable}"))
    path.chmod(0o755)
    return path


@dataclass
class Fakes:
    root: Path
    env: dict[str, str]
    counter: Path
    results: Path

    def use_real_workloads(self) -> None:
        """Run the built workloads under qemu-riscv64 instead of the stand-ins (gem5 stays
        the fake)."""
        self.env = {k: v for k, v in self.env.items() if k not in ("VECSCALE_WORKLOADS", "QEMU")}

    def spec(self, name: str, target: str = "qemu", **body: Any) -> Path:
        data = {"name": name, "target": target, **body}
        p = self.root / f"{name}.yaml"
        p.write_text(yaml.safe_dump(data, sort_keys=False))
        return p

    def cli(self, *args: str, timeout: float = 180, **kw: Any) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sweeps", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout, **kw)

    def popen(self, *args: str, **kw: Any) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "sweeps", *args], cwd=ROOT,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, **kw)

    def calls(self) -> list[str]:
        return self.counter.read_text().splitlines() if self.counter.exists() else []

    def statuses(self, sweep: str) -> dict[str, dict]:
        out = {}
        for st in sorted((self.results / sweep / "runs").glob("*/status.json")):
            run = json.loads((st.parent / "run.json").read_text())
            out[st.parent.name] = {"status": json.loads(st.read_text()), "run": run}
        return out


def real_gem5() -> str | None:
    """The gem5 the gem5-gated tests run on ($GEM5, else the `make gem5` build), looked up
    with the real environment, before no_gem5_build() hides the build."""
    from system.gem5find import Gem5Error, find_gem5

    try:
        return find_gem5()
    except Gem5Error:
        return None


@pytest.fixture(autouse=True)
def no_gem5_build(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
                  ) -> None:
    """Tests that unset GEM5 must not find a real `make gem5` build of this machine."""
    monkeypatch.setenv("GEM5_BUILD_DIR", str(tmp_path_factory.mktemp("no-gem5-build")))


@pytest.fixture
def fakes(tmp_path: Path, no_gem5_build: None) -> Fakes:
    wl = tmp_path / "wl"
    wl.mkdir()
    for b in (*binaries(), *(f.by_hand for f in FAMILIES.values())):
        _exe(wl / b, FAKE_WORKLOAD)
    qemu = _exe(tmp_path / "fake-qemu", FAKE_QEMU)
    gem5 = _exe(tmp_path / "fake-gem5.opt", FAKE_GEM5)
    config = tmp_path / "run.py"
    config.write_text("# stand-in for configs/run.py; the fake gem5 does not read it\n")
    env = dict(os.environ)
    env.update({"VECSCALE_WORKLOADS": str(wl), "QEMU": str(qemu), "GEM5": str(gem5),
                "VECSCALE_GEM5_CONFIG": str(config),
                "VECSCALE_TEST_COUNTER": str(tmp_path / "calls.txt"),
                "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")})
    return Fakes(tmp_path, env, tmp_path / "calls.txt", tmp_path / "results")
