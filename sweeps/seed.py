"""`run --from ARCHIVE`: continue a sweep from a kept archive (results/reference-*).

A grid too long for one session is compacted into an archive and committed while it is
partial; on another machine its results folder starts empty. `--from` copies into it the
archived runs that the current plan names and the folder does not hold yet, so `run` then
simulates only what is missing. A run is taken only when it is a result (status ok) and its
run.json hashes to its id (same workload and gem5 binaries, patches, system and arguments);
anything else in the archive is reported and left. Compacting the folder again keeps the
seeded runs (their ROI dump is already compacted).
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sweeps.identity import run_id
from sweeps.plan import Plan
from sweeps.spec import SpecError
from vecscale.vocab import KEPT_RUN_FILES, ROI_ONLY_STATS, RUNS_ARCHIVE, runs_archive

#: files of an archived run that are copied (anything else in the archive is not)
SEEDED_FILES = (*KEPT_RUN_FILES, ROI_ONLY_STATS)


@dataclass
class Seeded:
    copied: int = 0
    present: int = 0  # planned runs the folder already has
    not_in_plan: int = 0  # archived runs of other code or points
    problems: list[str] = field(default_factory=list)


def _archived_runs(archive: Path, wanted: set[str]) -> tuple[dict[str, dict[str, bytes]],
                                                             set[str]]:
    """The files of the archive's runs/<id>/ for the ids in `wanted` (only those are read),
    and every run id the archive holds."""
    runs: dict[str, dict[str, bytes]] = {}
    ids: set[str] = set()
    try:
        with tarfile.open(archive) as tar:
            for m in tar:
                parts = PurePosixPath(m.name).parts
                if len(parts) != 3 or parts[0] != "runs" or not m.isfile():
                    continue
                ids.add(parts[1])
                if parts[1] in wanted and parts[2] in SEEDED_FILES:
                    data = tar.extractfile(m)
                    runs.setdefault(parts[1], {})[parts[2]] = data.read() if data else b""
    except (OSError, tarfile.TarError) as exc:
        raise SpecError(f"--from: {archive}: cannot read ({exc})") from None
    return runs, ids


def _why_not(rid: str, files: dict[str, bytes]) -> str | None:
    """Why an archived run cannot stand for planned run `rid`, else None."""
    try:
        run = json.loads(files["run.json"])
        status = json.loads(files["status.json"])
        json.loads(files["result.json"])
    except KeyError as exc:
        return f"{rid}: no {exc.args[0]} in the archive"
    except ValueError as exc:
        return f"{rid}: unreadable JSON in the archive ({exc})"
    if not isinstance(status, dict) or status.get("status") != "ok":
        return f"{rid}: archived status is not ok"
    if not isinstance(run, dict) or run_id(run) != rid:
        return f"{rid}: archived run.json does not hash to its id"
    return None


def seed_from(archive_dir: Path, plan: Plan, runs_dir: Path) -> Seeded:
    """Copy the archive's finished runs of this plan into runs_dir (those it lacks)."""
    found_at = runs_archive(archive_dir)
    if found_at is None:
        raise SpecError(f"--from: {archive_dir}: no {RUNS_ARCHIVE} (a kept archive is made "
                        "by `python -m analysis compact RESULTS DEST`)")
    lacking = {rid for rid in plan.runs if not (runs_dir / rid / "status.json").exists()}
    found, ids = _archived_runs(Path(found_at), lacking)
    planned = set(plan.runs)
    out = Seeded(not_in_plan=len(ids - planned), present=len((ids & planned) - lacking))
    for rid in sorted(ids & lacking):
        if why := _why_not(rid, found.get(rid, {})):
            out.problems.append(why)
            continue
        dest = runs_dir / rid
        tmp = runs_dir / f".{rid}.seeding"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, data in found[rid].items():
            (tmp / name).write_bytes(data)
        if dest.exists():  # a folder without a status (never ran, or killed): replaced
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        out.copied += 1
    return out
