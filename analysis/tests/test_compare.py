"""The paper-vs-ours table picks the right runs and divides the right cycles."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import synth
from analysis.collect import collect
from analysis.compare import paper_comparison, targets_table
from analysis.tests.synthetic_sweep import attn_axes, attn_result, write_run


def _run(root: Path, rid: str, kernel: str, uarch: str, vlen: int | None, lanes: int | None,
         tm: str | None, cycles: int) -> None:
    axes = {**attn_axes(kernel, vlen or 0, lanes or 0), "model": "tinyllama-1.1b",
            "uarch": uarch, "vlen": vlen, "lanes": lanes, "timing_model": tm, "n": 64}
    write_run(root, rid, axes, stats=synth.roi_stats_text(cycles, cycles),
              result=attn_result(kernel, vlen or 0))


def test_headlines_from_cycles(tmp_path: Path) -> None:
    _run(tmp_path, "s", "ggml-scalar", "paper-fixed", None, None, None, 24000)
    _run(tmp_path, "v512", "ggml-vec", "paper-fixed", 512, None, "fixed", 4000)
    _run(tmp_path, "f512", "fa-v", "paper-fixed", 512, None, "fixed", 1000)
    _run(tmp_path, "f8k", "fa-v", "paper-fixed", 8192, None, "fixed", 400)
    _run(tmp_path, "l512", "fa-v", "vitruvius-plus", 512, 64, "lanes", 900)
    _run(tmp_path, "l4k", "fa-v", "vitruvius-plus", 4096, 64, "lanes", 300)
    t = paper_comparison(collect(tmp_path, use_cache=False).df)
    got = {(r["headline"], r["point"].split(",")[0]): r["ours"] for r in t.to_dict("records")}
    assert got[("prefill: FA-V vs ggml-scalar", "paper-fixed")] == pytest.approx(24.0)
    assert got[("prefill: FA-V vs ggml-vec", "paper-fixed")] == pytest.approx(4.0)
    assert got[("prefill: FA-V 512 -> 8192 bit, constant latency", "paper-fixed")] == \
        pytest.approx(2.5)
    assert got[("prefill: FA-V 512 -> 4096 bit, 64 lanes", "our lanes model")] == \
        pytest.approx(3.0)
    assert t["ours"].notna().all()  # rows without a measurement are left out
    assert set(t["paper"]) >= {"24x", "3x"}
    tg = targets_table(t).set_index("target")
    prefill = tg.loc["prefill: FA-V vs ggml-vec >= 5 (tinyllama-1.1b)"]
    assert prefill["measured"] == pytest.approx(4.0) and prefill["met"] == "no"
    lanes = tg.loc["prefill: FA-V 512 -> 4096 bit, 64 lanes >= 2.5"]
    assert lanes["measured"] == pytest.approx(3.0) and lanes["met"] == "yes"
    q8 = tg.loc["Q8_0 q8-split: packing + reduction of ROI cycles <= 10"]
    assert q8["met"] == "" and q8["point"] == "not measured yet"


def _prec_run(root: Path, rid: str, kernel: str, vlen: int | None, precision: str,
              cycles: int) -> None:
    axes = {**attn_axes(kernel, vlen or 0, 0), "model": "tinyllama-1.1b",
            "uarch": "paper-fixed", "vlen": vlen, "lanes": None,
            "timing_model": "fixed" if vlen else None, "n": 64, "precision": precision}
    write_run(root, rid, axes, stats=synth.roi_stats_text(cycles, cycles),
              result=attn_result(kernel, vlen or 0))


def test_fp16_headlines_and_fp32_ones_unmixed(tmp_path: Path) -> None:
    """fp16 beside fp32 in one sweep: the fp16 rows divide fp32 by fp16 cycles of fa-v at
    the same point, and the fp32 headlines still find exactly one run each (before, two
    precisions at a point left them empty)."""
    _prec_run(tmp_path, "s", "ggml-scalar", None, "fp32", 28000)
    _prec_run(tmp_path, "v32", "ggml-vec", 512, "fp32", 4000)
    _prec_run(tmp_path, "v16", "ggml-vec", 512, "fp16", 3000)
    for vlen, c32, c16 in ((512, 1100, 1000), (8192, 400, 200)):
        _prec_run(tmp_path, f"f32-{vlen}", "fa-v", vlen, "fp32", c32)
        _prec_run(tmp_path, f"f16-{vlen}", "fa-v", vlen, "fp16", c16)
    t = paper_comparison(collect(tmp_path, use_cache=False).df)
    got = {r["headline"]: (r["ours"], r["paper"]) for r in t.to_dict("records")}
    assert got["prefill: FA-V fp16 vs fp32, 512 bit"] == (pytest.approx(1.1), "1.11x")
    assert got["prefill: FA-V fp16 vs fp32, 8192 bit"] == (pytest.approx(2.0), "about 2x")
    assert got["prefill: FA-V fp16 vs ggml-scalar"][0] == pytest.approx(28.0)
    assert got["prefill: FA-V vs ggml-scalar"][0] == pytest.approx(28000 / 1100, abs=0.01)
    assert got["prefill: FA-V vs ggml-vec"][0] == pytest.approx(4000 / 1100, abs=0.01)
    assert not any(h.startswith("decode") for h in got)  # no decode runs


def test_figures_split_by_precision(tmp_path: Path) -> None:
    """Two precisions in one sweep: each figure once per precision, none mixing them."""
    from analysis.plots import make_all

    _prec_run(tmp_path, "s", "ggml-scalar", None, "fp32", 28000)
    _prec_run(tmp_path, "s16", "ggml-scalar", None, "fp16", 20000)
    for vlen, c32, c16 in ((512, 1100, 1000), (8192, 400, 200)):
        _prec_run(tmp_path, f"f32-{vlen}", "fa-v", vlen, "fp32", c32)
        _prec_run(tmp_path, f"f16-{vlen}", "fa-v", vlen, "fp16", c16)
    made, _ = make_all(collect(tmp_path, use_cache=False).df, tmp_path / "fig")
    assert "speedup_vs_vlen" in made and "speedup_vs_vlen_fp16" in made
    assert all(p.parent.name == "fp16" for p in made["speedup_vs_vlen_fp16"])
    assert all(p.parent.name == "fig" for p in made["speedup_vs_vlen"])
