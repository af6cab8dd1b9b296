"""Speedups: every attention run against the baseline kernels of the registry (ggml-scalar,
ggml-vec and current ggml, ggml-lib-vec), the same pivoted per kernel, and VL scaling
against the 512-bit run."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from workloads.kernels import ATTENTION, VECTOR_AXES, baselines

from .select import axis_columns, best_match, records, usable

#: the kernels speedups are measured against, scalar first
BASELINES = tuple(k.name for k in baselines(ATTENTION))
#: axes a baseline does not depend on: a scalar kernel runs no vector code
BASELINE_IGNORES = {k.name: set() if k.vector else set(VECTOR_AXES) for k in baselines(ATTENTION)}
REF_VLEN = 512


def speedup_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per usable run with its cycles and speedup vs each baseline kernel.

    A baseline matches a run when all axes except kernel agree (an axis absent on either
    side matches anything); ggml-scalar also ignores vlen and lanes. Speedup =
    baseline cycles / run cycles.
    """
    u = usable(df)
    axes = axis_columns(df)
    if u.empty or "kernel" not in axes:
        return pd.DataFrame()
    u = u[u["workload"] == ATTENTION.name] if "workload" in u.columns else u
    recs = records(u, axes + ["workload"])
    out = []
    for r in recs:
        row = {a: r["_row"].get(a) for a in axes}
        row["cycles"] = r["_row"]["cycles"]
        row["id"] = r["_row"]["id"]
        for b in BASELINES:
            m = baseline_of(r, recs, b, axes)
            row[f"speedup_vs_{b}"] = (m["_row"]["cycles"] / r["_row"]["cycles"]
                                      if m is not None else math.nan)
        out.append(row)
    t = pd.DataFrame(out)
    keys = [a for a in axes if a in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def baseline_of(r: dict[str, Any], recs: list[dict[str, Any]], baseline: str,
                axes: list[str]) -> dict[str, Any] | None:
    """The run of a baseline kernel that run `r` is compared with (records() of usable
    runs): the most specific one agreeing on every axis but the kernel and those the
    baseline ignores."""
    cols = [a for a in axes + ["workload"] if a != "kernel" and a not in BASELINE_IGNORES[baseline]]
    return best_match(r, [c for c in recs if c["kernel"] == baseline], cols)


def speedup_summary(sp: pd.DataFrame, baseline: str = BASELINES[0]) -> pd.DataFrame:
    """The speedup table pivoted: one column per kernel, speedup vs the baseline kernel."""
    col = f"speedup_vs_{baseline}"
    if sp.empty or col not in sp.columns:
        return pd.DataFrame()
    keys = [a for a in ("model", "phase", "precision", "timing_model", "lanes", "vlen")
            if a in sp.columns]
    t = sp[sp["kernel"] != baseline].copy()
    if t.empty:
        return pd.DataFrame()
    for k in keys:  # keep rows whose model ignores an axis (e.g. lanes under fixed timing)
        t[k] = t[k].astype(object).where(t[k].notna(), "-")
    p = t.pivot_table(index=keys, columns="kernel", values=col, aggfunc="mean")
    p.columns = [f"{k} vs {baseline}" for k in p.columns]
    return p.reset_index()


def vl_scaling_table(df: pd.DataFrame, ref_vlen: int = REF_VLEN) -> pd.DataFrame:
    """cycles(ref VLEN) / cycles(VLEN) for runs that agree on every other axis."""
    u = usable(df)
    axes = axis_columns(df)
    if u.empty or "vlen" not in axes:
        return pd.DataFrame()
    recs = records(u, axes + ["workload"])
    refs = [c for c in recs if c["vlen"] == float(ref_vlen)]
    cols = [a for a in axes + ["workload"] if a != "vlen"]
    out = []
    for r in recs:
        if r["vlen"] is None:
            continue
        m = best_match(r, refs, cols)
        row = {a: r["_row"].get(a) for a in axes}
        row["cycles"] = r["_row"]["cycles"]
        row[f"speedup_vs_vlen{ref_vlen}"] = (m["_row"]["cycles"] / r["_row"]["cycles"]
                                             if m is not None else math.nan)
        out.append(row)
    t = pd.DataFrame(out)
    if t.empty:
        return t
    keys = [a for a in axes if a in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)
