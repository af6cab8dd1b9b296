"""Figures (PNG and PDF) from a collected sweep. Matplotlib Agg, Okabe-Ito colours.

Each figure function returns the files it wrote, or raises Skip with the reason when the data
it needs is not in the sweep; make_all collects those reasons for the report.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from workloads.kernels import headline  # noqa: E402

from .cycles import q8_breakdown_table, vl_fill_table  # noqa: E402
from .layer import sublayer_table  # noqa: E402
from .select import usable  # noqa: E402
from .speedup import REF_VLEN, speedup_table, vl_scaling_table  # noqa: E402

OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442",
             "#000000"]
CATEGORY_COLOURS = {"packing": "#E69F00", "reduction": "#56B4E9", "mac": "#009E73",
                    "other": "#999999"}
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DIVERGING = "PuOr_r"  # colour-blind safe diverging map
MAIN_KERNEL = headline()  # fa-v

STYLE = {
    "figure.dpi": 100, "savefig.dpi": 150, "font.size": 9, "axes.grid": True,
    "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO), "legend.frameon": False,
}


class Skip(Exception):
    """The data for a figure is absent; the message says what is missing."""


def _save(fig: plt.Figure, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    fig.tight_layout()
    for p in paths:
        fig.savefig(p)
    plt.close(fig)
    return paths


def _log2_x(ax: plt.Axes, vlens: list[float]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(vlens)
    ax.set_xticklabels([str(int(v)) for v in vlens])
    ax.minorticks_off()
    ax.set_xlabel("VLEN (bits)")


def _need(t: pd.DataFrame, cols: list[str], what: str) -> None:
    if t.empty:
        raise Skip(f"{what}: no data (no usable gem5 run with cycles; qemu and failed runs "
                   "have none)")
    missing = [c for c in cols if c not in t.columns]
    if missing:
        raise Skip(f"{what}: no data (no column {', '.join(missing)})")


def _timing_models(t: pd.DataFrame) -> list[object]:
    return list(pd.unique(t["timing_model"])) if "timing_model" in t.columns else [None]


def _lanes_label(lanes: float) -> str:
    return "lanes n/a" if lanes <= 0 else f"{int(lanes)} lanes"


def _fill_lanes(t: pd.DataFrame) -> pd.DataFrame:
    """Runs whose model ignores lanes (e.g. fixed timing) carry no lanes: group them as 0."""
    t = t.copy()
    if "lanes" in t.columns:
        t["lanes"] = pd.to_numeric(t["lanes"], errors="coerce").fillna(0)
    return t


def _sel(t: pd.DataFrame, col: str, val: object) -> pd.DataFrame:
    if val is None or col not in t.columns:
        return t
    return t[t[col] == val]


def _largest_size(tp: pd.DataFrame, phase: str) -> tuple[pd.DataFrame, str]:
    """The rows of the largest problem of a phase (N for prefill, L for decode) and its
    label: averaging speedups over sizes would hide which size a point is."""
    col = "n" if phase == "prefill" else "l"
    if col not in tp.columns or tp[col].isna().all():
        return tp, ""
    size = tp[col].max()
    return tp[tp[col] == size], f" {col.upper()} = {int(size)}"


def _model_phase_grid(rows: int, cols: int) -> tuple[plt.Figure, Any]:
    """One panel per model (rows) and phase (columns)."""
    return plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)


def speedup_vs_vlen(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per model: FA-V speedup vs ggml-scalar against VLEN, prefill and decode, a line per
    lane count (and line style per timing model)."""
    t = speedup_table(df)
    _need(t, ["kernel", "vlen", "model", "phase"], "speedup vs VLEN")
    t = _fill_lanes(t[(t["kernel"] == MAIN_KERNEL) & t["speedup_vs_ggml-scalar"].notna()])
    if t.empty:
        raise Skip(f"speedup vs VLEN: no {MAIN_KERNEL} run with a matching ggml-scalar run")
    paths: list[Path] = []
    styles = ["-", "--", ":", "-."]
    with plt.rc_context(STYLE):
        for model, tm in t.groupby("model"):
            phases = [p for p in ("prefill", "decode") if p in set(tm["phase"])]
            fig, axs = plt.subplots(1, len(phases), figsize=(4.2 * len(phases), 3.2),
                                    squeeze=False)
            all_lanes = sorted(pd.unique(tm["lanes"])) if "lanes" in tm else [None]
            colour = {la: OKABE_ITO[i % len(OKABE_ITO)] for i, la in
                      enumerate(x for x in all_lanes if x is None or x > 0)}
            colour[0] = "#000000"  # runs whose timing model ignores lanes
            for ax, phase in zip(axs[0], phases, strict=True):
                tp, size = _largest_size(tm[tm["phase"] == phase], phase)
                for si, tmod in enumerate(_timing_models(tp)):
                    tt = _sel(tp, "timing_model", tmod)
                    lane_vals = sorted(pd.unique(tt["lanes"])) if "lanes" in tt else [None]
                    for lanes in lane_vals:
                        li = all_lanes.index(lanes)
                        tl = _sel(tt, "lanes", lanes).groupby("vlen")[
                            "speedup_vs_ggml-scalar"].mean().sort_index()
                        label = _lanes_label(lanes) if lanes is not None else "all"
                        if tmod is not None and len(_timing_models(tp)) > 1:
                            label += f", {tmod}"
                        ax.plot(tl.index, tl.values, linestyle=styles[si % 4],
                                marker=MARKERS[li % len(MARKERS)],
                                color=colour[lanes], label=label)
                _log2_x(ax, sorted(pd.unique(tp["vlen"])))
                ax.set_ylabel("speedup vs ggml-scalar")
                ax.set_title(f"{model}, {phase}{size}")
                ax.legend(fontsize=7)
            paths += _save(fig, out_dir, f"speedup_vs_vlen_{model}")
    return paths


def vlen_lanes_heatmap(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per model: FA-V speedup vs the 512-bit point on a VLEN x lanes grid, centred at 1."""
    t = vl_scaling_table(df)
    col = f"speedup_vs_vlen{REF_VLEN}"
    _need(t, ["kernel", "vlen", "lanes", "model", "phase", col], "VLEN x lanes heatmap")
    t = t[(t["kernel"] == MAIN_KERNEL) & t[col].notna()]
    if t.empty or t["lanes"].nunique() < 1:
        raise Skip(f"VLEN x lanes heatmap: no {MAIN_KERNEL} runs with a {REF_VLEN}-bit "
                   "reference")
    paths: list[Path] = []
    with plt.rc_context({**STYLE, "axes.grid": False}):
        for model, tm in t[t["lanes"].notna()].groupby("model"):
            tmods = _timing_models(tm)
            tmod = "lanes" if "lanes" in tmods else tmods[0]
            tm = _sel(tm, "timing_model", tmod)
            phases = [p for p in ("prefill", "decode") if p in set(tm["phase"])]
            if not phases:
                continue
            fig, axs = plt.subplots(1, len(phases), figsize=(4.2 * len(phases), 3.4),
                                    squeeze=False)
            for ax, phase in zip(axs[0], phases, strict=True):
                tp, size = _largest_size(tm[tm["phase"] == phase], phase)
                g = tp.pivot_table(index="lanes", columns="vlen",
                                                         values=col, aggfunc="mean")
                vals = g.to_numpy(dtype=float)
                lo, hi = np.nanmin(vals), np.nanmax(vals)
                # symmetric in ratio: x and 1/x get opposite colours of equal strength
                span = max(hi, 1 / lo, 1.001)
                norm = TwoSlopeNorm(vcenter=1.0, vmin=1 / span, vmax=span)
                im = ax.imshow(vals, cmap=DIVERGING, norm=norm, aspect="auto", origin="lower")
                ax.set_xticks(range(len(g.columns)), [str(int(v)) for v in g.columns])
                ax.set_yticks(range(len(g.index)), [str(int(v)) for v in g.index])
                ax.set_xlabel("VLEN (bits, log2 steps)")
                ax.set_ylabel("lanes")
                for (i, j), v in np.ndenumerate(vals):
                    if not math.isnan(v):
                        dark = abs(norm(v) - 0.5) > 0.3  # white text on saturated cells
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if dark else "black")
                ax.set_title(f"{model}, {phase}{size}" + (f" ({tmod})" if tmod else ""))
                fig.colorbar(im, ax=ax, label=f"speedup vs {REF_VLEN}-bit")
            paths += _save(fig, out_dir, f"heatmap_vlen_lanes_{model}")
    if not paths:
        raise Skip("VLEN x lanes heatmap: no runs with a lanes value")
    return paths


def q8_breakdown(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Stacked bars of the Q8_0 cycle shares across VLEN, one panel per layout (kernel) and a
    row per timing model; several lane counts give one bar per (VLEN, lanes)."""
    t = q8_breakdown_table(df)
    if t.empty:
        raise Skip("Q8_0 breakdown: no usable gem5 run of a q8 kernel")
    _need(t, ["kernel", "vlen"], "Q8_0 breakdown")
    t = _fill_lanes(t) if "lanes" in t.columns else t.assign(lanes=0)
    cats = ["packing", "reduction", "mac", "other"]
    combos = [(tmod, k) for tmod in _timing_models(t) for k in pd.unique(t["kernel"])
              if not _sel(t, "timing_model", tmod).query("kernel == @k").empty]
    n_bars = max(len(_sel(t, "timing_model", tmod).query("kernel == @k")
                     .groupby(["vlen", "lanes"])) for tmod, k in combos)
    width = max(2.8, 0.22 * n_bars + 0.8)
    with plt.rc_context({**STYLE, "axes.grid": False}):
        fig, axs = plt.subplots(1, len(combos), figsize=(width * len(combos) + 1.2, 3.4),
                                squeeze=False, sharey=True)
        for ax, (tmod, k) in zip(axs[0], combos, strict=True):
            sel = _sel(t, "timing_model", tmod)
            g = sel[sel["kernel"] == k].groupby(["vlen", "lanes"])[cats].mean().sort_index()
            multi_lanes = g.index.get_level_values("lanes").nunique() > 1
            # bars grouped by VLEN with a gap between groups; lanes under each bar
            vlens = list(dict.fromkeys(g.index.get_level_values("vlen")))
            x, pos = [], 0.0
            for i, (v, _la) in enumerate(g.index):
                if i and v != g.index[i - 1][0]:
                    pos += 0.8
                x.append(pos)
                pos += 1.0
            x = np.array(x)
            bottom = np.zeros(len(g.index))
            for cat in cats:
                vals = g[cat].to_numpy(dtype=float) * 100
                ax.bar(x, vals, bottom=bottom, color=CATEGORY_COLOURS[cat],
                       edgecolor="white", linewidth=0.5)
                bottom += vals
            if multi_lanes:
                ax.set_xticks(x, [str(int(la)) for _v, la in g.index], fontsize=6)
                for v in vlens:
                    xs = x[np.array([vv == v for vv, _ in g.index])]
                    ax.text(xs.mean(), -0.1, str(int(v)), transform=ax.get_xaxis_transform(),
                            ha="center", va="top", fontsize=8)
                ax.set_xlabel("lanes, grouped by VLEN (bits)", labelpad=18)
            else:
                ax.set_xticks(x, [str(int(v)) for v, _la in g.index])
                ax.set_xlabel("VLEN (bits)")
            ax.set_title(f"{k}" + (f" ({tmod})" if tmod is not None else ""))
        axs[0][0].set_ylabel("share of ROI cycles (%)")
        handles = [Patch(color=CATEGORY_COLOURS[c], label=c) for c in reversed(cats)]
        axs[0][-1].legend(handles=handles, fontsize=7, loc="upper left",
                          bbox_to_anchor=(1.0, 1.0))
        return _save(fig, out_dir, "q8_breakdown")


def _line_per_lanes(ax: plt.Axes, t: pd.DataFrame, col: str) -> None:
    """One line per lane count: the mean of a share column against VLEN, in percent."""
    for li, lanes in enumerate(sorted(pd.unique(t["lanes"]))):
        g = t[t["lanes"] == lanes].groupby("vlen")[col].mean()
        ax.plot(g.index, g.values * 100, marker=MARKERS[li % len(MARKERS)],
                color=OKABE_ITO[li % len(OKABE_ITO)], label=_lanes_label(lanes))


def lane_utilisation(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The patch's laneUtilization of FA-V against VLEN, a line per lane count."""
    u = usable(df)
    _need(u, ["kernel", "vlen", "lane_util"], "lane utilisation")
    u = _fill_lanes(u[(u["kernel"] == MAIN_KERNEL) & u["lane_util"].notna()
                      & (u["lane_util"] > 0)])
    if u.empty:
        raise Skip("lane utilisation: no fa-v run with the patch's vecTiming.laneUtilization")
    models = sorted(pd.unique(u["model"])) if "model" in u.columns else [None]
    phases = [p for p in ("prefill", "decode") if p in set(u.get("phase", []))] or [None]
    with plt.rc_context(STYLE):
        fig, axs = _model_phase_grid(len(models), len(phases))
        for i, model in enumerate(models):
            for j, phase in enumerate(phases):
                ax = axs[i][j]
                tp = _sel(_sel(u, "model", model), "phase", phase)
                _line_per_lanes(ax, tp, "lane_util")
                if not tp.empty:
                    _log2_x(ax, sorted(pd.unique(tp["vlen"])))
                    ax.legend(fontsize=7)
                ax.set_ylim(0, 105)
                ax.set_ylabel("lane utilisation (%)")
                ax.set_title(", ".join(str(x) for x in (MAIN_KERNEL, model, phase) if x))
        return _save(fig, out_dir, "lane_utilisation")


def peak_share(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """FLOP/cycle as a share of the lane peak (lanes*lane_bits/32*2 for fp32) vs VLEN."""
    u = usable(df)
    _need(u, ["kernel", "vlen", "lanes", "model", "peak_share"], "FLOP/cycle share of peak")
    u = _fill_lanes(u[(u["kernel"] == MAIN_KERNEL) & u["peak_share"].notna()])
    if u.empty:
        raise Skip(f"FLOP/cycle share of peak: no {MAIN_KERNEL} runs with lanes")
    paths: list[Path] = []
    with plt.rc_context(STYLE):
        models = sorted(pd.unique(u["model"]))
        phases = [p for p in ("prefill", "decode") if p in set(u["phase"])]
        fig, axs = plt.subplots(len(phases), len(models),
                                figsize=(3.6 * len(models), 3.0 * len(phases)), squeeze=False)
        for i, phase in enumerate(phases):
            for j, model in enumerate(models):
                ax = axs[i][j]
                tm = u[(u["model"] == model) & (u["phase"] == phase)]
                _line_per_lanes(ax, tm, "peak_share")
                if not tm.empty:
                    _log2_x(ax, sorted(pd.unique(tm["vlen"])))
                    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
                ax.set_ylabel("% of lane peak FLOP/cycle")
                ax.set_title(f"{model}, {phase}")
        paths += _save(fig, out_dir, "peak_share")
    return paths


def vl_fill(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """vl_fill's fill_pct (active bits of arithmetic vector micro-ops / VLEN) against VLEN, a
    row of panels per model, a column per phase at its largest N / L, a line per kernel;
    rows that differ in other axes (uarch, timing model) are averaged."""
    t = vl_fill_table(df)
    _need(t, ["kernel", "vlen", "phase", "fill_pct"], "vector fill")
    t = t[t["phase"].isin(["prefill", "decode"]) & t["fill_pct"].notna()]
    if t.empty:
        raise Skip("vector fill: no attention run with the patch's vecTiming.elementBits")
    models = sorted(pd.unique(t["model"])) if "model" in t.columns else [None]
    phases = [p for p in ("prefill", "decode") if p in set(t["phase"])]
    kernels = sorted(pd.unique(t["kernel"]))
    with plt.rc_context(STYLE):
        fig, axs = _model_phase_grid(len(models), len(phases))
        for i, model in enumerate(models):
            for j, phase in enumerate(phases):
                ax = axs[i][j]
                tp, size = _largest_size(_sel(_sel(t, "model", model), "phase", phase), phase)
                for ki, k in enumerate(kernels):
                    g = tp[tp["kernel"] == k].groupby("vlen")["fill_pct"].mean()
                    if not g.empty:
                        ax.plot(g.index, g.values, marker=MARKERS[ki % len(MARKERS)],
                                color=OKABE_ITO[ki % len(OKABE_ITO)], label=k)
                if not tp.empty:
                    _log2_x(ax, sorted(pd.unique(tp["vlen"])))
                    ax.legend(fontsize=7)
                ax.set_ylim(0, 105)
                ax.set_ylabel("active bits / VLEN, arithmetic uops (%)")
                ax.set_title(", ".join(str(x) for x in (model, phase) if x) + size)
        return _save(fig, out_dir, "vl_fill")


#: layer_sublayers' columns stacked in layer_breakdown, bottom up, and their colours
LAYER_STACK = {"attention": "#0072B2", "qkv": "#E69F00", "o_proj": "#F0E442",
               "ffn_up_gate": "#D55E00", "ffn_down": "#CC79A7", "other": "#999999"}


def layer_breakdown(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    """A decoder layer's cycles per sublayer, stacked: a panel per model, phase and uarch, a
    group of bars per VLEN (and lane count, where the uarch's timing depends on lanes), a
    bar per variant (attention kernel / linear layout, "K^T" for fa-v's kept transposed K
    cache; layer-scalar once, left). Norms, RoPE and the SwiGLU product are `other`."""
    t = sublayer_table(df)
    _need(t, ["model", "phase", "kernel"], "layer breakdown")
    t = t.copy()
    t["other"] = t["attn_norm"] + t["rope"] + t["ffn_norm"] + t["ffn_act"]
    kc = t["k_cache"] if "k_cache" in t.columns else pd.Series("", index=t.index)
    t["variant"] = [("scalar" if k == "layer-scalar" else
                     f"{a} / {li}" + (" / K^T" if c == "transposed" else ""))
                    for k, a, li, c in zip(t["kernel"], t.get("attn", ""), t.get("linear", ""),
                                           kc, strict=True)]
    t["_uarch"] = t["uarch"] if "uarch" in t.columns else ""
    panels = sorted({(m, ph, u) for m, ph, u in zip(t["model"], t["phase"], t["_uarch"],
                                                     strict=True)}, key=str)
    with plt.rc_context(STYLE):
        fig, axs = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)), squeeze=False)
        for ax, (model, phase, uarch) in zip(axs[:, 0], panels, strict=True):
            tp = t[(t["model"] == model) & (t["phase"] == phase) & (t["_uarch"] == uarch)]
            bars = _layer_bars(tp)
            x = np.array([b[0] for b in bars])
            bottom = np.zeros(len(bars))
            for part, colour in LAYER_STACK.items():
                vals = np.array([float(r[part]) / 1e6 for _, _, r in bars])
                ax.bar(x, vals, bottom=bottom, color=colour, label=part, width=0.8)
                bottom += vals
            ax.set_xticks(x)
            ax.set_xticklabels([lab for _, lab, _ in bars], rotation=35, ha="right",
                               fontsize=6)
            ax.set_xlim(-0.8, max(x.max(), 6.0) + 0.8)
            ax.set_ylabel("Mcycles per layer")
            ax.set_title(", ".join(str(v) for v in (model, phase, uarch) if v))
        axs[0][0].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
        return _save(fig, out_dir, "layer_breakdown")


#: bar order within a VLEN: llama.cpp's choice first, then attention alone, then the layouts
LAYER_VARIANTS = ("ggml-vec / q8-ggml", "fa-v / q8-ggml", "fa-v / q8-packed",
                  "fa-v / q8-split", "fa-v / q8-split / K^T")


def _layer_bars(tp: pd.DataFrame) -> list[tuple[float, str, Any]]:
    """(x, label, row) per bar: the scalar run first, then per VLEN (and lane count, when
    the panel has several) each variant in LAYER_VARIANTS order, a gap between groups."""
    out = [(0.0, "scalar", r) for _, r in tp[tp["variant"] == "scalar"].iterrows()][:1]
    x = 1.5 if out else 0.0
    vec = tp[tp["variant"] != "scalar"]
    rank = {v: i for i, v in enumerate(LAYER_VARIANTS)}
    if "vlen" not in vec.columns:
        return out
    lanes = vec["lanes"] if "lanes" in vec.columns else pd.Series(math.nan, index=vec.index)
    by_lanes = lanes.nunique() > 1
    groups = sorted({(int(v), int(la) if by_lanes else 0)
                     for v, la in zip(vec["vlen"], lanes, strict=True)})
    for vlen, la in groups:
        g = vec[(vec["vlen"] == vlen) & ((lanes == la) if by_lanes else True)]
        where = f"{vlen} bit x {la} lanes" if by_lanes else f"{vlen} bit"
        for _, r in sorted(g.iterrows(), key=lambda ir: (rank.get(ir[1]["variant"], 99),
                                                         ir[1]["variant"])):
            out.append((x, f"{where}: {r['variant']}", r))
            x += 1.0
        x += 0.5
    return out


FIGURES = {
    "speedup_vs_vlen": speedup_vs_vlen,
    "vlen_lanes_heatmap": vlen_lanes_heatmap,
    "q8_breakdown": q8_breakdown,
    "peak_share": peak_share,
    "lane_utilisation": lane_utilisation,
    "vl_fill": vl_fill,
    "layer_breakdown": layer_breakdown,
}


#: figures of workloads only some sweeps run: absent without a note when there is no data
OPTIONAL = frozenset({"layer_breakdown"})


def make_all(df: pd.DataFrame, out_dir: Path) -> tuple[dict[str, list[Path]], list[str]]:
    """Write every figure that the data allows; return ({figure: files}, skip notes). A
    sweep of several precisions gets each figure once per precision (fp32 in out_dir, the
    others in out_dir/<precision>, keys <figure>_<precision>), so that no line averages
    fp16 with fp32; runs without a precision (Q8_0, layer) go with fp32."""
    made: dict[str, list[Path]] = {}
    notes: list[str] = []
    for prec, part in _by_precision(df):
        where = out_dir if prec == "fp32" else out_dir / prec
        for name, fn in FIGURES.items():
            key, tag = (name, "") if prec == "fp32" else (f"{name}_{prec}", f"{prec}: ")
            try:
                made[key] = fn(part, where)
            except Skip as exc:
                if name not in OPTIONAL:
                    notes.append(tag + str(exc))
    return made, notes


def _by_precision(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(precision, its rows) for each precision of the usable runs; one part, the whole
    frame, when there are fewer than two."""
    if "precision" not in df.columns:
        return [("fp32", df)]
    prec = df["precision"]
    found = sorted({str(v) for v in usable(df)["precision"].dropna()})
    if len(found) < 2:
        return [("fp32", df)]
    order = sorted(found, key=lambda v: (v != "fp32", v))
    return [(v, df[(prec == v) | (prec.isna() if v == "fp32" else False)]) for v in order]
