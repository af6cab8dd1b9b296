"""Finding gem5: $GEM5 wins, else the `make gem5` build of this series, else one line."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from system import gem5find
from system.gem5find import Gem5Error, find_gem5

ROOT = Path(__file__).resolve().parents[2]
INFO_GEM5 = """#!/bin/sh
echo 'VECSCALE_GEM5_INFO {"version": "24.0.0.1", "isas": ["RISCV"], "patched": true}'
"""


def _exe(path: Path, text: str) -> Path:
    path.write_text(text.replace("#!PYTHON", f"#!{sys.executable}"))
    path.chmod(0o755)
    return path


def fake_build(root: Path, text: str = INFO_GEM5, series: str | None = None,
               binary_sha: str | None = None, patch_lines: list[str] | None = None) -> Path:
    """A build folder as build-gem5 leaves it: the binary and a STAMP naming it."""
    binary = root / "gem5" / "build" / "RISCV" / "gem5.opt"
    binary.parent.mkdir(parents=True)
    _exe(binary, text)
    lines = patch_lines if patch_lines is not None else gem5find.series_lines()
    (root / "STAMP").write_text("\n".join([
        "# vecscale gem5 build stamp", f"series {series or gem5find.series_hash()}", *lines,
        "tag v24.0.0.1", "compiler g++ (Debian 12.2.0-14) 12.2.0", "python /usr/bin/python3 3.11.2",
        "built 2026-01-01T00:00:00Z in 90min on 2 cores",
        f"binary {binary_sha or hashlib.sha256(binary.read_bytes()).hexdigest()}"]) + "\n")
    return binary


def env_with(build: Path, gem5: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GEM5"}
    env["GEM5_BUILD_DIR"] = str(build)
    if gem5 is not None:
        env["GEM5"] = gem5
    return env


def test_gem5_set_wins_over_a_build(tmp_path: Path) -> None:
    fake_build(tmp_path / "b")
    assert find_gem5(env_with(tmp_path / "b", "/somewhere/gem5.opt")) == "/somewhere/gem5.opt"


def test_no_gem5_finds_the_stamped_build(tmp_path: Path) -> None:
    binary = fake_build(tmp_path / "b")
    assert find_gem5(env_with(tmp_path / "b")) == str(binary)


@pytest.mark.parametrize("broken", ["series", "binary"])
def test_a_stamp_that_does_not_match_is_no_build(tmp_path: Path, broken: str) -> None:
    """Another series' build, or a binary changed after its stamp, is not used."""
    fake_build(tmp_path / "b", **{broken: "0" * 64} if broken == "series"
               else {"binary_sha": "0" * 64})
    with pytest.raises(Gem5Error):
        find_gem5(env_with(tmp_path / "b"))


def test_neither_is_one_line_naming_make_gem5(tmp_path: Path) -> None:
    with pytest.raises(Gem5Error) as e:
        find_gem5(env_with(tmp_path / "empty"))
    msg = str(e.value)
    assert "\n" not in msg and "GEM5 is not set" in msg
    assert "make gem5 GEM5_SRC=" in msg and f"on {os.cpu_count()} core" in msg


def test_build_time_scales_with_cores() -> None:
    assert gem5find.build_time(2) == "about 1.5 h on 2 cores"
    assert gem5find.build_time(8) == "about 20 min on 8 cores"


def run_check(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "system.gem5check"], capture_output=True,
                          text=True, env=env, cwd=ROOT)


def test_check_gem5_prints_the_stamp(tmp_path: Path) -> None:
    binary = fake_build(tmp_path / "b")
    proc = run_check(env_with(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    assert f"ok: gem5 24.0.0.1 (RISCV) with vecscale patches: {binary}" in proc.stdout
    assert "v24.0.0.1 (b1a44b89c7ba)" in proc.stdout and "g++ (Debian" in proc.stdout
    assert "series matches the current gem5-patches/" in proc.stdout


def test_check_gem5_names_the_patch_that_changed(tmp_path: Path) -> None:
    """GEM5 given by hand with an older build's stamp: which patch differs is said."""
    lines = gem5find.series_lines()
    old = [ln.replace(ln.split()[1], "f" * 64) if ln.endswith(".patch") and "0003" in ln
           else ln for ln in lines]
    binary = fake_build(tmp_path / "b", series="1" * 64, patch_lines=old)
    proc = run_check(env_with(tmp_path / "none", str(binary)))
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if "series differs" in ln]
    names = [ln.rsplit(" ", 1)[-1] for ln in lines if "0003" in ln]
    assert names and names[0] in line and "0001" not in line


def test_check_gem5_without_a_stamp_says_so(tmp_path: Path) -> None:
    gem5 = _exe(tmp_path / "gem5.opt", INFO_GEM5)
    proc = run_check(env_with(tmp_path / "none", str(gem5)))
    assert proc.returncode == 0 and "stamp: none" in proc.stdout, proc.stdout + proc.stderr


def test_check_gem5_with_nothing_is_one_line(tmp_path: Path) -> None:
    proc = run_check(env_with(tmp_path / "none"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "make gem5" in lines[0], proc.stderr
