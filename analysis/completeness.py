"""The runs found against the plan: every run points.json names gets a row (a deleted run
folder becomes a `missing` row instead of vanishing), and every run that is not a result is
named by id with what is wrong: missing, corrupt (a file that cannot be read or parsed),
unknown status, killed or failed.

The same kinds as `vecscale status` (sweeps/states.py); the names are vecscale/vocab.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from vecscale.vocab import CORRUPT, MISSING, RESUMED, RUN_PROBLEMS, STATUSES, UNKNOWN_STATUS

from .select import runs_once

#: what collect writes as status when status.json is absent (the folder exists) or unreadable
NO_STATUS, BAD_STATUS = "incomplete", "bad-status"
#: the kinds in the order they are listed, after the problems
VERDICTS = ("killed", "failed")


def planned_runs(root: Path) -> tuple[dict[str, str] | None, str]:
    """Run id -> a short description of its first point, from points.json (in plan order),
    and a note when there is no usable plan (None: the runs are not compared with one)."""
    path = root / "points.json"
    try:
        points = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, "no points.json: the runs found were not compared with a plan"
    except (OSError, ValueError) as e:
        what = "not valid JSON" if isinstance(e, ValueError) else e.strerror
        return None, f"points.json: {what}: the runs found were not compared with a plan"
    if not isinstance(points, list) or not all(
            isinstance(p, dict) and isinstance(p.get("run"), str) for p in points):
        return None, ("points.json: expected a list of {axes, run}: the runs found were not "
                      "compared with a plan")
    out: dict[str, str] = {}
    for p in points:
        if p["run"] not in out:
            axes = p.get("axes") if isinstance(p.get("axes"), dict) else {}
            out[p["run"]] = " ".join(f"{k}={v}" for k, v in axes.items()
                                     if v is not None)[:160]
    return out, ""


def with_plan(df: pd.DataFrame, root: Path) -> tuple[pd.DataFrame, str]:
    """The collected runs plus a `missing` row for every planned run without a folder, and a
    `planned` column (None without a plan); the note of planned_runs."""
    plan, note = planned_runs(root)
    df = df.copy()
    if plan is None:
        df["planned"] = None
        return df, note
    found = set(df["id"])
    df["planned"] = df["id"].isin(plan)
    gone = [{"id": rid, "status": MISSING, "planned": True, "usable": False,
             "analysis_error": "",
             "cause": f"no run folder (planned in points.json: {point})" if point
             else "no run folder (planned in points.json)"}
            for rid, point in plan.items() if rid not in found]
    if gone:
        df = pd.concat([df, pd.DataFrame(gone)], ignore_index=True)
    return df, note


def problem(status: Any, analysis_error: Any) -> str:
    """ok, one of RUN_PROBLEMS, killed or failed, for a row's status and analysis errors."""
    status = str(status)
    if status in (MISSING, NO_STATUS):
        return MISSING
    if status == BAD_STATUS or (isinstance(analysis_error, str) and analysis_error):
        return CORRUPT
    if status not in STATUSES:
        return UNKNOWN_STATUS
    if status in RESUMED:
        return "killed"
    return "ok" if status == "ok" else "failed"


def _detail(rec: dict[str, Any], kind: str) -> str:
    cause = rec.get("cause") if isinstance(rec.get("cause"), str) else ""
    err = rec.get("analysis_error") if isinstance(rec.get("analysis_error"), str) else ""
    if kind == UNKNOWN_STATUS:
        return (f"status.json: status {str(rec.get('status'))[:40]!r} is not one of "
                f"{', '.join(STATUSES)}")
    if kind == CORRUPT:
        return err or cause
    return "; ".join(x for x in (cause, err) if x)


def problems_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run that is not ok: id, problem, status, detail (problems first)."""
    cols = ["id", "problem", "status", "detail"]
    df = runs_once(df)
    if df.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for rec in df.to_dict("records"):
        kind = problem(rec.get("status"), rec.get("analysis_error"))
        if kind != "ok":
            rows.append({"id": rec["id"], "problem": kind, "status": rec.get("status"),
                         "detail": " ".join(_detail(rec, kind).split())[:300]})
    order = {k: i for i, k in enumerate((*RUN_PROBLEMS, *VERDICTS))}
    t = pd.DataFrame(rows, columns=cols)
    t["_o"] = t["problem"].map(order)
    return t.sort_values(["_o", "id"], kind="stable").drop(columns="_o").reset_index(drop=True)


def headline(df: pd.DataFrame, note: str = "", listed: int = 1) -> str:
    """"ok 2019 of 2020 planned runs, 1 missing: <id>": ok runs (status ok, files parsed)
    against the plan, then each other kind with its count (ids inline up to `listed`)."""
    runs = runs_once(df)
    planned = runs["planned"] if "planned" in runs.columns else pd.Series(dtype=object)
    has_plan = bool(planned.notna().any())
    in_plan = runs[planned.fillna(False).astype(bool)] if has_plan else runs
    t = problems_table(in_plan)
    n_ok = len(in_plan) - len(t)
    parts = [f"ok {n_ok} of {len(in_plan)} {'planned runs' if has_plan else 'runs found'}"]
    for kind in (*RUN_PROBLEMS, *VERDICTS):
        ids = list(t.loc[t["problem"] == kind, "id"])
        if ids:
            parts.append(f"{len(ids)} {kind}" + (f": {', '.join(ids)}" if len(ids) <= listed
                                                 else ""))
    extra = len(runs) - len(in_plan)
    if extra:
        parts.append(f"{extra} more not in points.json (older binaries or plans), shown "
                     "in the tables too")
    line = ", ".join(parts)
    return f"{line} ({note})" if note else line


def listing(df: pd.DataFrame, max_listed: int = 25) -> list[str]:
    """One line per run that is not ok ("<id>  <problem>: <detail>"), at most `max_listed`
    of each kind, then how many more."""
    t = problems_table(df)
    lines = []
    for kind, group in t.groupby("problem", sort=False):
        for rec in group.head(max_listed).to_dict("records"):
            lines.append(f"  {rec['id']}  {kind}: {rec['detail']}")
        if len(group) > max_listed:
            lines.append(f"  ... and {len(group) - max_listed} more {kind} (see the report)")
    return lines
