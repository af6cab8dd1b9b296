"""Selecting rows of a collected sweep: which runs are usable, which columns are axes, and
which run is the baseline of another (the most specific one that agrees on every axis)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

#: the axes tables lead with and sort by, in this order
LEAD_AXES = ["model", "phase", "precision", "timing_model", "lanes", "vlen", "kernel"]


def axis_columns(df: pd.DataFrame) -> list[str]:
    """Columns that came from run.json axes (recorded per row in _axes)."""
    names: set[str] = set()
    if "_axes" in df.columns:
        for v in df["_axes"].dropna():
            names.update(a for a in str(v).split(",") if a)
    lead = [a for a in LEAD_AXES if a in names]
    return lead + sorted(names - set(lead))


def norm(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def matches(a: dict[str, Any], b: dict[str, Any], cols: Iterable[str]) -> int:
    """-1 if rows conflict on any column, else the number of columns equal (absent = any)."""
    same = 0
    for c in cols:
        x, y = a.get(c), b.get(c)
        if x is None or y is None:
            continue
        if x != y:
            return -1
        same += 1
    return same


def best_match(target: dict[str, Any], cands: list[dict[str, Any]], cols: list[str]
          ) -> dict[str, Any] | None:
    best, best_n = None, -1
    for c in cands:
        n = matches(target, c, cols)
        if n > best_n:  # the most specific non-conflicting match; first one on ties
            best, best_n = c, n
    return best


def records(df: pd.DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    """Rows as dicts of normalised `cols` (numbers as floats, NaN as None) for matching,
    each with its original row under "_row"."""
    out = []
    for rec in df.to_dict("records"):
        r = {c: norm(rec.get(c)) for c in cols}
        r["_row"] = rec
        out.append(r)
    return out


def usable(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty or "usable" not in df.columns:
        return df.iloc[0:0]
    return df[df["usable"].astype(bool)]


def runs_once(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run (collect lists a run shared by several uarchs once per uarch)."""
    return df.drop_duplicates("id") if "id" in df.columns else df
