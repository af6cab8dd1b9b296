"""Compacted results (python -m analysis compact) give the same table as the full runs."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from analysis.collect import RUNS_ARCHIVE, CollectError, collect
from analysis.compact import compact
from vecscale.vocab import LEGACY_RUNS_ARCHIVES


def test_compacted_sweep_collects_to_the_same_table(sweep: Path, tmp_path: Path) -> None:
    dst = tmp_path / "reference"
    n, size, problems, stale, stopped = compact(sweep, dst)
    assert n == 14 and size > 0 and stale == stopped == 0
    # the sweep's two broken stats files are reported, their runs kept (without stats)
    assert sorted(p.split(":")[0] for p in problems) == ["fav-2048-8", "fav-4096-16"]
    assert not (dst / "runs").exists() and (dst / RUNS_ARCHIVE).is_file()
    full = collect(sweep, use_cache=False).df.set_index("id").sort_index()
    small = collect(dst, use_cache=False).df.set_index("id").sort_index()
    assert (dst / "runs").is_dir()  # unpacked on first use
    assert list(small.index) == list(full.index)
    usable = full[full["usable"]].index
    assert len(usable) >= 10
    for col in ("cycles", "insts", "ops", "vec_uops_total", "vec_busy_total", "lane_util",
                "sim_seconds", "flops", "status", "kernel", "vlen", "lanes"):
        assert full.loc[usable, col].equals(small.loc[usable, col]), col
    assert small.loc[usable, "usable"].all()


def test_archive_is_deterministic(sweep: Path, tmp_path: Path) -> None:
    compact(sweep, tmp_path / "a")
    compact(sweep, tmp_path / "b")
    assert (tmp_path / "a" / RUNS_ARCHIVE).read_bytes() == \
        (tmp_path / "b" / RUNS_ARCHIVE).read_bytes()


def test_archive_with_entries_outside_runs_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "evil"
    root.mkdir()
    with tarfile.open(root / RUNS_ARCHIVE, "w:xz") as tar:
        data = b"x"
        info = tarfile.TarInfo("../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(CollectError, match="unexpected entry"):
        collect(root)
    assert not (tmp_path / "outside.txt").exists() and not (root / "runs").exists()


def test_machine_paths_are_scrubbed() -> None:
    from analysis.compact import REPO, scrub

    raw = (f'{{"path": "{REPO}/workloads/build/attention", '
           f'"gem5": "/opt/x/gem5/build/RISCV/gem5.opt"}}').encode()
    out = scrub(raw).decode()
    assert str(REPO) not in out and "/opt/x" not in out
    assert '"<repo>/workloads/build/attention"' in out
    assert '"<gem5>/build/RISCV/gem5.opt"' in out


def test_paths_of_the_checkout_a_run_ran_from_are_scrubbed(sweep: Path, tmp_path: Path) -> None:
    """A sweep run from another clone (or with --results elsewhere): its cmd.sh `cd`s there
    and its files name that clone, which is not this checkout; the archive names neither."""
    other = "/srv/another clone/vecscale"
    run = next(p for p in sorted((sweep / "runs").iterdir()) if (p / "status.json").is_file())
    (run / "cmd.sh").write_text(f"#!/usr/bin/env bash\nset -eu\ncd '{other}'\nexec true\n")
    status = run / "status.json"
    status.write_text(status.read_text().rstrip().rstrip("}")
                      + f', "note": "ran {other}/workloads/build/attention"}}')
    compact(sweep, tmp_path / "a")
    with tarfile.open(tmp_path / "a" / RUNS_ARCHIVE) as tar:
        text = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert other.encode() not in text
    assert b"<repo>/workloads/build/attention" in text


def test_only_the_current_plans_runs_are_kept(sweep: Path, tmp_path: Path) -> None:
    """After a rebuilt workload the old binary's runs stay in runs/ under their old ids;
    points.json (the current plan) decides which go into the archive."""
    import json

    runs = sorted(p.name for p in (sweep / "runs").iterdir() if (p / "status.json").is_file())
    assert len(runs) == 14
    current, old = runs[:9], runs[9:]
    (sweep / "points.json").write_text(json.dumps(
        [{"axes": {"vlen": 512}, "run": r} for r in current]
        + [{"axes": {"vlen": 1024}, "run": "0123456789abcdef"}]))  # planned, not run yet
    dst = tmp_path / "reference"
    done = compact(sweep, dst)
    assert (done.runs, done.stale) == (9, 5)
    with tarfile.open(dst / RUNS_ARCHIVE) as tar:
        kept = {m.name.split("/")[1] for m in tar.getmembers() if m.name.startswith("runs/")}
    assert kept == set(current) and not kept & set(old)


def test_runs_stopped_before_they_ended_are_left_out(sweep: Path, tmp_path: Path) -> None:
    """A `killed` run is not a result: the archive leaves it out, as the planner would
    run it again, instead of keeping it beside the verdicts."""
    import json

    runs = sorted(p for p in (sweep / "runs").iterdir() if (p / "status.json").is_file())
    st = runs[0] / "status.json"
    status = json.loads(st.read_text())
    status.update(status="killed", cause="stopped by SIGINT to the runner")
    st.write_text(json.dumps(status))
    done = compact(sweep, tmp_path / "reference")
    assert (done.runs, done.stopped) == (len(runs) - 1, 1)
    with tarfile.open(tmp_path / "reference" / RUNS_ARCHIVE) as tar:
        kept = {m.name.split("/")[1] for m in tar.getmembers() if m.name.startswith("runs/")}
    assert runs[0].name not in kept and len(kept) == len(runs) - 1


def test_an_archive_kept_under_the_legacy_name_is_read_and_replaced(sweep: Path,
                                                                      tmp_path: Path) -> None:
    """Folders compacted before the archive became xz hold runs.tar.gz: `collect` reads it,
    and compacting into such a folder leaves one archive, the new one."""
    compact(sweep, tmp_path / "new")
    old = tmp_path / "old"
    old.mkdir()
    with tarfile.open(tmp_path / "new" / RUNS_ARCHIVE) as src, \
            tarfile.open(old / LEGACY_RUNS_ARCHIVES[0], "w:gz") as dst:
        for m in src.getmembers():
            dst.addfile(m, src.extractfile(m) if m.isfile() else None)
    for name in ("sweep.yaml", "provenance.json"):
        if (tmp_path / "new" / name).is_file():
            (old / name).write_bytes((tmp_path / "new" / name).read_bytes())
    assert len(collect(old).df) == len(collect(tmp_path / "new").df) > 0
    compact(old, old)
    assert (old / RUNS_ARCHIVE).is_file() and not (old / LEGACY_RUNS_ARCHIVES[0]).exists()
    assert (old / RUNS_ARCHIVE).read_bytes() == (tmp_path / "new" / RUNS_ARCHIVE).read_bytes()
