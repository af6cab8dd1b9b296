"""The BPI-F3 table: FA-V at VLEN 256 against its baselines on the same uarch, with the
paper's hardware ratio beside each."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import synth
from analysis.collect import collect
from analysis.tables import all_tables
from analysis.tests.synthetic_sweep import attn_axes, attn_result, write_run


def _run(root: Path, rid: str, kernel: str, uarch: str, phase: str, cycles: int,
         vlen: int | None = 256, lanes: int | None = 2) -> None:
    axes = {**attn_axes(kernel, vlen or 0, lanes or 0, phase), "uarch": uarch,
            "vlen": vlen, "lanes": lanes, "n": 128 if phase == "prefill" else None,
            "l": 512 if phase == "decode" else None}
    write_run(root, rid, axes, stats=synth.roi_stats_text(cycles, cycles),
              result=attn_result(kernel, vlen or 0))


def test_ratios_on_the_same_uarch(tmp_path: Path) -> None:
    for uarch, scale in (("spacemit-x60", 1), ("spacemit-x60-1issue", 2)):
        _run(tmp_path, f"s-{uarch}", "ggml-scalar", uarch, "prefill", 12000 * scale, None, None)
        _run(tmp_path, f"v-{uarch}", "ggml-vec", uarch, "prefill", 3700 * scale)
        _run(tmp_path, f"f-{uarch}", "fa-v", uarch, "prefill", 1000 * scale // 2)
    _run(tmp_path, "sd", "ggml-scalar", "spacemit-x60", "decode", 900, None, None)
    _run(tmp_path, "fd", "fa-v", "spacemit-x60", "decode", 200)  # no ggml-vec decode run
    _run(tmp_path, "f512", "fa-v", "spacemit-x60", "prefill", 10, vlen=512)  # not 256 bit
    t = all_tables(collect(tmp_path, use_cache=False).df)["hardware_comparison"]
    got = {(r["uarch"], r["phase"], r["versus"]): (r["ours"], r["paper"], r["size"])
           for r in t.to_dict("records")}
    assert got == {
        ("spacemit-x60", "prefill", "ggml-scalar"): (pytest.approx(24.0), "12x", 128),
        ("spacemit-x60", "prefill", "ggml-vec"): (pytest.approx(7.4), "3.7x", 128),
        ("spacemit-x60-1issue", "prefill", "ggml-scalar"): (pytest.approx(24.0), "12x", 128),
        ("spacemit-x60-1issue", "prefill", "ggml-vec"): (pytest.approx(7.4), "3.7x", 128),
        ("spacemit-x60", "decode", "ggml-scalar"): (pytest.approx(4.5), "4-5x", 512),
    }
    assert set(t["lanes"]) == {2}


def test_empty_without_vlen_256(tmp_path: Path) -> None:
    _run(tmp_path, "s", "ggml-scalar", "paper-fixed", "prefill", 100, None, None)
    _run(tmp_path, "f", "fa-v", "paper-fixed", "prefill", 10, vlen=512)
    assert all_tables(collect(tmp_path, use_cache=False).df)["hardware_comparison"].empty


README = Path(__file__).resolve().parents[2] / "results" / "reference-bpi-f3" / "README.md"


def test_bpi_f3_document_renders_from_a_sweep_of_its_shape(tmp_path: Path) -> None:
    """The skeleton's table blocks fill from a sweep shaped like sweeps/bpi-f3.yaml (so that
    `python -m analysis doc` works on the real archive), and the placeholders go."""
    import json

    from analysis.doc import refresh

    points = []
    for uarch, lanes, f in (("spacemit-x60", 2, 1000), ("spacemit-x60", 1, 1500),
                            ("spacemit-x60-1issue", 2, 1800), ("paper-fixed", None, 700)):
        for phase in ("prefill", "decode"):
            tag = f"{uarch}-{lanes}-{phase}"
            _run(tmp_path, f"s-{tag}", "ggml-scalar", uarch, phase, 12000, None, None)
            _run(tmp_path, f"v-{tag}", "ggml-vec", uarch, phase, 3700, lanes=lanes)
            _run(tmp_path, f"f-{tag}", "fa-v", uarch, phase, f, lanes=lanes)
            points += [{"axes": {"uarch": uarch}, "run": f"{k}-{tag}"} for k in "svf"]
    (tmp_path / "points.json").write_text(json.dumps(points))
    text = refresh(README.read_text(), all_tables(collect(tmp_path, use_cache=False).df),
                   str(README))
    assert "(sweep pending)" not in text
    assert "| tinyllama-1.1b | prefill | 128 | ggml-scalar | 12x | 12 |" in text
    assert "| spacemit-x60 | 1 | prefill | 8 | 2.47 |" in text
    assert "| paper-fixed | - | decode | 17.1 | 5.29 |" in text
