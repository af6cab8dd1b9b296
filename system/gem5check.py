"""Check that gem5 ($GEM5, else the `make gem5` build) is a patched v24.0.0.1 RISCV build.

`python -m system.gem5check` (or `make check-gem5`): one line per finding, exit 0 when
usable, 2 otherwise; with a build stamp, also the build's facts and whether its patch series
is the current gem5-patches/. Also used by `tools.one` before gem5 starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from system.gem5find import Gem5Error, find_gem5, read_stamp, series_hash, series_lines

REPO = Path(__file__).resolve().parent.parent
EXPECTED_VERSION = "24.0.0.1"
INFO_SCRIPT = REPO / "configs" / "gem5_info.py"


__all__ = ["Gem5Error", "check", "gem5_info", "gem5_path", "stamp_report"]


def gem5_path(env: dict[str, str] | None = None) -> Path:
    value = find_gem5(env)
    path = Path(value)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise Gem5Error(f"GEM5={value}: not an executable file")
    return path


def gem5_info(path: Path, timeout: float = 120) -> dict:
    """Ask the binary itself (version, ISAs, whether our params exist)."""
    try:
        with tempfile.TemporaryDirectory(prefix="vecscale-gem5check-") as out:
            proc = subprocess.run(
                [str(path), "-q", f"--outdir={out}", str(INFO_SCRIPT)],
                capture_output=True, text=True, timeout=timeout,
            )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Gem5Error(f"GEM5={path}: could not run it ({e})") from None
    for line in proc.stdout.splitlines():
        if line.startswith("VECSCALE_GEM5_INFO "):
            return json.loads(line.split(" ", 1)[1])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise Gem5Error(f"GEM5={path}: not a usable gem5 ({tail})")


def check(env: dict[str, str] | None = None) -> dict:
    """Raise Gem5Error unless GEM5 is a patched v24.0.0.1 RISCV build; return its info."""
    path = gem5_path(env)
    info = gem5_info(path)
    if info.get("version") != EXPECTED_VERSION:
        raise Gem5Error(f"GEM5={path}: gem5 {info.get('version')}, expected {EXPECTED_VERSION}")
    if "RISCV" not in info.get("isas", []):
        raise Gem5Error(f"GEM5={path}: built for {info.get('isas')}, expected RISCV")
    if not info.get("patched"):
        raise Gem5Error(f"GEM5={path}: the vecscale patches are not applied (gem5-patches/)")
    missing = info.get("missing_params") or []
    if missing:
        raise Gem5Error(
            f"GEM5={path}: built from an older gem5-patches/ series (no BaseMinorCPU."
            f"{missing[0]}): re-apply the series and rebuild"
        )
    info["path"] = str(path)
    return info


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def stamp_report(gem5: str) -> list[str]:
    """Lines about the binary's build stamp: its facts, whether the binary is the stamped
    one, and whether its series is the current gem5-patches/ (and which patch differs)."""
    st = read_stamp(gem5)
    if st is None:
        return ["stamp: none (not built by `make gem5`; provenance records the binary's hash)"]
    commit = st.get("base", "?")
    lines = [f"stamp: gem5 {st.get('tag', '?')} ({commit[:12]}), series "
             f"{st['series'][:16]}, built {st.get('built', '?')}",
             f"stamp: compiler {st.get('compiler', '?')}; python {st.get('python', '?')}"]
    if st.get("binary") != _sha256(gem5):
        lines.append("stamp: WARNING: the binary's sha256 is not the stamped one "
                     "(changed after the build)")
    if st["series"] == series_hash():
        lines.append("stamp: series matches the current gem5-patches/")
    else:
        now = set(series_lines())
        was = {ln for k in ("base", "patch") for ln in
               (f"{k} {v}" for v in st.get(k, "").splitlines())}
        names = sorted({"BASE" if ln.startswith("base ") else ln.rsplit(" ", 1)[-1]
                        for ln in now ^ was})
        lines.append("stamp: series differs from the current gem5-patches/ ("
                     + (", ".join(names) or "?") + "): `make gem5` builds the current one")
    return lines


def main() -> int:
    try:
        info = check()
    except Gem5Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"ok: gem5 {info['version']} ({', '.join(info['isas'])}) with vecscale patches: "
          f"{info['path']}")
    for line in stamp_report(info["path"]):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
