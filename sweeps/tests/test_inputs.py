"""Bad input at every command line (issue 19, items 6 and 7): options out of range, unknown
--only values, a grid too large, bad paths given to each CLI, a reader that goes away. Each
ends with one line on stderr naming the option, key or file, exit status 2 (141 for the
closed pipe), and no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.tests.conftest import ROOT, Fakes
from sweeps.tests.test_driver import attn

#: vecscale options: (argv after the verb and SPEC, text the one line must contain)
OPTIONS: list[tuple[str, list[str], str]] = [
    ("run", ["--timeout", "-5"], "--timeout: expected a number > 0 (got -5)"),
    ("run", ["--timeout", "0"], "--timeout: expected a number > 0"),
    ("run", ["--timeout", "nan"], "--timeout: expected a number > 0 (got nan)"),
    ("run", ["--timeout", "inf"], "--timeout: expected a number > 0 (got inf)"),
    ("run", ["--timeout", "soon"], "argument --timeout: invalid float value"),
    ("run", ["--grace", "-1"], "--grace: expected a number of seconds >= 0"),
    ("run", ["-j", "0"], "-j: expected a positive number"),
    ("run", ["--max-parallel", "0"], "--max-parallel: expected a positive number"),
    ("run", ["--resubmit", "-1"], "--resubmit: expected a count >= 0"),
    ("run", ["--poll", "0"], "--poll: expected a number > 0"),
    ("run", ["--executor", "cloud"], "argument --executor: invalid choice: 'cloud'"),
    ("plan", ["--max-points", "0"], "--max-points: expected a positive number"),
    ("plan", ["--max-points", "3"], "axes: the grid has 4 points (4 seed), above the limit "
                                    "of 3"),
    ("plan", ["--only", "kernel=fa-v,nope"], "'nope' not a value of axis kernel"),
    ("plan", ["--only", "sed=1"], "unknown axis 'sed'"),
    ("plan", ["--only", "seed"], "expected AXIS=VALUE"),
    ("plan", ["--only", "seed=[1]"], "expected a plain value"),
    ("plan", ["--only", "seed=9"], "9 not a value of axis seed"),
    ("plan", ["--only", "vlen=512"], "512 not a value of axis vlen"),
    ("run", ["--templates", "no-such-folder"], "--templates"),
]

#: bad paths at every CLI: (argv with {file}, {dir}, {sweep} for a plain file, an empty
#: folder and a results folder; text the one line must contain)
PATHS: list[tuple[list[str], str]] = [
    (["sweeps", "plan", "{dir}"], "cannot read: Is a directory"),
    (["sweeps", "plan", "{dir}/nope.yaml"], "nope.yaml: cannot read: No such file"),
    (["sweeps", "plan", "{file}"], "(top level): expected a mapping"),
    (["sweeps", "plan", "{binary}"], "not UTF-8"),
    (["sweeps", "plan", "/dev/zero"], "/dev/zero: not a regular file"),  # was a hang
    (["sweeps", "plan", "{fifo}"], "not a regular file"),  # would block
    (["sweeps", "plan", "{huge}"], "larger than 16 MiB"),
    (["sweeps", "plan", "qemu-ci", "--results", "{file}/x"], "is a file, not a folder"),
    (["sweeps", "status", "qemu-ci", "--results", "{file}"], "is a file, not a folder"),
    (["sweeps", "run", "qemu-ci", "--results", "{file}/x/y"], "is a file, not a folder"),
    (["analysis", "report", "{file}"], "not a folder"),
    (["analysis", "report", "{dir}"], "has no runs/ folder"),
    (["analysis", "report", "{dir}/nope"], "no such results folder"),
    (["analysis", "collect", "{file}"], "not a folder"),
    (["analysis", "tables", "{dir}/nope"], "no such results folder"),
    (["analysis", "compact", "{sweep}", "{file}/x"], "is a file, not a folder"),
    (["analysis", "compact", "{sweep}"], "compact needs a destination folder"),
    (["analysis", "doc", "{sweep}", "{dir}"], "Is a directory"),
    (["analysis", "doc", "{sweep}", "{dir}/nope.md"], "nope.md: No such file"),
    (["system", "check", "{dir}"], "a folder, not a uarch file"),
    (["system", "check", "{dir}/nope.yaml"], "file not found"),
    (["system", "check", "{file}"], "empty file"),
    (["system", "check", "{binary}"], "not UTF-8"),
    (["system", "export-schema", "{file}"], "is a file, not a folder"),
    (["system", "export-schema", "{file}/x"], "is a file, not a folder"),
    (["system", "resolve", "{dir}/x.yaml", "512", "8"], "file not found"),
    (["tools.one", "vitruvius-plus", "512", "8", "--results", "{file}/x", "--", "--kernel",
      "fa-v"], "--results"),
    (["tools.vbench", "table", "--out", "{file}"], "--out"),
    (["tools.vbench", "table", "--out", "{file}/x"], "--out"),
]


def _one_line(p: subprocess.CompletedProcess, want: str) -> None:
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and len(lines) == 1, p.stderr
    assert want in lines[0], (want, lines[0])


@pytest.mark.parametrize(("verb", "argv", "want"), OPTIONS,
                         ids=[f"{v}-{' '.join(a)}" for v, a, _ in OPTIONS])
def test_bad_option_is_one_line(fakes: Fakes, verb: str, argv: list[str], want: str) -> None:
    spec = fakes.spec("opts", axes=attn(seed=[1, 2, 3, 4]))
    _one_line(fakes.cli(verb, str(spec), "--results", str(fakes.results), *argv), want)
    assert not fakes.calls()  # nothing ran


@pytest.mark.parametrize(("argv", "want"), PATHS, ids=[" ".join(a) for a, _ in PATHS])
def test_bad_path_is_one_line(tmp_path: Path, argv: list[str], want: str) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "dir").mkdir()
    (tmp_path / "binary.yaml").write_bytes(b"name: \xff\xfe\n")
    (tmp_path / "sweep" / "runs").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo.yaml")
    with open(tmp_path / "huge.yaml", "wb") as f:
        f.truncate((16 << 20) + 1)
    subs = {"{file}": str(tmp_path / "file"), "{dir}": str(tmp_path / "dir"),
            "{binary}": str(tmp_path / "binary.yaml"), "{sweep}": str(tmp_path / "sweep"),
            "{fifo}": str(tmp_path / "fifo.yaml"), "{huge}": str(tmp_path / "huge.yaml")}
    args = []
    for a in argv:
        for k, v in subs.items():
            a = a.replace(k, v)
        args.append(a)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GEM5_BUILD_DIR": str(tmp_path / "none")}
    env.pop("GEM5", None)
    # bounded: without the checks, /dev/zero is read until memory runs out
    p = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60, preexec_fn=_limit_memory)
    _one_line(p, want)


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_closed_pipe_is_quiet(fakes: Fakes) -> None:
    """`vecscale plan SPEC | head -1` where the reader has gone before the listing is written:
    no traceback, the status of a SIGPIPE death. The read end is closed before the planner
    has started (reading a line first raced: a short listing is written in one flush and the
    planner could exit 0 before the close)."""
    spec = fakes.spec("pipe", axes=attn(seed=list(range(1, 5))))
    r, w = os.pipe()
    p = subprocess.Popen([sys.executable, "-m", "sweeps", "plan", str(spec), "--results",
                          str(fakes.results)], cwd=ROOT, env=fakes.env,
                         stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    os.close(r)
    err = p.stderr.read().decode() if p.stderr else ""
    assert p.wait(timeout=60) == 128 + signal.SIGPIPE and "Traceback" not in err, err
    assert err == "", err


def test_duplicate_spec_key_is_one_line(fakes: Fakes) -> None:
    spec = fakes.spec("dup", axes=attn())
    spec.write_text(spec.read_text() + "name: other\n")
    p = fakes.cli("plan", str(spec), "--results", str(fakes.results))
    _one_line(p, "duplicate key 'name'")
