"""One decoder layer, sublayer by sublayer (workloads `layer` and `layer-scalar`,
sweeps/layer.yaml): where a token's cycles go and how that moves with VLEN.

A layer run dumps stats once per sublayer; collect keeps each one's cycles as
`sub_<sublayer>_cycles` and the layer's as `cycles` (their sum). Every block has the same
nine sublayers; a GPT-NeoX block (Pythia) has no gate and names its up projection `ffn_up`,
which the tables keep in the `ffn_up_gate` column (the FFN's input projections). Tables:
- `layer_sublayers`: cycles per sublayer, one row per layer run;
- `layer_summary`: the layer's cycles, the attention and linear shares, the whole model's
  tokens per second implied at the uarch's clock, and the speedup over llama.cpp's own
  choice (ggml-vec attention, ggml's Q8_0 layout) at the same point.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from workloads.models import ModelsError, load_models

from .select import norm, runs_once, usable

LAYER_KERNELS = ("layer", "layer-scalar")
#: the sublayers in the order the workload runs (and dumps) them
SUBLAYERS = ("attn_norm", "qkv", "rope", "attention", "o_proj", "ffn_norm", "ffn_up_gate",
             "ffn_act", "ffn_down")
#: the Q8_0 matrix products of a layer (the rest is norms, RoPE, the SwiGLU product or GELU
#: and attention)
LINEAR = ("qkv", "o_proj", "ffn_up_gate", "ffn_down")
#: a block's own names for a sublayer slot (the workload's "sublayers" list): GPT-NeoX's FFN
#: has no gate, its up projection alone is `ffn_up`
ALIASES = {"ffn_up_gate": ("ffn_up",)}
#: what llama.cpp runs on a CPU today: the baseline of `vs_llama_cpp`
LLAMA_CPP = {"kernel": "layer", "attn": "ggml-vec", "linear": "q8-ggml"}
KEYS = ["model", "phase", "n", "l", "precision", "uarch", "lanes", "vlen", "kernel", "attn",
        "linear", "k_cache"]
def layer_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Usable layer runs that have every sublayer's cycles."""
    u = runs_once(usable(df))
    if u.empty or "kernel" not in u.columns:
        return u.iloc[0:0]
    u = u[u["kernel"].isin(LAYER_KERNELS)].copy()
    # runs made before layer-fp16 existed record no precision: they are fp32
    u["precision"] = u["precision"].fillna("fp32") if "precision" in u.columns else "fp32"
    for slot, names in ALIASES.items():
        own = f"sub_{slot}_cycles"
        for col in (f"sub_{n}_cycles" for n in names if f"sub_{n}_cycles" in u.columns):
            u[own] = u[own].fillna(u[col]) if own in u.columns else u[col]
    cols = [f"sub_{s}_cycles" for s in SUBLAYERS]
    if u.empty or not set(cols) <= set(u.columns):
        return u.iloc[0:0]
    return u[u[cols].notna().all(axis=1)]


def _keys(u: pd.DataFrame) -> list[str]:
    return [k for k in KEYS if k in u.columns and u[k].notna().any()]


def sublayer_table(df: pd.DataFrame) -> pd.DataFrame:
    """Cycles of each sublayer and of the layer, one row per layer run."""
    u = layer_runs(df)
    if u.empty:
        return pd.DataFrame()
    keys = _keys(u)
    out = u[keys].copy()
    for s in SUBLAYERS:
        out[s] = u[f"sub_{s}_cycles"].astype("int64")
    out["layer"] = u["cycles"].astype("int64")
    return out.sort_values(keys).reset_index(drop=True)


def _layers(model: Any) -> float:
    try:
        return float(load_models().get(str(model), {}).get("layers", math.nan))
    except ModelsError:
        return math.nan


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per layer run: the layer's cycles; the shares of attention, the linear layers and
    the rest (norms, RoPE, SwiGLU product); tokens per second of the whole model on one
    core = clock x tokens / (layers x layer cycles), assuming every layer costs what this
    one does and nothing else (embedding, output head, sampling) is counted; and
    `vs_llama_cpp` = llama.cpp's choice's layer cycles / this run's at the same point."""
    u = layer_runs(df)
    if u.empty:
        return pd.DataFrame()
    keys = _keys(u)
    out = u[keys].copy()
    layer = u["cycles"].astype(float)
    out["layer_cycles"] = layer.astype("int64")
    out["attention_pct"] = (100 * u["sub_attention_cycles"] / layer).round(1)
    linear = sum(u[f"sub_{s}_cycles"] for s in LINEAR)
    out["linear_pct"] = (100 * linear / layer).round(1)
    out["other_pct"] = (100 - out["attention_pct"] - out["linear_pct"]).round(1)
    tokens = u["n"].where(u["phase"] == "prefill", 1.0) if "n" in u.columns else 1.0
    hz = u["clock_hz"] if "clock_hz" in u.columns else math.nan
    layers = u["model"].map(_layers)
    out["model_layers"] = layers
    out["tokens_per_s"] = (hz * tokens / (layers * layer)).round(2)
    out["vs_llama_cpp"] = _vs_llama_cpp(u, keys)
    return out.sort_values(keys).reset_index(drop=True)


def _vs_llama_cpp(u: pd.DataFrame, keys: list[str]) -> list[float]:
    """Per row, llama.cpp's choice's layer cycles at the same point / this row's (NaN when
    that run is absent; NaN for layer-scalar, whose run has no VLEN to match)."""
    point = [k for k in keys if k not in ("kernel", "attn", "linear", "k_cache")]
    base = u
    for k, v in LLAMA_CPP.items():
        if k in base.columns:
            base = base[base[k] == v]
    ref = {tuple(norm(r[k]) for k in point): float(r["cycles"])
           for r in base.to_dict("records")}
    out = []
    for r in u.to_dict("records"):
        b = ref.get(tuple(norm(r[k]) for k in point)) if r["kernel"] == "layer" else None
        out.append(round(b / float(r["cycles"]), 3) if b else math.nan)
    return out

