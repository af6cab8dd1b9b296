"""gem5-patches/build-gem5 refuses a source that cannot be the base: one line, exit 2, before
it clones or builds anything. Nothing here builds gem5: the build folder's parent is a file,
so a check that wrongly passed would stop at `mkdir` (exit 1) instead of cloning.

The cases that need a real gem5 history (another commit checked out, local changes) use the
clone or mirror named by GEM5_SRC and skip without it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "gem5-patches" / "build-gem5"
BASE = dict(line.split("=", 1) for line in (ROOT / "gem5-patches" / "BASE").read_text()
            .splitlines() if line and not line.startswith("#"))["commit"]


def refuse(tmp_path: Path, src: Path | str) -> str:
    """Run build-gem5 on src; assert a one-line refusal with exit 2 and return it."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("build-gem5 must not get as far as creating its build folder\n")
    env = {**os.environ, "GEM5_SRC": str(src), "GEM5_BUILD_DIR": str(blocker / "build"),
           "GEM5_JOBS": "1"}
    proc = subprocess.run([str(SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert proc.stdout == "" and not (blocker.parent / "build").exists()
    assert lines[0].startswith("gem5: GEM5_SRC=")
    return lines[0]


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True, timeout=120)


def test_a_path_that_does_not_exist(tmp_path: Path) -> None:
    assert "no such path" in refuse(tmp_path, tmp_path / "nowhere")


def test_not_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert "not a git repository" in refuse(tmp_path, tmp_path / "plain")


def test_a_git_repository_without_the_base_commit(tmp_path: Path) -> None:
    repo = tmp_path / "other"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "f").write_text("x\n")
    git("add", "f", cwd=repo)
    git("commit", "-q", "-m", "not gem5", cwd=repo)
    assert f"has no commit {BASE}" in refuse(tmp_path, repo)


@pytest.fixture
def gem5_clone(tmp_path: Path) -> Path:
    """A cheap non-bare clone of GEM5_SRC (objects shared, only README.md checked out)."""
    src = os.environ.get("GEM5_SRC")
    if not src:
        pytest.skip("set GEM5_SRC to a gem5 clone or mirror to test refusing a checkout")
    clone = tmp_path / "gem5"
    subprocess.run(["git", "clone", "-q", "--no-checkout", "--shared", src, str(clone)],
                   check=True, capture_output=True, timeout=300)
    git("sparse-checkout", "set", "--no-cone", "/README.md", cwd=clone)
    return clone


def test_a_clone_at_another_commit(tmp_path: Path, gem5_clone: Path) -> None:
    git("checkout", "-q", "--detach", f"{BASE}~1", cwd=gem5_clone)
    line = refuse(tmp_path, gem5_clone)
    assert "checked out at" in line and "v24.0.0.1" in line


def test_a_clone_with_local_changes(tmp_path: Path, gem5_clone: Path) -> None:
    git("checkout", "-q", "--detach", BASE, cwd=gem5_clone)
    with open(gem5_clone / "README.md", "a") as f:
        f.write("a local change\n")
    assert "has local changes" in refuse(tmp_path, gem5_clone)
