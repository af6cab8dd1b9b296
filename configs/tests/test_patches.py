"""The patch series is well-formed, pinned to its base, and applies to that base."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

PATCHES = Path(__file__).resolve().parents[2] / "gem5-patches"


def series() -> list[Path]:
    return sorted(PATCHES.glob("*.patch"))


def test_series_is_numbered_and_documented() -> None:
    names = [p.name for p in series()]
    assert names, "no patches"
    assert [int(n[:4]) for n in names] == list(range(1, len(names) + 1))
    readme = (PATCHES / "README.md").read_text()
    for n in names:
        assert n[:4] in readme, f"{n} is not described in gem5-patches/README.md"


def test_base_is_pinned() -> None:
    base = dict(
        line.split("=", 1) for line in (PATCHES / "BASE").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert base["tag"] == "v24.0.0.1"
    assert re.fullmatch(r"[0-9a-f]{40}", base["commit"])


def test_patches_are_mail_format_and_touch_only_sources() -> None:
    for p in series():
        text = p.read_text()
        assert text.startswith("From ") and "\nSubject: [PATCH" in text, p.name
        for path in re.findall(r"^diff --git a/(\S+) b/", text, flags=re.M):
            assert path.startswith("src/"), f"{p.name} touches {path}"
            assert "GIT binary patch" not in text


def test_series_applies_with_git_am(tmp_path: Path) -> None:
    src = os.environ.get("GEM5_SRC")
    if not src:
        pytest.skip("set GEM5_SRC to a gem5 git checkout to test `git am` of the series")
    base = dict(
        line.split("=", 1) for line in (PATCHES / "BASE").read_text().splitlines()
        if line and not line.startswith("#")
    )
    # Apply to a throw-away index of the base commit: no work tree is touched, and a bare
    # mirror works as well as a clone.
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "vecscale-test-index")}
    subprocess.run(["git", "-C", src, "read-tree", base["commit"]], env=env, check=True)
    try:
        proc = subprocess.run(
            ["git", "-C", src, "apply", "--cached", "--check", *map(str, series())],
            env=env, capture_output=True, text=True,
        )
        assert proc.returncode == 0, proc.stderr
    finally:
        Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
