"""Collect a results/<sweep> folder into one tidy DataFrame (one row per run).

Each run folder results/<sweep>/runs/<id>/ holds run.json, status.json and, for gem5 runs,
stats.txt; result.json holds the workload's JSON line. The table is cached as
results/<sweep>/collected.csv and refreshed incrementally: a run is parsed again only when it
is new or any file its row is read from changed (key: run id + size and mtime of
status.json, run.json, result.json and the stats file).

Formulas of the derived metrics are in analysis/README.md.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tarfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from vecscale.vocab import runs_archive
from workloads.kernels import family_of

from .compact import ROI_ONLY_STATS, RUNS_ARCHIVE
from .completeness import with_plan
from .contents import result_problems, run_problems
from .metrics import clock_hz, derived, num, pick, regions_of, shape_metrics, stats_metrics
from .stats import StatsError, read_text

CACHE_NAME = "collected.csv"
# Bump when the columns or their meaning change: an old cache is then rebuilt.
SCHEMA = 9


class CollectError(Exception):
    """The results folder itself cannot be collected (one-line message)."""


@dataclass
class Collected:
    df: pd.DataFrame
    parsed: int = 0  # runs read from disk this time
    reused: int = 0  # runs taken from the cache
    notes: list[str] = field(default_factory=list)


def _read_json(path: Path, what: str) -> tuple[dict[str, Any] | None, str]:
    """(object, error) for a JSON file; a missing file is (None, '')."""
    if not path.exists():
        return None, ""
    try:
        try:
            text = path.read_bytes().decode("utf-8").strip()
        except UnicodeDecodeError:
            return None, f"{what}: not UTF-8 text"
        if not text:
            return None, f"{what}: empty file"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            # result.json may hold the workload's output: take the last JSON line.
            lines = [ln for ln in text.splitlines() if ln.strip().startswith("{")]
            if not lines:
                raise
            obj = json.loads(lines[-1])
    except (json.JSONDecodeError, OSError) as exc:
        return None, f"{what}: not valid JSON ({str(exc).splitlines()[0][:80]})"
    if not isinstance(obj, dict):
        return None, f"{what}: expected a JSON object"
    return obj, ""


def unpack_runs(root: Path) -> None:
    """Unpack a compacted sweep's kept archive (RUNS_ARCHIVE, or a legacy runs.tar.gz) into
    root/runs and root/points.json (a fresh clone has only the archive). Only plain files
    under runs/ and points.json are accepted."""
    archive = Path(runs_archive(root) or root / RUNS_ARCHIVE)
    tmp = root / "runs.unpacking"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            for m in members:
                parts = Path(m.name).parts
                ok_name = m.name == "points.json" or (parts and parts[0] == "runs")
                if not (m.isfile() or m.isdir()) or not ok_name or ".." in parts \
                        or Path(m.name).is_absolute():
                    raise CollectError(f"{archive}: unexpected entry {m.name!r}")
            tar.extractall(tmp, members=members, filter="data")
    except (OSError, tarfile.TarError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CollectError(f"{archive}: cannot unpack ({exc})") from None
    if (tmp / "points.json").is_file() and not (root / "points.json").exists():
        os.replace(tmp / "points.json", root / "points.json")
    os.replace(tmp / "runs", root / "runs")
    shutil.rmtree(tmp, ignore_errors=True)


def load_run(run_dir: Path, base: Path | None = None) -> dict[str, Any]:
    """One row for one run folder. Never raises for bad content: problems go to
    the ``analysis_error`` column."""
    rel = str(run_dir.relative_to(base)) if base else run_dir.name
    row: dict[str, Any] = {"id": run_dir.name}
    errors: list[str] = []
    status = _status_columns(row, run_dir, rel, errors)
    run, err = _read_json(run_dir / "run.json", f"{rel}/run.json")
    errors += [err] if err else [] if run is not None else [f"{rel}/run.json: missing"]
    run = run or {}
    bad = run_problems(run, f"{rel}/run.json")
    errors += bad
    axes = run.get("axes") if isinstance(run.get("axes"), dict) else {}
    # a value of the wrong type never reaches a table (the run is corrupt: errors)
    axes = {k: v for k, v in axes.items() if not any(f"axes.{k}:" in b for b in bad)}
    system = run.get("system") if isinstance(run.get("system"), dict) else {}
    row["target"] = str(status.get("target") or run.get("target") or "")
    _run_columns(row, axes, system)
    result, err = _read_json(run_dir / "result.json", f"{rel}/result.json")
    if err:
        errors.append(err)
    elif result is None and row["status"] == "ok":
        errors.append(f"{rel}/result.json: missing (an ok run has the workload's result)")
    bad = result_problems(result or {}, f"{rel}/result.json")
    errors += bad
    result = {k: v for k, v in (result or {}).items() if not any(f": {k}:" in b for b in bad)}
    _result_columns(row, axes, result)
    _stats_columns(row, run_dir, rel, run, errors, regions_of(result))
    row.update(derived(row, axes, system, result))
    cycles = num(row.get("cycles"))
    row["analysis_error"] = "; ".join(errors)
    row["usable"] = bool(row["status"] == "ok" and not errors and row["target"] != "qemu"
                         and math.isfinite(cycles) and cycles > 0)
    return row


def _status_columns(row: dict[str, Any], run_dir: Path, rel: str, errors: list[str]
                    ) -> dict[str, Any]:
    status, err = _read_json(run_dir / "status.json", f"{rel}/status.json")
    if err:
        errors.append(err)
    if status is None:
        row["status"] = "bad-status" if err else "incomplete"
        row["cause"] = err or "no status.json (not finished)"
        return {}
    if not isinstance(status.get("status"), str):
        errors.append(f"{rel}/status.json: no status (expected a \"status\" string)")
        row["status"], row["cause"] = "bad-status", errors[-1]
        return {}
    row["status"] = status["status"]
    row["cause"] = str(status.get("cause", "") or "")
    row["wall_s"] = num(status.get("wall_s"))
    row["exit_code"] = num(status.get("exit_code"))
    return status


def _run_columns(row: dict[str, Any], axes: dict[str, Any], system: dict[str, Any]) -> None:
    row["_axes"] = ",".join(sorted(axes))
    for k, v in axes.items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            row[k] = v
        else:
            row[k] = json.dumps(v, sort_keys=True)
    row["lane_bits"] = num(pick("lane_bits", system, default=64))
    row["clock_hz"] = clock_hz(system.get("clock"))
    oplat = system.get("op_latency")
    row["op_latency"] = json.dumps(oplat, sort_keys=True) if isinstance(oplat, dict) else ""


def _result_columns(row: dict[str, Any], axes: dict[str, Any], result: dict[str, Any]) -> None:
    for k in ("max_abs_err", "max_rel_err"):
        row[k] = num(result.get(k))
    row["pass"] = result.get("pass") if isinstance(result.get("pass"), bool) else None
    # fa-v: the regime that ran (a packed request where VLMAX <= D runs blocked)
    row["regime_run"] = result.get("regime") if isinstance(result.get("regime"), str) else None
    # ggml's own kernels: the path ggml ran (one-row, one-row-split-kv, tiled)
    path = result.get("ggml_path")
    row["ggml_path"] = path if isinstance(path, str) else None
    kernel = str(pick("kernel", axes, result, default=""))
    row["workload"] = str(result.get("workload") or family_of(kernel))
    row.update(shape_metrics(axes, result))


def _stats_columns(row: dict[str, Any], run_dir: Path, rel: str, run: dict[str, Any],
                   errors: list[str], regions: tuple[str, ...] = ()) -> None:
    stats_path = run_dir / "stats.txt"
    roi_only = not stats_path.exists() and (run_dir / ROI_ONLY_STATS).exists()
    if roi_only:
        stats_path = run_dir / ROI_ONLY_STATS
    if row["target"] == "qemu" or not (stats_path.exists() or row["status"] == "ok"):
        return
    shown = f"{rel}/{stats_path.name}"
    try:
        roi = 1 if roi_only else int(pick("roi_dump", run, default=1))
        row.update(stats_metrics(read_text(stats_path), shown, roi, roi_only, regions))
    except StatsError as exc:
        if row["status"] == "ok":
            errors.append(str(exc).replace(str(stats_path), shown))
    except (TypeError, ValueError):
        errors.append(f"{rel}/run.json: roi_dump is not an integer")


#: every file a run's row is read from: the cache key covers each one's size and mtime
KEY_FILES = ("status.json", "run.json", "result.json", "stats.txt", ROI_ONLY_STATS)


def _status_key(run_dir: Path) -> str:
    """The run's cache key: size and mtime of each file its row is read from ("" without a
    status.json: never cached), so that a rewritten, truncated or deleted stats or result
    file is parsed again, not only a changed status."""
    parts = []
    for name in KEY_FILES:
        try:
            st = (run_dir / name).stat()
        except FileNotFoundError:
            if name == "status.json":
                return ""
            parts.append(f"{name}:-")
        except OSError:
            return ""
        else:
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def _load_cache(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        df = pd.read_csv(path, dtype={"id": str, "_key": str}, keep_default_na=True)
    except Exception:  # noqa: BLE001 - a broken cache is simply rebuilt
        return None
    if "_schema" not in df.columns or df.empty or int(df["_schema"].iloc[0]) != SCHEMA:
        return None
    df["_key"] = df["_key"].fillna("")
    return df


def _load_one(args: tuple[str, str]) -> dict[str, Any]:
    """load_run, and a corrupt row naming the run for content no check foresaw: one run
    never stops a collect (or the report)."""
    run_dir, base = args
    try:
        return load_run(Path(run_dir), Path(base))
    except Exception as exc:  # noqa: BLE001 - the run is named, not hidden (see above)
        why = " ".join(str(exc).split())[:200]
        return {"id": Path(run_dir).name, "status": "bad-status", "usable": False, "cause": "",
                "analysis_error": f"{Path(run_dir).relative_to(base)}: cannot be analysed "
                                  f"({type(exc).__name__}: {why})"}


def collect(results_dir: str | Path, use_cache: bool = True, jobs: int | None = None,
            write_cache: bool = True, parallel_min: int = 200) -> Collected:
    """Collect results/<sweep> into a DataFrame; see module docstring."""
    root = Path(results_dir)
    if not root.exists():
        raise CollectError(f"{root}: no such results folder")
    if not root.is_dir():
        raise CollectError(f"{root}: not a folder (expected results/<sweep>)")
    runs_dir = root / "runs"
    if not runs_dir.is_dir() and runs_archive(root) is not None:
        unpack_runs(root)
    if not runs_dir.is_dir():
        raise CollectError(f"{root}: has no runs/ folder (not a sweep results folder)")
    run_dirs = sorted(p for p in runs_dir.iterdir() if p.is_dir())
    keys = {p.name: _status_key(p) for p in run_dirs}
    cache_path = root / CACHE_NAME
    cached = _load_cache(cache_path) if use_cache else None
    keep: list[pd.DataFrame] = []
    todo = run_dirs
    reused = 0
    if cached is not None:
        cached_key = dict(zip(cached["id"], cached["_key"], strict=False))
        fresh = {i for i, k in keys.items() if k and cached_key.get(i) == k}
        ok = cached["id"].isin(fresh)
        keep.append(cached[ok])
        reused = int(ok.sum())
        todo = [p for p in run_dirs if p.name not in fresh]
    args = [(str(p), str(root)) for p in todo]
    njobs = jobs if jobs is not None else min(4, os.cpu_count() or 1)
    if njobs > 1 and len(args) >= parallel_min:
        with ProcessPoolExecutor(max_workers=njobs) as ex:
            rows = list(ex.map(_load_one, args, chunksize=64))
    else:
        rows = [_load_one(a) for a in args]
    for r in rows:
        r["_key"] = keys.get(r["id"], "")
        r["_schema"] = SCHEMA
    new = pd.DataFrame(rows)
    frames = [f for f in keep + [new] if not f.empty]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["id", "status", "cause", "usable", "_key", "_schema"])
    df = df.sort_values("id", kind="stable").reset_index(drop=True)
    if write_cache:
        tmp = cache_path.with_suffix(".csv.tmp")
        df.to_csv(tmp, index=False)
        os.replace(tmp, cache_path)
    df, plan_note = with_plan(df, root)  # a planned run without a folder: a `missing` row
    df["usable"] = df["usable"].astype(bool)
    return Collected(df=_with_shared_uarchs(df, root), parsed=len(rows), reused=reused,
                     notes=[plan_note] if plan_note else [])


def _with_shared_uarchs(df: pd.DataFrame, root: Path) -> pd.DataFrame:
    """A run that answers points of several uarchs (the scalar kernels: uarchs that agree on
    everything around the vector unit share one run) appears once per uarch, so that every
    uarch's vector runs find their baseline. Other axes a run ignores stay empty (null)."""
    try:
        points = json.loads((root / "points.json").read_text())
        uarchs: dict[str, set[str]] = {}
        for p in points:
            u = (p.get("axes") or {}).get("uarch")
            if u is not None:
                uarchs.setdefault(str(p["run"]), set()).add(str(u))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return df
    if "uarch" not in df.columns:
        return df
    extra = []
    for rec in df.to_dict("records"):
        own = rec.get("uarch")
        for u in sorted(uarchs.get(str(rec["id"]), set()) - {own}):
            if isinstance(own, str):
                extra.append({**rec, "uarch": u})
    if not extra:
        return df
    return pd.concat([df, pd.DataFrame(extra)], ignore_index=True)
