"""python -m system: check, resolve, export-schema; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from system.cli import main
from system.loader import load_uarch
from system.resolved import resolve
from system.tests.test_uarch import REPO, _base, _write

# ----------------------------------------------------------------------------- CLI


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "system", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_resolve_prints_json() -> None:
    r = _cli("resolve", "paper-vl-scaled", "4096", "32")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == resolve(load_uarch("paper-vl-scaled"), 4096, 32)


def test_cli_resolve_fixed_without_lanes() -> None:
    r = _cli("resolve", "paper-fixed", "65536", "none")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["lanes"] is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("resolve", "paper-vl-scaled", "16384", "8"), "vlen: 16384 outside the allowed"),
        (("resolve", "paper-vl-scaled", "abc", "8"), "'abc' is not an integer"),
        (("resolve", "no-such-uarch", "512", "8"), "no uarch named 'no-such-uarch'"),
        (("resolve", "paper-vl-scaled"), "error:"),
        (("frobnicate",), "error:"),
        ((), "error:"),
        (("check", "does/not/exist.yaml"), "does/not/exist.yaml: file not found"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args: tuple[str, ...], expected: str) -> None:
    r = _cli(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert expected in r.stderr


def test_cli_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path, _base("good"), "good")
    bad_data = _base("bad")
    bad_data["vlen"]["max"] = 5000
    bad = _write(tmp_path, bad_data, "bad")
    assert main(["check", str(good)]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["check", str(good), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.yaml: vlen.max: 5000 is not a power of two" in err[0]


def test_cli_export_schema(tmp_path: Path) -> None:
    assert main(["export-schema", str(tmp_path)]) == 0
    schema = json.loads((tmp_path / "uarch.schema.json").read_text())
    assert schema["type"] == "object"
    assert {"name", "vlen", "timing_model", "op_latency"} <= set(schema["properties"])
