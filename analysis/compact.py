"""Compact a results folder for keeping in git: `python -m analysis compact SRC DST`.

For every finished run of SRC (a folder with status.json, not stopped before it ended) that
the sweep's current plan names (points.json; runs of older workload or gem5 binaries are
left out) DST's `runs.tar.xz` gets run.json, status.json, result.json and `stats.roi.txt`:
the ROI dump only (a layer's: one per sublayer), restricted to the stats the tables, plots
and the report read (KEEP). A gem5 stats.txt of about 400 KiB becomes about 15 KiB of text,
alike from run to run like the JSON files, so the one compressed archive holds a thousand
runs in about a MB (xz). The sweep's own files (sweep.yaml, points.json, provenance.json) are
copied as they are. `collect` unpacks the archive into DST/runs on first use and reads a
compacted run like any other (stats.roi.txt when stats.txt is absent). The archive is
rewritten whole (deterministically: sorted, no timestamps), so compacting again after a
resumed sweep is safe. Machine paths are scrubbed from the kept files (this checkout ->
`<repo>`, a gem5 build -> `<gem5>/build/...`).
"""

from __future__ import annotations

import io
import json
import lzma
import os
import re
import shlex
import shutil
import tarfile
from pathlib import Path
from typing import NamedTuple

from vecscale.vocab import KEPT_RUN_FILES as RUN_FILES
from vecscale.vocab import LEGACY_RUNS_ARCHIVES, RESUMED, ROI_ONLY_STATS, RUNS_ARCHIVE

from .metrics import regions_of
from .stats import BEGIN, END, StatsError, parse_text, read_text, region_dumps

SWEEP_FILES = ("sweep.yaml", "provenance.json")
#: large and repetitive (a line per sweep point): kept inside the archive
ARCHIVED_SWEEP_FILES = ("points.json",)
#: stat names kept (a regular expression over the whole name); the core is whichever
#: detailed core the dump has (Dump.cpu)
KEEP = (r"sim(Seconds|Ticks|Freq|Insts|Ops)|host(Seconds|InstRate|OpRate|MemUsage)"
        r"|{cpu}\.(numCycles|cpi|ipc|idleCycles|commitStats0\.\w+(::\w+)?"
        r"|vecTiming\.\w+(::\w+)?|branchPred\.(condIncorrect|mispredicted_0::total))"
        r"|board\.cache_hierarchy\.\w+\.(demandHits|demandMisses|demandAccesses)::total")


REPO = Path(__file__).resolve().parent.parent
#: xz at its strongest: the runs' files repeat each other, and a kept archive is written
#: rarely but cloned by everyone (reference: 4.1 MB as gzip, 0.52 MB as this)
XZ_PRESET = 9 | lzma.PRESET_EXTREME
#: a gem5 binary's absolute path (provenance, messages): only its build-relative part is kept
GEM5_PATH = re.compile(r"/[^\s\"'<>:]+/(build/[A-Z0-9_]+/gem5\.\w+)")


def scrub(data: bytes, checkouts: tuple[str, ...] = ()) -> bytes:
    """Machine paths out of kept files: this checkout and the checkouts the runs ran from
    -> <repo>, a gem5 build -> <gem5>."""
    text = data.decode("utf-8", errors="surrogateescape")
    for root in sorted({str(REPO), *checkouts}, key=len, reverse=True):
        text = text.replace(root, "<repo>")
    text = GEM5_PATH.sub(r"<gem5>/\1", text)
    return text.encode("utf-8", errors="surrogateescape")


def compact_stats(text: str, source: str, roi: int, span: int = 1) -> str:
    """The ROI dump of a stats.txt (`span` dumps from it: a layer's sublayers), only the
    KEEP lines, as a stats text of that many dumps."""
    out: list[str] = []
    for dump in region_dumps(parse_text(text, source), source, roi, span):
        keep = re.compile("(" + KEEP.format(cpu=re.escape(dump.cpu())) + ")$")
        lines = [ln for ln in dump.to_text().splitlines()
                 if ln.split(None, 1) and keep.match(ln.split(None, 1)[0])]
        out += [f"\n{BEGIN} ----------", *lines, "", f"{END}   ----------", ""]
    return "\n".join(out)


def _span(result: bytes | None) -> int:
    """Dumps the run's ROI spans: one per region of its result (a layer's sublayers)."""
    try:
        parsed = json.loads(result) if result is not None else None
    except ValueError:
        return 1
    return max(1, len(regions_of(parsed))) if isinstance(parsed, dict) else 1


class Compacted(NamedTuple):
    runs: int  #: runs written
    size: int  #: archive bytes
    problems: list[str]  #: one line per run whose stats could not be kept
    stale: int  #: finished runs left out: not in the sweep's current plan
    stopped: int = 0  #: runs left out because they were stopped before they ended


def planned_runs(src: Path) -> set[str] | None:
    """Run ids of the sweep's current plan (points.json, rewritten by every `run`), or None
    when the folder has no readable points.json."""
    try:
        return {str(p["run"]) for p in json.loads((src / "points.json").read_text())}
    except (OSError, ValueError, TypeError, KeyError):
        return None


def run_checkouts(run_dirs: list[Path]) -> tuple[str, ...]:
    """The checkouts the runs ran from (the `cd` line of each cmd.sh): a sweep run from
    another clone, or with --results elsewhere, names paths that are not this checkout."""
    found: set[str] = set()
    for run_dir in run_dirs:
        try:
            lines = (run_dir / "cmd.sh").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("cd "):
                words = shlex.split(line)
                if len(words) == 2 and words[1].startswith("/") and words[1] != "/":
                    found.add(words[1].rstrip("/"))
                break
    return tuple(sorted(found))


def compact(src: Path, dst: Path) -> Compacted:
    """Compact SRC into DST. Only runs of the sweep's current plan are kept: after a change
    to a workload or to gem5 the runs of the old binaries stay in SRC/runs under their old
    ids, and an archive mixing them with the new ones would give two results per point."""
    runs = src / "runs"
    if not runs.is_dir():
        raise StatsError(f"{src}: not a sweep results folder (no runs/)")
    planned = planned_runs(src)
    finished = sorted(p for p in runs.iterdir() if (p / "status.json").is_file())
    run_dirs = [p for p in finished if planned is None or p.name in planned]
    roots = run_checkouts(run_dirs)
    dst.mkdir(parents=True, exist_ok=True)
    for name in SWEEP_FILES:
        if (src / name).is_file():
            (dst / name).write_bytes(scrub((src / name).read_bytes(), roots))
    members: list[tuple[str, bytes]] = [(name, scrub((src / name).read_bytes(), roots))
                                        for name in ARCHIVED_SWEEP_FILES
                                        if (src / name).is_file()]
    problems: list[str] = []
    kept = 0
    for run_dir in run_dirs:
        base = f"runs/{run_dir.name}"
        raw = {name: (run_dir / name).read_bytes() for name in RUN_FILES
               if (run_dir / name).is_file()}
        if _stopped(raw.get("status.json", b"")):
            continue
        kept += 1
        members += [(f"{base}/{name}", scrub(data, roots)) for name, data in raw.items()]
        stats = run_dir / "stats.txt"
        if not stats.is_file() and (run_dir / ROI_ONLY_STATS).is_file():  # from an archive
            members.append((f"{base}/{ROI_ONLY_STATS}", (run_dir / ROI_ONLY_STATS).read_bytes()))
        elif stats.is_file():
            try:
                roi = int(json.loads(raw.get("run.json", b"{}")).get("roi_dump", 1))
                span = _span(raw.get("result.json"))
                text = compact_stats(read_text(stats), str(stats), roi, span)
                members.append((f"{base}/{ROI_ONLY_STATS}", text.encode()))
            except (StatsError, OSError, ValueError) as exc:
                problems.append(f"{run_dir.name}: {str(exc).splitlines()[0]}")
    archive = write_archive(dst, members)
    shutil.rmtree(dst / "runs", ignore_errors=True)  # stale unpacked copies
    for stale in ("collected.csv", *ARCHIVED_SWEEP_FILES):
        (dst / stale).unlink(missing_ok=True)
    return Compacted(kept, archive.stat().st_size, problems, len(finished) - len(run_dirs),
                     len(run_dirs) - kept)


def write_archive(dst: Path, members: list[tuple[str, bytes]]) -> Path:
    """Write DST's kept archive from (name, bytes) members, in the order given: the same
    members give the same bytes (no timestamps, no owners). A legacy-named archive in DST is
    removed once the new one is in place."""
    tmp = dst / (RUNS_ARCHIVE + ".tmp")
    with lzma.open(tmp, "wb", format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                   preset=XZ_PRESET) as xz, \
            tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, dst / RUNS_ARCHIVE)
    for legacy in LEGACY_RUNS_ARCHIVES:
        (dst / legacy).unlink(missing_ok=True)
    return dst / RUNS_ARCHIVE


def _stopped(status_json: bytes) -> bool:
    """A run stopped before it ended (`killed`): not a result, and the next `run` of the
    sweep runs it again, so an archive keeps it as missing rather than as a verdict."""
    try:
        return json.loads(status_json).get("status") in RESUMED
    except (ValueError, AttributeError):
        return False  # unreadable: kept, and reported as such by whoever reads it
