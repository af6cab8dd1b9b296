"""A decoder layer's runs: one stats dump per sublayer read as the layer's sublayers, summed
into the run's cycles, kept through compaction, and the layer tables and figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import synth
from analysis.collect import collect
from analysis.compact import compact
from analysis.layer import SUBLAYERS
from analysis.plots import layer_breakdown
from analysis.tables import all_tables
from analysis.tests.synthetic_sweep import write_run

MODEL = "tinyllama-1.1b"  # 22 layers
PYTHIA = "pythia-410m"  # 24 layers, a GPT-NeoX block
NEOX_SUBLAYERS = [("ffn_up" if s == "ffn_up_gate" else s) for s in SUBLAYERS]


def _axes(kernel: str, attn: str, linear: str, vlen: int | None) -> dict[str, Any]:
    return {"uarch": "paper-fixed", "vlen": vlen, "lanes": 8 if vlen else None,
            "kernel": kernel, "model": MODEL, "phase": "decode", "l": 512,
            "attn": attn if kernel == "layer" else None,
            "linear": linear if kernel == "layer" else None}


def _layer_run(root: Path, rid: str, cycles: list[int], kernel: str = "layer",
               attn: str = "ggml-vec", linear: str = "q8-ggml", vlen: int | None = 512,
               exit_dump: bool = True, model: str = MODEL) -> Path:
    """A layer run: one dump per sublayer (cycles[i] for sublayer i), then gem5's exit dump;
    Pythia's as the workload reports a GPT-NeoX block (its up projection is `ffn_up`)."""
    blocks = [synth.dump_lines(c, c // 2, seed=i) for i, c in enumerate(cycles)]
    if exit_dump:
        blocks.append(synth.dump_lines(sum(cycles) * 3, sum(cycles)))
    result = {"pass": True, "workload": "layer", "sublayers": list(SUBLAYERS),
              "hidden": 2048, "intermediate": 5632, "heads": 32, "kv_heads": 4,
              "head_dim": 64}
    if model == PYTHIA:
        result.update(sublayers=NEOX_SUBLAYERS, arch="gptneox", hidden=1024,
                      intermediate=4096, heads=16, kv_heads=16)
    return write_run(root, rid, {**_axes(kernel, attn, linear, vlen), "model": model},
                     stats=synth.stats_text(blocks), result=result)


#: sublayer cycles of llama.cpp's choice: attention 1000, linear 100+200+400+300
BASE = [10, 100, 20, 1000, 200, 10, 400, 30, 300]
FAV = [10, 100, 20, 250, 200, 10, 400, 30, 300]


def test_sublayers_sum_to_the_layer_and_keep_their_own_columns(tmp_path: Path) -> None:
    _layer_run(tmp_path, "base", BASE)
    row = collect(tmp_path, use_cache=False).df.iloc[0]
    assert row["usable"] and row["analysis_error"] == ""
    assert row["cycles"] == sum(BASE)
    assert row["insts"] == sum(c // 2 for c in BASE)
    assert [row[f"sub_{s}_cycles"] for s in SUBLAYERS] == BASE
    # FLOPs of the layer: 2 per Q8_0 weight, and attention's 4 x heads x D x L
    weights = 2048 * 2048 * 2 + 2 * 2048 * 256 + 3 * 2048 * 5632
    assert row["flops"] == 2 * weights + 4 * 32 * 64 * 512


def test_summary_shares_tokens_per_second_and_speedup(tmp_path: Path) -> None:
    _layer_run(tmp_path, "base", BASE)
    _layer_run(tmp_path, "fav", FAV, attn="fa-v")
    _layer_run(tmp_path, "fav-split", [c // 2 if i in (1, 4, 6, 8) else c
                                       for i, c in enumerate(FAV)], attn="fa-v",
               linear="q8-split")
    _layer_run(tmp_path, "scalar", [c * 10 for c in BASE], kernel="layer-scalar", vlen=None)
    t = all_tables(collect(tmp_path, use_cache=False).df)["layer_summary"]
    got = {(r["kernel"], r["attn"], r["linear"]): r for r in t.to_dict("records")}
    base = got[("layer", "ggml-vec", "q8-ggml")]
    assert base["layer_cycles"] == 2070
    assert base["attention_pct"] == pytest.approx(48.3)
    assert base["linear_pct"] == pytest.approx(48.3)
    assert base["other_pct"] == pytest.approx(3.4)
    assert base["tokens_per_s"] == pytest.approx(round(2e9 / (22 * 2070), 2))
    assert base["vs_llama_cpp"] == 1.0
    assert got[("layer", "fa-v", "q8-ggml")]["vs_llama_cpp"] == pytest.approx(2070 / 1320,
                                                                             abs=1e-3)
    assert got[("layer", "fa-v", "q8-split")]["linear_pct"] == pytest.approx(
        100 * 500 / 820, abs=0.05)
    scalar = t[t["kernel"] == "layer-scalar"].iloc[0]
    assert scalar["layer_cycles"] == 20700 and scalar["vs_llama_cpp"] != scalar["vs_llama_cpp"]
    subs = all_tables(collect(tmp_path, use_cache=False).df)["layer_sublayers"]
    assert list(subs.columns[-10:]) == [*SUBLAYERS, "layer"]


def test_a_missing_sublayer_dump_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """Eight dumps and gem5's exit dump for nine sublayers: the last sublayer's dump is
    gem5's exit dump only if counted wrong, so the run is unusable, with a reason."""
    _layer_run(tmp_path, "short", BASE[:7], exit_dump=True)
    row = collect(tmp_path, use_cache=False).df.iloc[0]
    assert not row["usable"]
    assert "9 regions" in row["analysis_error"] and "stats.txt" in row["analysis_error"]
    assert all_tables(collect(tmp_path, use_cache=False).df)["layer_summary"].empty


def test_compaction_keeps_every_sublayer(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _layer_run(src, "base", BASE)
    _layer_run(src, "fav", FAV, attn="fa-v")
    assert compact(src, dst).problems == []
    df = collect(dst, use_cache=False).df.sort_values("id")
    assert [int(df.iloc[0][f"sub_{s}_cycles"]) for s in SUBLAYERS] == BASE
    assert [int(df.iloc[1][f"sub_{s}_cycles"]) for s in SUBLAYERS] == FAV
    assert df["usable"].all()


def test_breakdown_figure(tmp_path: Path) -> None:
    _layer_run(tmp_path, "base", BASE)
    _layer_run(tmp_path, "fav", FAV, attn="fa-v", vlen=2048)
    paths = layer_breakdown(collect(tmp_path, use_cache=False).df, tmp_path / "fig")
    assert [p.name for p in paths] == ["layer_breakdown.png", "layer_breakdown.pdf"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_report_figures_include_the_breakdown_only_with_layer_runs(tmp_path: Path) -> None:
    from analysis.plots import make_all

    _layer_run(tmp_path, "base", BASE)
    made, notes = make_all(collect(tmp_path, use_cache=False).df, tmp_path / "fig")
    assert "layer_breakdown" in made
    assert not any("layer" in n for n in notes)


def test_gem5_exit_dump_is_never_read_as_the_last_sublayer(tmp_path: Path) -> None:
    """Eight sublayer dumps and gem5's exit dump make nine dumps for nine sublayers: counted
    naively the exit dump would pass as ffn_down. A whole stats.txt must have the exit dump
    after the region, so the run is unusable and says why."""
    _layer_run(tmp_path, "eight", BASE[:8], exit_dump=True)
    row = collect(tmp_path, use_cache=False).df.iloc[0]
    assert not row["usable"]
    assert "9 regions" in row["analysis_error"] and "exit dump" in row["analysis_error"]
    src, dst = tmp_path, tmp_path / "kept"
    assert compact(src, dst).problems and "exit dump" in compact(src, dst).problems[0]


def test_gptneox_up_projection_is_the_ffn_up_gate_slot(tmp_path: Path) -> None:
    """Pythia's run names its sixth region ffn_up (no gate): the tables keep it in the
    ffn_up_gate column, among the linear layers; its FLOPs count two FFN matrices"""
    _layer_run(tmp_path, "base", BASE)
    _layer_run(tmp_path, "neox", BASE, model=PYTHIA)
    df = collect(tmp_path, use_cache=False).df
    row = df[df["model"] == PYTHIA].iloc[0]
    assert row["usable"] and row["sub_ffn_up_cycles"] == 400
    weights = 1024 * 1024 * 2 + 2 * 1024 * 1024 + 2 * 1024 * 4096
    assert row["flops"] == 2 * weights + 4 * 16 * 64 * 512
    tables = all_tables(df)
    subs = tables["layer_sublayers"].set_index("model")
    assert list(subs.loc[PYTHIA, list(SUBLAYERS)]) == list(subs.loc[MODEL, list(SUBLAYERS)])
    summary = tables["layer_summary"].set_index("model")
    assert summary.loc[PYTHIA, "linear_pct"] == summary.loc[MODEL, "linear_pct"]
    assert summary.loc[PYTHIA, "model_layers"] == 24


def test_precision_and_lanes_keep_their_own_baseline(tmp_path: Path) -> None:
    """fp16 runs (layer-fp16) compare with fp16 llama.cpp, lanes-model runs with the same
    uarch and lane count; a run recorded without a precision is fp32."""
    _layer_run(tmp_path, "base", BASE)
    _layer_run(tmp_path, "fav", FAV, attn="fa-v")
    half = [c // 2 for c in BASE]
    for rid, cycles, attn in (("base16", BASE, "ggml-vec"), ("fav16", half, "fa-v")):
        axes = {**_axes("layer", attn, "q8-ggml", 512), "precision": "fp16"}
        blocks = [synth.dump_lines(c, c // 2, seed=i) for i, c in enumerate(cycles)]
        blocks.append(synth.dump_lines(sum(cycles) * 3, sum(cycles)))
        write_run(tmp_path, rid, axes, stats=synth.stats_text(blocks),
                  result={"pass": True, "workload": "layer", "sublayers": list(SUBLAYERS),
                          "precision": "fp16"})
    for lanes, scale in ((8, 4), (64, 1)):
        for attn, cycles in (("ggml-vec", BASE), ("fa-v", FAV)):
            axes = {**_axes("layer", attn, "q8-ggml", 4096), "uarch": "vitruvius-plus",
                    "lanes": lanes}
            blocks = [synth.dump_lines(c * scale, c, seed=i) for i, c in enumerate(cycles)]
            blocks.append(synth.dump_lines(sum(cycles) * 9, sum(cycles)))
            write_run(tmp_path, f"{attn}-{lanes}", axes, stats=synth.stats_text(blocks),
                      result={"pass": True, "workload": "layer",
                              "sublayers": list(SUBLAYERS)})
    t = all_tables(collect(tmp_path, use_cache=False).df)["layer_summary"]
    got = {(r["precision"], r["uarch"], r["lanes"], r["attn"]): r["vs_llama_cpp"]
           for r in t.to_dict("records")}
    assert got[("fp32", "paper-fixed", 8, "fa-v")] == pytest.approx(2070 / 1320, abs=1e-3)
    assert got[("fp16", "paper-fixed", 8, "fa-v")] == pytest.approx(2070 / 1035, abs=1e-3)
    for lanes in (8, 64):
        assert got[("fp32", "vitruvius-plus", lanes, "fa-v")] == pytest.approx(2070 / 1320,
                                                                               abs=1e-3)
    paths = layer_breakdown(collect(tmp_path, use_cache=False).df, tmp_path / "fig")
    assert paths and all(p.stat().st_size > 1000 for p in paths)


def test_breakdown_bars_group_by_lanes_and_name_the_kept_k(tmp_path: Path) -> None:
    from analysis.plots import _layer_bars

    rows = [{"variant": "ggml-vec / q8-ggml", "vlen": 4096, "lanes": la} for la in (64, 8)]
    rows += [{"variant": "fa-v / q8-split / K^T", "vlen": 512, "lanes": 8},
             {"variant": "scalar", "vlen": None, "lanes": None}]
    labels = [lab for _, lab, _ in _layer_bars(pd.DataFrame(rows))]
    assert labels == ["scalar", "512 bit x 8 lanes: fa-v / q8-split / K^T",
                      "4096 bit x 8 lanes: ggml-vec / q8-ggml",
                      "4096 bit x 64 lanes: ggml-vec / q8-ggml"]
    one = [lab for _, lab, _ in _layer_bars(pd.DataFrame(rows[2:]))]
    assert one == ["scalar", "512 bit: fa-v / q8-split / K^T"]
