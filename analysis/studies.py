"""Studies that repeat the same runs under one changed setting: fa-v's regimes side by side
(sweeps/regimes.yaml) and the spread of cycles over stack layouts (sweeps/layout.yaml)."""

from __future__ import annotations

import math

import pandas as pd

from workloads.kernels import KERNELS, TUNABLES

from .select import LEAD_AXES, axis_columns, runs_once, usable

#: the kernels with regimes (fa-v), and the regimes in the order the table shows them
REGIME_KERNELS = [k.name for k in KERNELS.values() if "regime" in k.tunables]
REGIMES = list(TUNABLES["regime"].choices)

#: what regime_table compares: fa-v's regimes, the rest of a point's axes held equal
REGIME_KEYS = ["model", "phase", "n", "l", "vlen"]


def regime_table(df: pd.DataFrame) -> pd.DataFrame:
    """fa-v's regimes side by side (sweeps/regimes.yaml): per point (model, phase, size,
    VLEN and any other axis the runs differ in), the ROI cycles of each regime the runs
    asked for, the fastest (`best`), and how much faster it is than the blocked regime. A
    request the workload ran as another regime (packed where VLMAX <= D runs blocked) is
    left out, except `auto`: its column holds what auto ran, `auto_ran` names it and
    `auto_vs_best` = auto cycles / best cycles (1 when auto picked the fastest). Empty
    without runs of two regimes."""
    u = runs_once(usable(df))
    if u.empty or "regime" not in u.columns or "kernel" not in u.columns:
        return pd.DataFrame()
    u = u[u["kernel"].isin(REGIME_KERNELS) & u["regime"].notna() & u["cycles"].notna()]
    if "regime_run" in u.columns:
        u = u[u["regime_run"].isna() | (u["regime_run"] == u["regime"]) | (u["regime"] == "auto")]
    if u.empty or u["regime"].nunique() < 2:
        return pd.DataFrame()
    extra = [a for a in axis_columns(df) if a in u.columns and a not in REGIME_KEYS
             and a not in ("regime", "kernel") and u[a].notna().any()
             and u[a].astype(str).nunique() > 1]
    keys = [a for a in REGIME_KEYS if a in u.columns and u[a].notna().any()] + extra
    t = u.pivot_table(index=keys, columns="regime", values="cycles", aggfunc="min",
                      dropna=False).dropna(how="all")
    order = [r for r in REGIMES if r in t.columns]
    t = t[order + [c for c in t.columns if c not in order]]
    named = t.drop(columns=["auto"], errors="ignore")
    if named.empty or named.shape[1] == 0:
        return pd.DataFrame()
    best = named.idxmin(axis=1)
    out = t.reset_index()
    out.columns.name = None
    out["best"] = best.to_numpy()
    out["best_vs_blocked"] = (t["blocked"] / named.min(axis=1)).to_numpy() \
        if "blocked" in t.columns else float("nan")
    if "auto" in t.columns and "regime_run" in u.columns:
        ran = u[u["regime"] == "auto"].groupby(keys, dropna=False)["regime_run"].first()
        out["auto_ran"] = ran.reindex(t.index).to_numpy()
        out["auto_vs_best"] = (t["auto"] / named.min(axis=1)).to_numpy()
    return out


def layout_spread_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per point run under several stack positions (axis stack_shift, sweeps/layout.yaml):
    the cycles at shift 0, the fewest and most, and spread = most / fewest - 1. What the
    workload computes is the same at every shift, so the spread is what one memory layout
    can add to or take from a result. Empty for sweeps without such runs."""
    u = runs_once(usable(df))
    if u.empty or "stack_shift" not in u.columns or u["stack_shift"].nunique() < 2:
        return pd.DataFrame()
    keys = [a for a in axis_columns(df) if a in u.columns and a != "stack_shift"
            and u[a].notna().any() and u[a].astype(str).nunique() > 1]
    rows = []
    for key, g in u.groupby(keys, dropna=False, sort=False) if keys else [((), u)]:
        cyc = g["cycles"].astype(float)
        at0 = g.loc[g["stack_shift"].fillna(0) == 0, "cycles"]
        rows.append({**dict(zip(keys, key, strict=True)),
                     "shifts": int(g["stack_shift"].nunique()),
                     "cycles_shift0": float(at0.iloc[0]) if len(at0) else math.nan,
                     "cycles_min": cyc.min(), "cycles_max": cyc.max(),
                     "spread": cyc.max() / cyc.min() - 1})
    t = pd.DataFrame(rows)
    lead = [a for a in LEAD_AXES if a in t.columns]
    return t.sort_values(lead, kind="stable").reset_index(drop=True)
