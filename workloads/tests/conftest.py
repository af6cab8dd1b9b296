"""Shared fixtures for workload tests: build once, run under qemu-user."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "workloads" / "build"
VLENS = (128, 256, 512, 1024)


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str

    @property
    def record(self) -> dict:
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith("{")]
        assert len(lines) == 1, f"expected one JSON line, got: {self.stdout!r} {self.stderr!r}"
        return json.loads(lines[0])


def qemu_run(binary: str, args: list[str], vlen: int = 256, timeout: float = 300,
             zvfh: bool = False) -> Result:
    """Run workloads/build/<binary> under qemu-riscv64 with the given VLEN; `zvfh` turns on
    the half-precision vector extension, which fp16 vector code needs (QEMU >= 10)."""
    path = BUILD / binary
    cpu = f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0" + (",zvfh=true" if zvfh else "")
    proc = subprocess.run(
        ["qemu-riscv64", "-cpu", cpu, str(path), *args],
        capture_output=True, text=True, timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def require_zvfh_qemu(what: str) -> None:
    """Fail (not skip) unless qemu-user is 10 or newer, the first with Zvfh: `make setup`
    installs it from bookworm-backports."""
    out = subprocess.run(["qemu-riscv64", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.", out)
    if not m or int(m.group(1)) < 10:
        pytest.fail(f"{what} need qemu-user >= 10 (Zvfh); found {out.splitlines()[:1]}: "
                    "run `make setup`")


def llvm_objdump(binary: str, *args: str) -> str:
    """Disassembly of workloads/build/<binary> with RVV decoded (LLVM 19, from `make setup`;
    an older unversioned llvm-objdump prints vector instructions as raw words)."""
    tool = shutil.which("llvm-objdump-19")
    if tool is None:
        pytest.fail("llvm-objdump-19 not found: run `make setup` (Debian package llvm-19)")
    out = subprocess.run([tool, "-d", "--mattr=+v", *args, str(BUILD / binary)],
                         capture_output=True, text=True, check=True)
    return out.stdout


@pytest.fixture(scope="session", autouse=True)
def built_workloads() -> None:
    if shutil.which("qemu-riscv64") is None:
        pytest.fail("qemu-riscv64 not found: run `make setup`")
    subprocess.run(["make", "-s", "workloads"], cwd=ROOT, check=True)
