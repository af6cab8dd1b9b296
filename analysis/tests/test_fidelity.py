"""Our ports against ggml's own kernels: the fidelity table, FA-V vs current ggml (the
vs_ggml table, the paper comparison, the speedup table) and the report showing them, on a
synthetic sweep whose ratios are computed by hand."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from analysis import compare, fidelity, speedup, synth
from analysis.collect import collect
from analysis.report import make_report
from analysis.tests.synthetic_sweep import attn_axes, attn_result, write_run
from analysis.tests.test_outputs import CHROMIUM, CHROMIUM_FLAGS
from workloads.kernels import KERNELS, ports

MODEL = "tinyllama-1.1b"


def _attn(root: Path, rid: str, kernel: str, vlen: int | None, cycles: int,
          mix: dict[str, int] | None = None, path: str | None = None) -> None:
    axes = {**attn_axes(kernel, vlen or 0, 0), "uarch": "paper-fixed", "vlen": vlen,
            "lanes": None, "timing_model": "fixed" if vlen else None}
    mix = mix or {"IntAlu": cycles}
    result = {**attn_result(kernel, vlen or 0), **({"ggml_path": path} if path else {})}
    write_run(root, rid, axes, result=result, stats=synth.roi_stats_text(
        cycles, sum(mix.values()), inst_type=mix, filler=False))


def _q8(root: Path, rid: str, kernel: str, cycles: int, fp16: str | None) -> None:
    axes = {"uarch": "paper-fixed", "vlen": 512, "lanes": None, "timing_model": "fixed",
            "kernel": kernel, "model": MODEL, "proj": "up", "max_rows": 64, "fp16": fp16}
    write_run(root, rid, axes, stats=synth.roi_stats_text(cycles, cycles, filler=False),
              result={"workload": "q8", "kernel": kernel, "rows": 64, "cols": 2048,
                      "pass": True, "max_abs_err": 0.0, "max_rel_err": 0.0})


def build(root: Path) -> Path:
    """ggml-vec vs ggml's one-row kernel at 512 bit (ggml: 1.5x cycles, 1100/600 scalar ops,
    the same vector work) and 2048 bit (within 10%), the scalar pair (1.2x cycles), Q8_0
    (2.5%), and FA-V beside ggml-scalar, ggml-vec and current ggml (which ran tiled)."""
    _attn(root, "vec-512", "ggml-vec", 512, 1000,
          {"IntAlu": 600, "SimdFloatMultAcc": 300, "SimdConfig": 100})
    _attn(root, "onerow-512", "ggml-lib-vec-onerow", 512, 1500,
          {"IntAlu": 1100, "SimdFloatMultAcc": 300, "SimdConfig": 100}, "one-row")
    _attn(root, "vec-2048", "ggml-vec", 2048, 1000,
          {"IntAlu": 600, "SimdFloatMultAcc": 300, "SimdConfig": 100})
    _attn(root, "onerow-2048", "ggml-lib-vec-onerow", 2048, 1050,
          {"IntAlu": 630, "SimdFloatMultAcc": 310, "SimdConfig": 105}, "one-row")
    _attn(root, "scalar", "ggml-scalar", None, 10_000)
    _attn(root, "lib-scalar", "ggml-lib-scalar-onerow", None, 12_000, path="one-row")
    _attn(root, "lib-512", "ggml-lib-vec", 512, 600, path="tiled")
    _attn(root, "fav-512", "fa-v", 512, 100)
    _attn(root, "fav-2048", "fa-v", 2048, 50)
    _q8(root, "q8-table", "q8-ggml", 200, "table")
    _q8(root, "q8-lib", "q8-ggml-lib", 205, None)
    return root


@pytest.fixture
def ggml_sweep(tmp_path: Path) -> Path:
    return build(tmp_path / "results" / "ggml")


def test_fidelity_pairs_each_port_with_the_ggml_kernel_it_ports(ggml_sweep: Path) -> None:
    t = fidelity.fidelity_table(collect(ggml_sweep, use_cache=False).df)
    got = {(r["port"], r["vlen"] if r["vlen"] == r["vlen"] else None): r
           for r in t.to_dict("records")}
    assert set(got) == {("ggml-vec", 512), ("ggml-vec", 2048), ("ggml-scalar", None),
                        ("q8-ggml", 512)}
    v = got[("ggml-vec", 512)]
    assert (v["ggml"], v["ggml_path"]) == ("ggml-lib-vec-onerow", "one-row")
    assert (v["cycles_port"], v["cycles_ggml"], v["cycles_ratio"]) == (1000, 1500, 1.5)
    assert (v["scalar_ops_port"], v["scalar_ops_ggml"]) == (600, 1100)
    assert v["scalar_ops_ratio"] == pytest.approx(1100 / 600)
    assert (v["vector_uops_ratio"], v["vsetvl_ratio"]) == (1.0, 1.0)
    assert v["over_10pct"] == "cycles, scalar_ops"
    assert v["reason"] == fidelity.REASONS[("ggml-vec", "ggml-lib-vec-onerow")]
    w = got[("ggml-vec", 2048)]
    assert w["cycles_ratio"] == pytest.approx(1.05) and w["over_10pct"] == w["reason"] == ""
    s = got[("ggml-scalar", None)]
    assert s["ggml"] == "ggml-lib-scalar-onerow" and s["cycles_ratio"] == pytest.approx(1.2)
    assert s["over_10pct"] == "cycles, scalar_ops" and s["reason"]
    assert s["vsetvl_port"] == 0 and s["vsetvl_ratio"] != s["vsetvl_ratio"]  # 0 / 0: NaN
    q = got[("q8-ggml", 512)]
    assert q["ggml"] == "q8-ggml-lib" and q["fp16"] == "table"
    assert q["cycles_ratio"] == pytest.approx(1.025) and q["reason"] == ""


def test_a_difference_without_a_reason_says_so(ggml_sweep: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fidelity, "REASONS", {})
    t = fidelity.fidelity_table(collect(ggml_sweep, use_cache=False).df)
    assert set(t.loc[t["over_10pct"] != "", "reason"]) == {fidelity.NOT_EXPLAINED}
    assert set(t.loc[t["over_10pct"] == "", "reason"]) == {""}


def test_reasons_name_registered_pairs() -> None:
    pairs = {(p, g) for g, p in ports().items()}
    assert set(fidelity.REASONS) <= pairs
    assert all(KERNELS[g].ggml_path and KERNELS[p].ggml_path is None for p, g in pairs)


def test_fa_v_vs_current_ggml(ggml_sweep: Path) -> None:
    df = collect(ggml_sweep, use_cache=False).df
    t = fidelity.vs_ggml_table(df)
    assert len(t) == 1  # fa-v at 2048 bit has no current-ggml run at its point
    r = t.iloc[0]
    assert (r["vlen"], r["fa-v cycles"]) == (512, 100)
    assert (r["vs ggml-scalar"], r["vs ggml-vec"], r["vs current ggml"]) == (100, 10, 6)
    assert r["current ggml path"] == "tiled"
    sp = speedup.speedup_table(df).set_index("id")
    assert sp.loc["fav-512", "speedup_vs_ggml-lib-vec"] == pytest.approx(6.0)
    assert sp.loc["fav-2048", "speedup_vs_ggml-vec"] == pytest.approx(20.0)
    pc = compare.paper_comparison(df)
    cur = pc[pc["headline"] == "prefill: FA-V vs current ggml"].iloc[0]
    assert cur["ours"] == 6.0 and cur["paper"] == "-"
    assert cur["point"].endswith("ggml-lib-vec ran tiled")
    assert (pc["headline"] == "prefill: FA-V vs ggml-vec").sum() == 1


def test_no_ggml_runs_no_rows(tmp_path: Path) -> None:
    root = tmp_path / "r"
    _attn(root, "vec", "ggml-vec", 512, 1000)
    _attn(root, "fav", "fa-v", 512, 100)
    df = collect(root, use_cache=False).df
    assert fidelity.fidelity_table(df).empty and fidelity.vs_ggml_table(df).empty
    assert not compare.paper_comparison(df)["headline"].str.contains("current").any()


def _section(html: str, title_start: str) -> str:
    s = html[html.index(f"<h2>{title_start}"):]
    return s[:s.index("</table>")]


def test_report_shows_the_ggml_tables(ggml_sweep: Path) -> None:
    html = make_report(ggml_sweep).path.read_text()
    fid = _section(html, "Our ports vs ggml")
    assert "<th>reason</th>" in fid and "<td>ggml-lib-vec-onerow</td>" in fid
    assert "glibc expf" in fid
    vs = _section(html, "FA-V vs ggml")
    assert "<th>vs current ggml</th>" in vs and "<td>tiled</td>" in vs
    assert "<th>speedup_vs_ggml-lib-vec</th>" in _section(html, "Speedup vs ggml-scalar, ")
    assert "prefill: FA-V vs current ggml" in _section(html, "The paper")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_ggml_tables_render_in_headless_chromium(ggml_sweep: Path) -> None:
    out = make_report(ggml_sweep).path
    with tempfile.TemporaryDirectory() as prof:
        dom = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={prof}",
                              "--virtual-time-budget=3000", "--dump-dom", out.as_uri()],
                             capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-500:]
    heads = re.findall(r"<h2>([^<]*)</h2>", dom.stdout)
    assert any(h.startswith("Our ports vs ggml") for h in heads), heads
    assert any(h.startswith("FA-V vs ggml") for h in heads), heads
    assert "current ggml path" in dom.stdout and "glibc expf" in dom.stdout
