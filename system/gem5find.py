"""Which gem5 to run: $GEM5 when set, else the build `make gem5` made for this patch series.

Also reads that build's STAMP (written by gem5-patches/build-gem5 beside the binary). Kept to
cheap standard-library imports: the per-run runner imports it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATCH_DIR = os.path.join(REPO, "gem5-patches")
BUILD_SCRIPT = os.path.join(PATCH_DIR, "build-gem5")
#: a full build measured about 1.5 h on 2 cores; it scales roughly with cores
BUILD_CORE_MINUTES = 180


class Gem5Error(RuntimeError):
    """A one-line reason why gem5 cannot be used."""


def build_time(cores: int | None = None) -> str:
    cores = cores or os.cpu_count() or 1
    minutes = max(10, round(BUILD_CORE_MINUTES / cores / 5) * 5)
    shown = f"{minutes / 60:.1f} h" if minutes >= 60 else f"{minutes} min"
    return f"about {shown} on {cores} core{'s' if cores > 1 else ''}"


def missing_message() -> str:
    return ("GEM5 is not set and `make gem5` has not built the current gem5-patches/ series: "
            "run `make gem5 GEM5_SRC=<a gem5 clone or mirror>` (" + build_time() +
            ") or export GEM5=<a patched build/RISCV/gem5.opt>")


def built_gem5(env: Mapping[str, str] | None = None) -> str | None:
    """The binary `build-gem5 --where` names for the current series (GEM5_BUILD_DIR and
    XDG_CACHE_HOME honoured), or None when there is no finished build."""
    try:
        proc = subprocess.run([BUILD_SCRIPT, "--where"], capture_output=True, text=True,
                              timeout=300, env=dict(env if env is not None else os.environ))
    except (OSError, subprocess.SubprocessError):
        return None
    path = proc.stdout.strip()
    return path if proc.returncode == 0 and path else None


def find_gem5(env: Mapping[str, str] | None = None) -> str:
    """$GEM5 when set (not checked here), else the finished build; Gem5Error otherwise."""
    env = env if env is not None else os.environ
    if env.get("GEM5"):
        return env["GEM5"]
    path = built_gem5(env)
    if path is None:
        raise Gem5Error(missing_message())
    return path


def export_gem5() -> str:
    """find_gem5(), also set as $GEM5 so that the runs' subprocesses and scripts get it."""
    path = find_gem5()
    os.environ["GEM5"] = path
    return path


def series_lines() -> list[str]:
    """What build-gem5 hashes as the patch series: the base commit and each patch's sha256."""
    base = ""
    with open(os.path.join(PATCH_DIR, "BASE")) as f:
        for line in f:
            if line.startswith("commit="):
                base = line.strip().split("=", 1)[1]
    lines = [f"base {base}"]
    for name in sorted(n for n in os.listdir(PATCH_DIR) if n.endswith(".patch")):
        with open(os.path.join(PATCH_DIR, name), "rb") as f:
            lines.append(f"patch {hashlib.sha256(f.read()).hexdigest()} {name}")
    return lines


def series_hash() -> str:
    return hashlib.sha256("".join(ln + "\n" for ln in series_lines()).encode()).hexdigest()


def stamp_path(gem5: str) -> str:
    """<build dir>/STAMP for a binary at <build dir>/gem5/build/RISCV/gem5.opt."""
    return os.path.join(os.path.dirname(os.path.abspath(gem5)), *[os.pardir] * 3, "STAMP")


def read_stamp(gem5: str) -> dict[str, str] | None:
    """The stamp's `key value` lines (`base` and `patch` lines joined by newlines), or None
    when the binary has no stamp (a gem5 built by hand)."""
    try:
        with open(os.path.normpath(stamp_path(gem5))) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.split(" ", 1)
        out[key] = out[key] + "\n" + value if key in ("base", "patch") and key in out else value
    return out if "series" in out else None


def stamp_provenance(gem5: str | None) -> dict[str, str | None]:
    """The stamp's facts a run records: series hash and gem5 commit (None without a stamp)."""
    st = read_stamp(gem5) if gem5 else None
    return {"gem5_series": st.get("series") if st else None,
            "gem5_commit": st.get("base") if st else None}
