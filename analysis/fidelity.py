"""Our ports against ggml's own kernels (issue 15): the fidelity of each port (cycles and
instruction mix beside the ggml kernel it ports, at the same point) and FA-V against every
ggml baseline, current ggml (ggml-lib-vec, the path ggml picks itself) beside the paper's
ggml-scalar and ggml-vec. The pairs come from the kernel registry (`Kernel.port`, the
baselines and their labels)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from workloads.kernels import ATTENTION, baselines, headline, ports

from .cycles import instruction_mix
from .select import LEAD_AXES, axis_columns, best_match, records, usable
from .speedup import baseline_of

#: what fidelity compares, port and ggml side by side: column stem -> collected column
METRICS = ("cycles", "scalar_ops", "vector_uops", "vsetvl")
#: a port differs from ggml when a metric's ratio is off 1 by more than this
TOLERANCE = 0.10
#: why a port differs from the ggml kernel it ports by more than TOLERANCE, by (port,
#: ggml kernel): what the code does differently (workloads/ggml/README.md, QEMU traces).
#: The report and results READMEs show it in the `reason` column; a pair over the
#: tolerance without an entry says so.
REASONS: dict[tuple[str, str], str] = {
    ("ggml-vec", "ggml-lib-vec-onerow"):
        "ggml's one-row loop does more scalar work per key than the port (the mask read for "
        "every key, glibc expf, its bookkeeping: about 40 instructions per key under QEMU); "
        "its F32 vector helpers run at e32 m8 where the port takes the smallest LMUL that "
        "holds D (gem5 splits an instruction into LMUL micro-ops)",
    ("ggml-scalar", "ggml-lib-scalar-onerow"):
        "ggml's one-row loop does more scalar work per key than the port (the mask read for "
        "every key, glibc expf, its bookkeeping)",
    ("q8-ggml", "q8-ggml-lib"):
        "ggml's mul_mat loop, dispatch and per-compute overhead around the same "
        "vec_dot_q8_0_q8_0 (within 1.2% of instructions under QEMU at 64 rows)",
    ("q8-scalar", "q8-ggml-lib-scalar"):
        "ggml's mul_mat loop, dispatch and per-compute overhead around its generic "
        "vec_dot_q8_0_q8_0",
}
NOT_EXPLAINED = "over 10%, not explained yet (analysis/fidelity.py REASONS)"


def _absent(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _ratio(ggml: Any, port: Any) -> float:
    a, b = float(ggml), float(port)
    return a / b if b and math.isfinite(a) and math.isfinite(b) else math.nan


def fidelity_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per usable run of a port and the run of the ggml kernel it ports at the same point
    (every axis equal but the kernel; an axis either side ignores matches anything): cycles,
    scalar micro-ops, vector micro-ops and vsetvl of both and `<metric>_ratio` = ggml / port
    (above 1: ggml costs more), `over_10pct` naming the metrics whose ratio is off 1 by more
    than 10%, and the `reason` for those (REASONS)."""
    u = usable(df)
    if u.empty or "kernel" not in u.columns or not {"ops", "vec_uops_total"} <= set(u.columns):
        return pd.DataFrame()
    pairs = ports()  # ggml kernel -> port
    u = u[u["kernel"].isin([*pairs, *pairs.values()])]
    if u.empty:
        return pd.DataFrame()
    u = u.join(instruction_mix(u))
    axes = axis_columns(df)
    recs = records(u, axes + ["workload"])
    cols = [a for a in axes + ["workload"] if a != "kernel"]
    out = []
    for r in recs:
        for ggml in (g for g, p in pairs.items() if p == r["kernel"]):
            m = best_match(r, [c for c in recs if c["kernel"] == ggml], cols)
            if m is not None:
                out.append(_pair_row(r["_row"], m["_row"], ggml, axes))
    if not out:
        return pd.DataFrame()
    t = pd.DataFrame(out)
    keys = [a for a in axes if a in t.columns and a != "kernel"]
    varying = [a for a in keys if t[a].notna().any()
               and (a in ("model", "phase", "vlen") or t[a].nunique(dropna=False) > 1)]
    lead = ["port", "ggml", "ggml_path", *[a for a in LEAD_AXES if a in varying]]
    t = t[lead + [a for a in varying if a not in lead]
          + [c for c in t.columns if c not in lead and c not in keys]]
    return t.sort_values(lead, kind="stable", na_position="first").reset_index(drop=True)


def _pair_row(port: dict[str, Any], ggml: dict[str, Any], ggml_kernel: str,
              axes: list[str]) -> dict[str, Any]:
    # the point's axes: the port's, else the ggml run's
    row: dict[str, Any] = {a: ggml.get(a) if _absent(port.get(a)) else port.get(a)
                           for a in axes if a != "kernel"}
    row.update(port=port["kernel"], ggml=ggml_kernel, ggml_path=ggml.get("ggml_path"))
    over = []
    for m in METRICS:
        row[f"{m}_port"], row[f"{m}_ggml"] = port.get(m), ggml.get(m)
        ratio = _ratio(ggml.get(m), port.get(m))
        row[f"{m}_ratio"] = ratio
        if math.isfinite(ratio) and abs(ratio - 1) > TOLERANCE:
            over.append(m)
    row["over_10pct"] = ", ".join(over)
    row["reason"] = (REASONS.get((port["kernel"], ggml_kernel), NOT_EXPLAINED) if over else "")
    return row


#: FA-V's baselines in the order the table shows them, and what it calls each
SHOWN = {k.name: k.shown for k in baselines(ATTENTION)}
#: the baseline that is ggml's own choice of path (current ggml)
CURRENT = [k.name for k in baselines(ATTENTION) if k.ggml_path == "auto"]
#: the points fa-v is compared at
VS_KEYS = ["model", "phase", "n", "l", "uarch", "timing_model", "lanes", "vlen"]


def vs_ggml_table(df: pd.DataFrame) -> pd.DataFrame:
    """FA-V against each ggml baseline at every point it ran: its cycles and `vs <baseline>`
    = baseline cycles / FA-V cycles for the paper's ggml-scalar and ggml-vec and for current
    ggml (ggml-lib-vec: ggml's own kernel with the path ggml picks), and `current ggml path`,
    the path that ran (tiled, one-row, one-row-split-kv). Empty without a FA-V run that has
    a current-ggml run at its point."""
    u = usable(df)
    fav = headline()
    if u.empty or "kernel" not in u.columns or not CURRENT:
        return pd.DataFrame()
    u = u[(u["workload"] == ATTENTION.name) & u["kernel"].isin([fav, *SHOWN])]
    axes = axis_columns(df)
    recs = records(u, axes + ["workload"])
    out = []
    for r in (c for c in recs if c["kernel"] == fav):
        row: dict[str, Any] = {a: r["_row"].get(a) for a in VS_KEYS if a in axes}
        row[f"{fav} cycles"] = r["_row"]["cycles"]
        for b, shown in SHOWN.items():
            m = baseline_of(r, recs, b, axes)
            row[f"vs {shown}"] = (m["_row"]["cycles"] / r["_row"]["cycles"] if m
                                  else math.nan)
            if b in CURRENT:
                row[f"{shown} path"] = m["_row"].get("ggml_path") if m else None
        out.append(row)
    t = pd.DataFrame(out)
    current = [f"vs {SHOWN[c]}" for c in CURRENT]
    if t.empty or t[current].isna().all().all():
        return pd.DataFrame()
    t = t[t[current].notna().any(axis=1)]
    t = t.drop(columns=[a for a in VS_KEYS if a in t.columns and t[a].isna().all()])
    keys = [a for a in LEAD_AXES if a in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)

