"""Check that $GEM5 is a gem5 v24.0.0.1 RISCV build with the vecscale patches applied.

`python -m sweeps.gem5check` (or `make check-gem5`): one line per finding, exit 0 when
usable, 2 otherwise. Also used by the planner before a gem5 sweep starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXPECTED_VERSION = "24.0.0.1"
INFO_SCRIPT = REPO / "configs" / "gem5_info.py"


class Gem5Error(RuntimeError):
    """A one-line reason why GEM5 cannot be used."""


def gem5_path(env: dict[str, str] | None = None) -> Path:
    value = (env if env is not None else os.environ).get("GEM5", "")
    if not value:
        raise Gem5Error("GEM5 is not set: point it to a patched build/RISCV/gem5.opt")
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


def main() -> int:
    try:
        info = check()
    except Gem5Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"ok: gem5 {info['version']} ({', '.join(info['isas'])}) with vecscale patches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
