"""Tables about the runs themselves: status counts, unusable runs with causes, the
workloads' self-checks, and what a run costs on the host."""

from __future__ import annotations

import pandas as pd

from .completeness import problem
from .select import runs_once, usable


def host_cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """What runs cost on the host, to size sweeps: per kernel, phase and size, the median
    wall time of a whole run (status.json), of its ROI in gem5 (hostSeconds of the ROI
    dump) and the simulated ROI instructions per host second (the detailed core's rate)."""
    u = runs_once(usable(df))
    if u.empty or "wall_s" not in u.columns:
        return pd.DataFrame()
    t = u.copy()
    size = pd.Series("", index=t.index)
    for col, tag in (("n", "N"), ("l", "L"), ("max_rows", "rows")):
        if col in t.columns:
            size = size.where(t[col].isna(), f"{tag} = " + t[col].astype("Int64").astype(str))
    t["size"] = size
    if "phase" not in t.columns:
        t["phase"] = None
    t["phase"] = t["phase"].fillna("-")
    t["roi_insts_per_host_s"] = t["insts"] / t["host_seconds"]
    g = t.groupby(["kernel", "phase", "size"], dropna=False)
    out = g.agg(runs=("id", "size"), wall_s=("wall_s", "median"),
                roi_host_s=("host_seconds", "median"),
                roi_insts_per_host_s=("roi_insts_per_host_s", "median")).reset_index()
    return out.sort_values(["kernel", "phase", "size"]).reset_index(drop=True)


def status_table(df: pd.DataFrame) -> pd.DataFrame:
    df = runs_once(df)
    if df.empty:
        return pd.DataFrame(columns=["status", "runs"])
    t = df.groupby("status", dropna=False).size().reset_index(name="runs")
    return t.sort_values(["runs", "status"], ascending=[False, True]).reset_index(drop=True)


def validation_table(df: pd.DataFrame) -> pd.DataFrame:
    """The workloads' self-checks: pass and max errors, per run that reported them (and the
    path ggml ran, in a sweep with ggml's own kernels)."""
    df = runs_once(df)
    path = ["ggml_path"] if "ggml_path" in df.columns and df["ggml_path"].notna().any() else []
    cols = [c for c in ("id", "target", "status", "kernel", "model", "phase", "vlen", *path,
                        "pass", "max_abs_err", "max_rel_err") if c in df.columns]
    if df.empty or "pass" not in df.columns:
        return pd.DataFrame(columns=cols)
    t = df[df["pass"].notna()][cols]
    keys = [c for c in ("kernel", "model", "phase", "vlen") if c in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def failed_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs that are not usable, with status and cause (analysis errors included)."""
    df = runs_once(df)
    if df.empty:
        return pd.DataFrame(columns=["id", "status", "problem", "cause"])
    bad = df[~df["usable"].astype(bool)]
    if "target" in bad.columns:  # qemu runs have no stats: not failures when ok
        bad = bad[~((bad["target"] == "qemu") & (bad["status"] == "ok"))]
    t = bad[["id", "status"]].copy()
    cause = bad.get("cause", pd.Series("", index=bad.index)).fillna("").astype(str)
    aerr = bad.get("analysis_error", pd.Series("", index=bad.index)).fillna("").astype(str)
    t["problem"] = [problem(s, e) for s, e in zip(t["status"], aerr, strict=True)]
    t["cause"] = [("; ".join(x for x in (c, e) if x)) for c, e in zip(cause, aerr, strict=True)]
    return t.reset_index(drop=True)
