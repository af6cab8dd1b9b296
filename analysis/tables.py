"""Tables from a collected sweep: speedups, VL scaling, Q8_0 cycle breakdown, run status.

Every table is written as CSV, Markdown and LaTeX (booktabs). Only usable runs (status ok,
stats parsed, gem5 target) enter speedups, scaling and breakdowns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from .synth import OP_CLASSES

BASELINES = ("ggml-scalar", "ggml-vec")
# Axes a baseline does not depend on: the scalar kernel runs no vector code.
BASELINE_IGNORES = {"ggml-scalar": {"vlen", "lanes"}, "ggml-vec": set()}
REF_VLEN = 512
LEAD_AXES = ["model", "phase", "precision", "timing_model", "lanes", "vlen", "kernel"]

PACKING = {"SimdMisc"}  # vslideup/vslidedown/vrgather/vmv: gem5 files them as SimdMisc
REDUCTION = {"SimdReduceAdd", "SimdReduceAlu", "SimdReduceCmp", "SimdFloatReduceAdd",
             "SimdFloatReduceCmp"}
MAC = {"SimdAdd", "SimdAddAcc", "SimdMult", "SimdMultAcc", "SimdMatMultAcc", "SimdFloatAdd",
       "SimdFloatMult", "SimdFloatMultAcc", "SimdFloatMatMultAcc"}
CATEGORIES = {"packing": PACKING, "reduction": REDUCTION, "mac": MAC}
VECTOR_MEM_CLASSES = {c for c in OP_CLASSES if c.startswith("Simd") and (
    "Load" in c or "Store" in c)}
DEFAULT_SIMD_LAT = 6.0  # MinorDefaultFloatSimdFU opLat in gem5 v24


def axis_columns(df: pd.DataFrame) -> list[str]:
    """Columns that came from run.json axes (recorded per row in _axes)."""
    names: set[str] = set()
    if "_axes" in df.columns:
        for v in df["_axes"].dropna():
            names.update(a for a in str(v).split(",") if a)
    lead = [a for a in LEAD_AXES if a in names]
    return lead + sorted(names - set(lead))


def _norm(v: Any) -> Any:
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


def _matches(a: dict[str, Any], b: dict[str, Any], cols: Iterable[str]) -> int:
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


def _find(target: dict[str, Any], cands: list[dict[str, Any]], cols: list[str]
          ) -> dict[str, Any] | None:
    best, best_n = None, -1
    for c in cands:
        n = _matches(target, c, cols)
        if n > best_n:  # the most specific non-conflicting match; first one on ties
            best, best_n = c, n
    return best


def _records(df: pd.DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict("records"):
        r = {c: _norm(rec.get(c)) for c in cols}
        r["_row"] = rec
        out.append(r)
    return out


def usable(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty or "usable" not in df.columns:
        return df.iloc[0:0]
    return df[df["usable"].astype(bool)]


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
    u = u[u["workload"] == "attention"] if "workload" in u.columns else u
    recs = _records(u, axes + ["workload"])
    out = []
    for r in recs:
        row = {a: r["_row"].get(a) for a in axes}
        row["cycles"] = r["_row"]["cycles"]
        row["id"] = r["_row"]["id"]
        for b in BASELINES:
            cols = [a for a in axes + ["workload"]
                    if a != "kernel" and a not in BASELINE_IGNORES[b]]
            cands = [c for c in recs if c["kernel"] == b]
            m = _find(r, cands, cols)
            row[f"speedup_vs_{b}"] = (m["_row"]["cycles"] / r["_row"]["cycles"]
                                      if m is not None else math.nan)
        out.append(row)
    t = pd.DataFrame(out)
    keys = [a for a in axes if a in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def speedup_summary(sp: pd.DataFrame, baseline: str = "ggml-scalar") -> pd.DataFrame:
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
    recs = _records(u, axes + ["workload"])
    refs = [c for c in recs if c["vlen"] == float(ref_vlen)]
    cols = [a for a in axes + ["workload"] if a != "vlen"]
    out = []
    for r in recs:
        if r["vlen"] is None:
            continue
        m = _find(r, refs, cols)
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


def _latency(oplat: dict[str, Any], cls: str, rec: dict[str, Any]) -> float:
    v = oplat.get(cls)
    if isinstance(v, dict):
        v = v.get("lat", v.get("latency", v.get("base")))
    lat = float(v) if isinstance(v, (int, float)) else DEFAULT_SIMD_LAT
    if str(rec.get("timing_model")) == "vl-scaled" and cls not in VECTOR_MEM_CLASSES:
        vlen, lanes = float(rec.get("vlen") or 0), float(rec.get("lanes") or 0)
        lbits = float(rec.get("lane_bits") or 64)
        if vlen > 0 and lanes > 0:
            lat += max(0.0, math.ceil(vlen / (lanes * lbits)) - 1)
    return lat


def q8_breakdown_table(df: pd.DataFrame) -> pd.DataFrame:
    """Share of ROI cycles in packing, reduction, multiply-accumulate and other, per Q8 run.

    Attribution: the patch's busyCycles per op class when the run has them; otherwise
    committed vector micro-ops x op latency (run.json system.op_latency, default 6).
    other = cycles - (packing + reduction + mac); if the attributed sum exceeds the cycles,
    the three are scaled to sum to 1 and other is 0. `<category>_of_vector` are the three
    as shares of their sum (the split of the vector work, comparable with the paper's).
    """
    u = usable(df)
    if u.empty or "kernel" not in u.columns:
        return pd.DataFrame()
    u = u[u["kernel"].astype(str).str.startswith("q8")]
    axes = axis_columns(df)
    out = []
    for rec in u.to_dict("records"):
        busy = bool(rec.get("has_vec_timing")) and float(rec.get("vec_busy_total") or 0) > 0
        try:
            oplat = json.loads(rec.get("op_latency") or "{}")
        except (TypeError, ValueError):
            oplat = {}
        if not isinstance(oplat, dict):
            oplat = {}
        cyc: dict[str, float] = {}
        for cat, classes in CATEGORIES.items():
            s = 0.0
            for c in classes:
                if busy:
                    s += float(rec.get(f"vec_busy_{c}") or 0)
                else:
                    s += float(rec.get(f"vec_uops_{c}") or 0) * _latency(oplat, c, rec)
            cyc[cat] = s
        total = float(rec["cycles"])
        attributed = sum(cyc.values())
        denom = max(total, attributed)
        row = {a: rec.get(a) for a in axes}
        row["method"] = "busyCycles" if busy else "uops x latency"
        row["cycles"] = total
        for cat in CATEGORIES:
            row[cat] = cyc[cat] / denom if denom else math.nan
        row["other"] = max(0.0, total - attributed) / denom if denom else math.nan
        # the same three as shares of the vector work alone (the paper's packing / reduction
        # / MAC split sums to 100%): what the vector unit spends its time on
        for cat in CATEGORIES:
            row[f"{cat}_of_vector"] = cyc[cat] / attributed if attributed else math.nan
        out.append(row)
    t = pd.DataFrame(out)
    if t.empty:
        return t
    keys = [a for a in ("kernel", "vlen", "lanes", "timing_model") if a in t.columns]
    return t.sort_values(keys, kind="stable").reset_index(drop=True)


def runs_once(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run (collect lists a run shared by several uarchs once per uarch)."""
    return df.drop_duplicates("id") if "id" in df.columns else df


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


def cycle_accounting_table(df: pd.DataFrame) -> pd.DataFrame:
    """Where a run's cycles go, from the committed instruction mix and the patch's stats:
    scalar micro-ops, vector micro-ops and vsetvl (SimdConfig) per run, the core's IPC,
    the share of cycles some vector unit was busy (busyCycles summed over units, so it can
    exceed 1 when units overlap), the cycles micro-ops waited for a busy unit, and the L1D
    miss rate and L2 misses (demand accesses as gem5 counts them; the L2's include the L1D
    prefetcher's). A kernel whose scalar ops grow relative to its vector ops will not gain
    from longer vectors; one with many L2 misses waits for memory whatever the VLEN."""
    u = runs_once(usable(df))
    need = {"cycles", "ops", "vec_uops_total"}
    if u.empty or not need <= set(u.columns) or "workload" not in u.columns:
        return pd.DataFrame()
    u = u[u["workload"].isin(["attention", "q8"])]
    if u.empty:
        return pd.DataFrame()
    axes = [a for a in axis_columns(df) if a in u.columns and u[a].notna().any()
            and u[a].astype(str).nunique() > 1]
    t = u[axes].copy()
    cfg = u.get("vec_uops_SimdConfig", pd.Series(0.0, index=u.index)).fillna(0.0)
    cyc = u["cycles"].astype(float)
    t["cycles"] = cyc
    t["ipc"] = u["ops"] / cyc
    t["scalar_ops"] = u["ops"] - u["vec_uops_total"]
    t["vector_uops"] = u["vec_uops_total"] - cfg
    t["vsetvl"] = cfg
    t["scalar_per_vector"] = t["scalar_ops"] / t["vector_uops"].where(t["vector_uops"] > 0)
    busy = u.get("vec_busy_total", pd.Series(math.nan, index=u.index))
    has = u.get("has_vec_timing", pd.Series(False, index=u.index)).fillna(False).astype(bool)
    t["vec_busy_share"] = (busy / cyc).where(has)
    t["vec_wait_cycles"] = u.get("vec_wait_total", pd.Series(math.nan, index=u.index)
                                 ).where(has)
    t["lane_util"] = u.get("lane_util", pd.Series(math.nan, index=u.index)).where(has)
    nan = pd.Series(math.nan, index=u.index)
    l1d = u.get("l1d_accesses", nan).astype(float)
    t["l1d_miss_rate"] = u.get("l1d_misses", nan) / l1d.where(l1d > 0)
    t["l2_misses"] = u.get("l2_misses", nan)
    keys = [a for a in LEAD_AXES if a in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


#: axes that change timing or layout, not the instructions a kernel commits: pooled in vl_fill
FILL_POOLED = {"lanes", "stack_shift"}
#: always shown (the size too, so that a reader knows which N / L a fill belongs to)
FILL_KEYS = ["kernel", "model", "phase", "n", "l", "vlen"]


def vl_fill_table(df: pd.DataFrame) -> pd.DataFrame:
    """How full the vectors are: per kernel, model, phase, VLEN (and any other axis the runs
    differ in, except lanes and stack_shift, whose runs are pooled by summing counts), from
    the patch's vecTiming stats of usable gem5 runs with vector micro-ops.

    A micro-op covers one vector register (gem5 splits an LMUL > 1 instruction into LMUL
    micro-ops). `vector_uops` and `elems_per_uop` count every vector micro-op, memory ones
    included: gem5 splits a strided or indexed access into one micro-op per element, so
    these means can be low without any arithmetic being short. elementBits sums active
    elements x SEW over the arithmetic micro-ops only, so the fill is taken over those:
    fill_pct = 100 * elementBits / (arith_uops * VLEN). vlmax_e32 = VLEN / 32 (LMUL 1)."""
    u = runs_once(usable(df))
    need = {"has_vec_timing", "vec_timing_uops_total", "vec_element_bits", "vlen"}
    if u.empty or not need <= set(u.columns):
        return pd.DataFrame()
    u = u[u["has_vec_timing"].fillna(False).astype(bool) & u["vlen"].notna()
          & (u["vec_timing_uops_total"].fillna(0) > 0)]
    if u.empty:
        return pd.DataFrame()
    extra = [a for a in axis_columns(df) if a in u.columns and a not in FILL_KEYS
             and a not in FILL_POOLED and u[a].notna().any() and u[a].astype(str).nunique() > 1]
    keys = [a for a in FILL_KEYS if a in u.columns and u[a].notna().any()] + extra
    g = u.groupby(keys, dropna=False, sort=False)
    t = g.agg(runs=("id", "size"), vector_uops=("vec_timing_uops_total", "sum"),
              elems=("vec_elems_total", "sum"), arith_uops=("vec_timing_uops_arith", "sum"),
              arith_elems=("vec_elems_arith", "sum"), bits=("vec_element_bits", "sum")
              ).reset_index()
    vlen = t["vlen"].astype(float)
    arith = t["arith_uops"].where(t["arith_uops"] > 0)
    t["elems_per_uop"] = t["elems"] / t["vector_uops"]
    t["elems_per_arith_uop"] = t["arith_elems"] / arith
    t["vlmax_e32"] = vlen / 32
    t["bits_per_arith_uop"] = t["bits"] / arith
    t["fill_pct"] = 100 * t["bits"] / (arith * vlen)
    t = t.drop(columns=["elems", "arith_elems", "bits"])
    lead = [a for a in LEAD_AXES if a in t.columns]
    return t.sort_values(lead, kind="stable", na_position="first").reset_index(drop=True)


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
    u = u[(u["kernel"] == "fa-v") & u["regime"].notna() & u["cycles"].notna()]
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
    order = [r for r in ("auto", "blocked", "packed", "rows", "dot") if r in t.columns]
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


def status_table(df: pd.DataFrame) -> pd.DataFrame:
    df = runs_once(df)
    if df.empty:
        return pd.DataFrame(columns=["status", "runs"])
    t = df.groupby("status", dropna=False).size().reset_index(name="runs")
    return t.sort_values(["runs", "status"], ascending=[False, True]).reset_index(drop=True)


def validation_table(df: pd.DataFrame) -> pd.DataFrame:
    """The workloads' self-checks: pass and max errors, per run that reported them."""
    df = runs_once(df)
    cols = [c for c in ("id", "target", "status", "kernel", "model", "phase", "vlen", "pass",
                        "max_abs_err", "max_rel_err") if c in df.columns]
    if df.empty or "pass" not in df.columns:
        return pd.DataFrame(columns=cols)
    t = df[df["pass"].notna()][cols]
    keys = [c for c in ("kernel", "model", "phase", "vlen") if c in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def failed_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs that are not usable, with status and cause (analysis errors included)."""
    df = runs_once(df)
    if df.empty:
        return pd.DataFrame(columns=["id", "status", "cause"])
    bad = df[~df["usable"].astype(bool)]
    if "target" in bad.columns:  # qemu runs have no stats: not failures when ok
        bad = bad[~((bad["target"] == "qemu") & (bad["status"] == "ok"))]
    t = bad[["id", "status"]].copy()
    cause = bad.get("cause", pd.Series("", index=bad.index)).fillna("").astype(str)
    aerr = bad.get("analysis_error", pd.Series("", index=bad.index)).fillna("").astype(str)
    t["cause"] = [("; ".join(x for x in (c, e) if x)) for c, e in zip(cause, aerr, strict=True)]
    return t.reset_index(drop=True)


# ---------------------------------------------------------------- formatting

def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def to_markdown(t: pd.DataFrame) -> str:
    if t.empty:
        return "_no data_\n"
    cols = list(t.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for rec in t.itertuples(index=False):
        cells = [_fmt(v).replace("|", "\\|") for v in rec]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}"}


def tex_escape(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def to_latex(t: pd.DataFrame) -> str:
    if t.empty:
        return "% no data\n"
    cols = list(t.columns)
    spec = "".join("r" if pd.api.types.is_numeric_dtype(t[c]) else "l" for c in cols)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
             " & ".join(tex_escape(c) for c in cols) + " \\\\", "\\midrule"]
    for rec in t.itertuples(index=False):
        lines.append(" & ".join(tex_escape(_fmt(v)) for v in rec) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(t: pd.DataFrame, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.csv", out_dir / f"{name}.md", out_dir / f"{name}.tex"]
    t.to_csv(paths[0], index=False)
    paths[1].write_text(to_markdown(t))
    paths[2].write_text(to_latex(t))
    return paths


def all_tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    from .compare import paper_comparison, targets_table  # compare builds on this module
    sp = speedup_table(df)
    pc = paper_comparison(df)
    return {
        "status": status_table(df),
        "failed": failed_runs(df),
        "speedup_summary": speedup_summary(sp),
        "speedup": sp,
        "vl_scaling": vl_scaling_table(df),
        "q8_breakdown": q8_breakdown_table(df),
        "paper_comparison": pc,
        "targets": targets_table(pc),
        "cycle_accounting": cycle_accounting_table(df),
        "vl_fill": vl_fill_table(df),
        "regimes": regime_table(df),
        "layout_spread": layout_spread_table(df),
        "host_cost": host_cost_table(df),
        "validation": validation_table(df),
    }


def write_all(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    paths: list[Path] = []
    for name, t in all_tables(df).items():
        paths += write_table(t, out_dir, name)
    return paths
