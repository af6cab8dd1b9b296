"""The paper's measurements on silicon beside ours: FA-V against ggml-scalar and ggml-vec on
the Banana Pi BPI-F3 (SpacemiT X60, VLEN 256; PAPER.md), one row per fa-v run at that VLEN
and baseline, whichever uarch it ran on (the X60 and its sensitivity variants in
sweeps/bpi-f3.yaml). Written as tables/hardware_comparison.{csv,md,tex};
results/reference-bpi-f3/README.md quotes it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .speedup import BASELINES

#: the BPI-F3's VLEN (SpacemiT K1 datasheet: "Vector-256bit")
BPI_F3_VLEN = 256
#: PAPER.md, "Banana Pi BPI-F3": (phase, baseline) -> model -> the paper's ratio in fp32;
#: "*" for every model. The paper quotes one figure per phase for N in {64, 128, 256}.
PAPER_BPI_F3 = {
    ("prefill", "ggml-scalar"): {"tinyllama-1.1b": "12x", "qwen2.5-3b": "14x"},
    ("prefill", "ggml-vec"): {"*": "3.7x"},
    ("decode", "ggml-scalar"): {"*": "4-5x"},
    ("decode", "ggml-vec"): {"*": "about 2x"},
}
COLUMNS = ["model", "phase", "size", "versus", "paper", "ours", "uarch", "lanes"]


def paper_ratio(phase: str, baseline: str, model: str) -> str:
    by_model = PAPER_BPI_F3.get((phase, baseline), {})
    return by_model.get(model, by_model.get("*", "-"))


def hardware_comparison(sp: pd.DataFrame) -> pd.DataFrame:
    """From the speedup table: every fa-v run at BPI_F3_VLEN against each baseline (its
    speedup_vs_<baseline>), with the paper's hardware ratio; `size` is N for prefill and L
    for decode. Rows without a baseline run are left out."""
    need = {"kernel", "vlen", "phase", "model"}
    if sp.empty or not need <= set(sp.columns):
        return pd.DataFrame(columns=COLUMNS)
    fav = sp[(sp["kernel"] == "fa-v") & (sp["vlen"] == BPI_F3_VLEN)]
    out: list[dict[str, Any]] = []
    for rec in fav.to_dict("records"):
        phase = rec["phase"]
        size = rec.get("n") if phase == "prefill" else rec.get("l")
        for b in BASELINES:
            ratio = rec.get(f"speedup_vs_{b}")
            if ratio is None or not math.isfinite(float(ratio)):
                continue
            out.append({"model": rec["model"], "phase": phase, "size": _int(size),
                        "versus": b, "paper": paper_ratio(phase, b, rec["model"]),
                        "ours": round(float(ratio), 2), "uarch": rec.get("uarch"),
                        "lanes": _lanes(rec.get("lanes"))})
    return pd.DataFrame(out, columns=COLUMNS)


def _lanes(v: Any) -> Any:
    """The lane count, "-" for a uarch that ignores lanes (a pivot drops empty keys)."""
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else _int(v)


def _int(v: Any) -> Any:
    return int(v) if isinstance(v, float) and math.isfinite(v) else v
