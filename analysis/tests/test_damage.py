"""Fault injection on a sweep's results (issue 19, items 1-3): every way a run folder can be
damaged is reported by id with its file, counted against the plan (points.json), and never
stops the report or leaves an old report looking current."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from analysis import tables
from analysis.collect import collect
from analysis.completeness import headline, listing, problems_table
from analysis.report import make_report

ROOT = Path(__file__).resolve().parents[2]
#: the run every case damages: a usable gem5 run of the synthetic sweep
VICTIM = "fav-1024-16"
#: runs of the synthetic sweep that are not ok before any damage (a gem5-error run and a
#: run whose stats.txt is cut)
NOT_OK = {"fav-2048-8": "failed", "fav-4096-16": "corrupt"}
N_RUNS = 14


def _json(name: str, obj: object) -> Callable[[Path], None]:
    return lambda d: (d / name).write_text(json.dumps(obj))


def _edit(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def f(d: dict | Path) -> None:
        assert isinstance(d, Path)
        obj = json.loads((d / name).read_text())
        change(obj)
        (d / name).write_text(json.dumps(obj))

    return f


def _set(*keys: str, value: object) -> Callable[[dict], None]:
    def f(obj: dict) -> None:
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value

    return f


def _bytes(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


def _cut(name: str, keep: int) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes((d / name).read_bytes()[:keep])


def _rm(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).unlink()


def _stats_value(line_start: str, value: str) -> Callable[[Path], None]:
    def f(d: Path) -> None:
        lines = (d / "stats.txt").read_text().splitlines()
        i = next(i for i, ln in enumerate(lines) if ln.startswith(line_start))
        lines[i] = f"{line_start} {value}"
        (d / "stats.txt").write_text("\n".join(lines) + "\n")

    return f


def _folder_to_file(d: Path) -> None:
    shutil.rmtree(d)
    d.write_text("not a folder")


def _single_dump(d: Path) -> None:
    text = (d / "stats.txt").read_text()
    (d / "stats.txt").write_text(text[:text.index("Begin Simulation", 200) - 12])


# (case, damage to the run folder, expected problem, text the detail must contain)
DAMAGE: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("folder-deleted", shutil.rmtree, "missing", "no run folder"),
    ("folder-is-a-file", _folder_to_file, "missing", "no run folder"),
    ("status-deleted", _rm("status.json"), "missing", "no status.json"),
    ("status-empty", _bytes("status.json", b""), "corrupt", "status.json: empty file"),
    ("status-cut", _cut("status.json", 9), "corrupt", "status.json: not valid JSON"),
    ("status-not-utf8", _bytes("status.json", b"\xff\xfe{}"), "corrupt",
     "status.json: not UTF-8"),
    ("status-a-list", _json("status.json", [1, 2]), "corrupt", "status.json: expected"),
    ("status-no-status", _json("status.json", {"cause": "x"}), "corrupt",
     "status.json: no status"),
    ("status-not-string", _edit("status.json", _set("status", value=5)), "corrupt",
     "status.json: no status"),
    ("status-unknown", _edit("status.json", _set("status", value="exploded")),
     "unknown status", "'exploded' is not one of"),
    ("status-wall-not-number", _edit("status.json", _set("wall_s", value="slow")), "ok", ""),
    ("run-deleted", _rm("run.json"), "corrupt", "run.json: missing"),
    ("run-cut", _cut("run.json", 30), "corrupt", "run.json: not valid JSON"),
    ("run-not-utf8", _bytes("run.json", b"\xff\xfe\x00"), "corrupt", "run.json: not UTF-8"),
    ("run-a-list", _json("run.json", []), "corrupt", "run.json: expected"),
    ("run-axes-a-list", _edit("run.json", _set("axes", value=[1])), "corrupt",
     "run.json: axes"),
    ("run-vlen-text", _edit("run.json", _set("axes", "vlen", value="wide")), "corrupt",
     "run.json: axes.vlen"),
    ("run-n-a-list", _edit("run.json", _set("axes", "n", value=[64])), "corrupt",
     "run.json: axes.n"),
    ("run-kernel-number", _edit("run.json", _set("axes", "kernel", value=7)), "corrupt",
     "run.json: axes.kernel"),
    ("run-system-text", _edit("run.json", _set("system", value="big")), "corrupt",
     "run.json: system"),
    ("run-roi-dump-text", _edit("run.json", _set("roi_dump", value="two")), "corrupt",
     "roi_dump"),
    ("run-roi-dump-zero", _edit("run.json", _set("roi_dump", value=0)), "corrupt",
     "roi_dump"),
    ("run-roi-dump-beyond", _edit("run.json", _set("roi_dump", value=9)), "corrupt",
     "stats.txt"),
    ("result-deleted", _rm("result.json"), "corrupt", "result.json: missing"),
    ("result-empty", _bytes("result.json", b""), "corrupt", "result.json: empty file"),
    ("result-garbage", _bytes("result.json", b"\x00\x01garbage"), "corrupt",
     "result.json"),
    ("result-not-utf8", _bytes("result.json", b"\xff\xfe"), "corrupt", "result.json: not UTF-8"),
    ("result-a-list", _json("result.json", [1]), "corrupt", "result.json: expected"),
    ("result-heads-text", _edit("result.json", _set("heads", value="many")), "corrupt",
     "result.json: heads"),
    ("result-pass-text", _edit("result.json", _set("pass", value="yes")), "corrupt",
     "result.json: pass"),
    ("result-error-text", _edit("result.json", _set("max_abs_err", value="small")),
     "corrupt", "result.json: max_abs_err"),
    ("stats-deleted", _rm("stats.txt"), "corrupt", "stats.txt"),
    ("stats-empty", _bytes("stats.txt", b""), "corrupt", "stats.txt"),
    ("stats-cut", _cut("stats.txt", 500), "corrupt", "stats.txt"),
    ("stats-binary", _bytes("stats.txt", bytes(range(256)) * 8), "corrupt", "stats.txt"),
    ("stats-no-banner", _bytes("stats.txt", b"simTicks 1\n"), "corrupt", "stats.txt"),
    ("stats-value-text", _stats_value("system.cpu.numCycles", "many"), "corrupt",
     "stats.txt"),
    ("stats-single-dump", _single_dump, "corrupt", "stats.txt"),
]


def _plan(sweep: Path, extra: tuple[str, ...] = ()) -> None:
    """A points.json naming every run of the synthetic sweep (and `extra` ids)."""
    ids = sorted(p.name for p in (sweep / "runs").iterdir()) + list(extra)
    (sweep / "points.json").write_text(json.dumps(
        [{"axes": {"kernel": "fa-v", "seed": i}, "run": rid} for i, rid in enumerate(ids)]))


def test_every_damaged_run_is_named_and_the_report_written(sweep: Path) -> None:
    """Each case damages its own copy of a usable run (after a first collect cached them
    all); one report over all of them: written, and every copy named with its kind."""
    for case, *_ in DAMAGE:
        shutil.copytree(sweep / "runs" / VICTIM, sweep / "runs" / case)
    _plan(sweep)
    assert collect(sweep).parsed == N_RUNS + len(DAMAGE)
    for case, damage, _, _ in DAMAGE:
        damage(sweep / "runs" / case)
    rep = make_report(sweep)  # must not raise
    assert not rep.warnings, rep.warnings
    t = problems_table(collect(sweep).df).set_index("id")
    want = {**NOT_OK, **{c: k for c, _, k, _ in DAMAGE if k != "ok"}}
    assert dict(t["problem"]) == want
    wrong = [(c, t.loc[c, "detail"]) for c, _, k, d in DAMAGE if k != "ok"
             and d not in t.loc[c, "detail"]]
    assert not wrong, wrong
    html = rep.path.read_text()
    assert rep.summary in html
    lines = listing(collect(sweep).df, max_listed=len(DAMAGE))
    for case, _, kind, _ in DAMAGE:
        if kind == "ok":
            continue
        (line,) = [ln for ln in lines if ln.startswith(f"  {case}  ")]
        assert line.startswith(f"  {case}  {kind}: ") and case in html
    n_corrupt = sum(k == "corrupt" for _, _, k, _ in DAMAGE) + 1
    assert f"  ... and {n_corrupt - 25} more corrupt (see the report)" in rep.problems
    n_ok = N_RUNS - len(NOT_OK) + sum(k == "ok" for _, _, k, _ in DAMAGE)
    assert rep.summary.startswith(f"ok {n_ok} of {N_RUNS + len(DAMAGE)} planned runs, ")


def test_deleted_run_is_missing_not_gone(sweep: Path) -> None:
    """"ok 2019 of 2020, 1 missing: <id>": the plan has 2020 runs, a folder was deleted."""
    _plan(sweep, extra=("never-run",))
    df = collect(sweep).df
    assert headline(df).startswith(f"ok {N_RUNS - 2} of {N_RUNS + 1} planned runs, "
                                   "1 missing: never-run, 1 corrupt: fav-4096-16, 1 failed")
    assert list(df.loc[df["id"] == "never-run", "status"]) == ["missing"]
    assert "missing" in set(tables.all_tables(df)["status"]["status"])


def test_runs_outside_the_plan_and_no_plan_are_said(sweep: Path) -> None:
    assert "no points.json" in headline(collect(sweep).df, collect(sweep).notes[0])
    _plan(sweep)
    shutil.copytree(sweep / "runs" / VICTIM, sweep / "runs" / "old-binary")
    line = headline(collect(sweep).df)
    assert f"ok {N_RUNS - 2} of {N_RUNS} planned runs" in line and "1 more not in " \
        "points.json" in line
    (sweep / "points.json").write_text("[{")
    res = collect(sweep)
    assert res.notes == ["points.json: not valid JSON: the runs found were not compared "
                         "with a plan"]


def test_content_no_check_foresaw_is_named_not_fatal(sweep: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose row cannot be computed for a reason no check names is a corrupt row
    naming the run; the other runs and the report go on."""
    from analysis import collect as collect_mod

    real = collect_mod.derived

    def odd(row: dict, axes: dict, system: dict, result: dict) -> dict:
        if row["id"] == VICTIM:
            raise ZeroDivisionError("odd run")
        return real(row, axes, system, result)

    monkeypatch.setattr(collect_mod, "derived", odd)
    rep = make_report(sweep, use_cache=False)
    t = problems_table(collect(sweep, use_cache=False).df).set_index("id")
    assert t.loc[VICTIM, "problem"] == "corrupt"
    assert t.loc[VICTIM, "detail"] == (f"runs/{VICTIM}: cannot be analysed "
                                       "(ZeroDivisionError: odd run)")
    assert VICTIM in rep.path.read_text() and len(t) == len(NOT_OK) + 1


def test_a_table_that_fails_is_named_and_the_report_still_written(
        sweep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(df: pd.DataFrame, _get: object) -> pd.DataFrame:
        raise ValueError("odd value in one run")

    spot = next(i for i, t in enumerate(tables.CATALOGUE) if t.name == "speedup")
    broken = tables.Table("speedup", "Speedup", boom)
    monkeypatch.setattr(tables, "CATALOGUE", (*tables.CATALOGUE[:spot], broken,
                                              *tables.CATALOGUE[spot + 1:]))
    rep = make_report(sweep)
    assert rep.warnings == ["table speedup not computed: ValueError: odd value in one run"]
    assert rep.warnings[0] in rep.path.read_text()


def test_a_failed_report_does_not_leave_the_old_one_looking_current(
        sweep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis import report

    old = make_report(sweep).path.read_text()

    def boom(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report.plots, "make_all", boom)
    with pytest.raises(OSError):
        make_report(sweep)
    now = (sweep / "report.html").read_text()
    assert "Report not written" in now and "No space left on device" in now
    assert (sweep / "report.previous.html").read_text() == old


def test_report_cli_names_damaged_runs_in_one_line_each(sweep: Path) -> None:
    _plan(sweep, extra=("never-run",))
    (sweep / "runs" / VICTIM / "status.json").write_bytes(b"\xff")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "analysis", "report", str(sweep)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    lines = p.stdout.splitlines()
    assert f"ok {N_RUNS - 3} of {N_RUNS + 1} planned runs, 1 missing: never-run, " \
           "2 corrupt, 1 failed: fav-2048-8" in lines
    assert f"  {VICTIM}  corrupt: runs/{VICTIM}/status.json: not UTF-8 text" in lines
    assert any(ln.startswith("  never-run  missing: no run folder") for ln in lines)
