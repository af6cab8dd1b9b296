""".ci/run takes gem5 from ../shared/gem5/get-gem5 when it answers, else says why in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE_MAKE = '#!/bin/sh\necho "make $* GEM5=${GEM5:-}"\n'


def ci(tmp_path: Path, get_gem5: str | None) -> list[str]:
    """Run a copy of .ci/run in tmp_path/repo with a fake make (it only echoes)."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "run", repo / ".ci" / "run")
    shutil.copytree(ROOT / "gem5-patches", repo / "gem5-patches")
    if get_gem5 is not None:
        (tmp_path / "shared" / "gem5").mkdir(parents=True)
        get = tmp_path / "shared" / "gem5" / "get-gem5"
        get.write_text(get_gem5)
        get.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text(FAKE_MAKE)
    (bin_dir / "make").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "GEM5"}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
               GEM5_BUILD_DIR=str(tmp_path / "no-build"))
    proc = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("script, reason", [
    (None, "no ../shared/gem5/get-gem5"),
    ("#!/bin/sh\necho 'get-gem5: the patches differ' >&2\necho '  0003-x.patch' >&2\nexit 1\n",
     "get-gem5: the patches differ"),
])
def test_gem5_tests_skipped_with_the_reason(tmp_path: Path, script: str | None,
                                            reason: str) -> None:
    out = ci(tmp_path, script)
    assert out == ["make setup GEM5=", f"ci: gem5-gated tests skipped: {reason}",
                   "make test GEM5="]


def test_gem5_from_get_gem5_reaches_make_test(tmp_path: Path) -> None:
    out = ci(tmp_path, "#!/bin/sh\necho /prebuilt/gem5.opt\n")
    assert out[0] == "make setup GEM5=" and out[-1] == "make test GEM5=/prebuilt/gem5.opt"
    assert out[1].startswith("ci: gem5-gated tests run on /prebuilt/gem5.opt")


def make_variable(name: str) -> list[str]:
    """A Makefile variable's value as make expands it (make's database, nothing run)."""
    out = subprocess.run(["make", "-pn", "help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60).stdout
    for line in out.splitlines():
        if line.startswith(f"{name} :=") or line.startswith(f"{name} ="):
            return line.split("=", 1)[1].split()
    raise AssertionError(f"Makefile defines no {name}")


def test_make_setup_installs_every_named_package_list() -> None:
    # `:=` expands at definition: a list defined after APT_PACKAGES would be empty in it,
    # and a fresh machine would lack cmake and riscv64 libstdc++ for ggml's build.
    apt = make_variable("APT_PACKAGES")
    for part in ("GGML_BUILD_PACKAGES", "GEM5_RUNTIME_PACKAGES"):
        members = make_variable(part)
        assert members and set(members) <= set(apt), f"{part} missing from APT_PACKAGES"
