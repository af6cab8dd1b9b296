"""Tables in three formats, figures, and the HTML report rendered in headless Chromium."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from analysis import cycles, formatting, plots, speedup, tables
from analysis.collect import collect
from analysis.report import make_report

CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(c)), None)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def test_markdown_and_latex_format() -> None:
    t = pd.DataFrame({"kernel": ["fa-v", "ggml_vec"], "vlen": [512, 1024],
                      "speedup": [24.123456, float("nan")]})
    md = formatting.to_markdown(t).splitlines()
    assert md[0] == "| kernel | vlen | speedup |"
    assert md[1] == "|---|---|---|"
    assert md[2] == "| fa-v | 512 | 24.1 |"
    assert md[3] == "| ggml_vec | 1024 |  |"
    tex = formatting.to_latex(t)
    assert tex.startswith("\\begin{tabular}{lrr}")
    assert "ggml\\_vec & 1024 &  \\\\" in tex
    assert "\\toprule" in tex and tex.rstrip().endswith("\\end{tabular}")
    assert formatting.to_markdown(pd.DataFrame()) == "_no data_\n"


def test_tables_written_in_three_formats(sweep: Path, tmp_path: Path) -> None:
    df = collect(sweep).df
    paths = tables.write_all(df, tmp_path / "t")
    assert len(paths) == 57  # 19 tables x (csv, md, tex)
    sp = pd.read_csv(tmp_path / "t" / "speedup.csv")
    row = sp[sp["id"] == "fav-1024-16"].iloc[0]
    assert row["speedup_vs_ggml-scalar"] == pytest.approx(40.0)
    md = (tmp_path / "t" / "speedup.md").read_text()
    assert "| fav-1024-16 | 40 | 8 |" in md
    summ = pd.read_csv(tmp_path / "t" / "speedup_summary.csv").set_index(["vlen", "lanes"])
    assert summ.loc[(1024, 16), "fa-v vs ggml-scalar"] == pytest.approx(40.0)
    assert summ.loc[(1024, 8), "ggml-vec vs ggml-scalar"] == pytest.approx(100 / 19)
    tex = (tmp_path / "t" / "q8_breakdown.tex").read_text()
    assert "q8-packed" in tex and "busyCycles" in tex


def test_plots_written(sweep: Path, tmp_path: Path) -> None:
    made, notes = plots.make_all(collect(sweep).df, tmp_path / "f")
    assert notes == []
    assert set(made) == set(plots.FIGURES) - plots.OPTIONAL
    for paths in made.values():
        exts = {p.suffix for p in paths}
        assert exts == {".png", ".pdf"}
        for p in paths:
            assert p.stat().st_size > 1000
            head = p.read_bytes()[:8]
            assert head.startswith(b"\x89PNG") if p.suffix == ".png" else head.startswith(
                b"%PDF")


def test_plots_skip_without_data(tmp_path: Path) -> None:
    df = pd.DataFrame({"id": ["a"], "status": ["gem5-error"], "usable": [False]})
    made, notes = plots.make_all(df, tmp_path / "f")
    assert made == {} and len(notes) == len(plots.FIGURES) - len(plots.OPTIONAL)
    assert all("no data" in n or "no " in n for n in notes)


def test_report_self_contained(sweep: Path) -> None:
    rep = make_report(sweep)
    html = rep.path.read_text()
    assert not rep.warnings
    assert "ok 12 of 14 runs found, 1 corrupt: fav-4096-16, 1 failed: fav-2048-8" in html
    assert "<h2>Run status</h2>" in html and "gem5-error" in html
    assert "panic: unknown instruction" in html
    assert "Provenance" in html and "not recorded" in html
    assert "src='http" not in html and 'src="http' not in html
    imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(imgs) == len(plots.FIGURES) - len(plots.OPTIONAL)  # one PNG per figure
    for b in imgs:
        assert base64.b64decode(b).startswith(b"\x89PNG")
    assert "data-figure='vl_fill'" in html
    fill = html[html.index("<h2>Vector fill"):]
    fill = fill[:fill.index("</table>")]
    assert "<th>fill_pct</th>" in fill and "<td>75</td>" in fill  # fa-v at 1024 bits


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium;"
                                             " listed in make setup)")
def test_report_renders_in_headless_chromium(sweep: Path, tmp_path: Path) -> None:
    out = make_report(sweep).path
    html = out.read_text()
    # Count the images that decoded (naturalWidth > 0) once the page has loaded.
    probe = ("<script>window.addEventListener('load',function(){var n=0,t=0;"
             "document.querySelectorAll('img').forEach(function(i){t++;"
             "if(i.complete&&i.naturalWidth>0)n++;});"
             "document.body.setAttribute('data-imgs-ok',n+'/'+t);});</script>")
    probed = tmp_path / "probe.html"
    probed.write_text(html.replace("</body>", probe + "</body>"))
    shot = tmp_path / "report.png"
    with tempfile.TemporaryDirectory() as prof:
        base = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={prof}"]
        dom = subprocess.run([*base, "--virtual-time-budget=5000", "--dump-dom",
                              probed.as_uri()], capture_output=True, text=True, timeout=120)
        assert dom.returncode == 0, dom.stderr[-500:]
        m = re.search(r'data-imgs-ok="(\d+)/(\d+)"', dom.stdout)
        assert m, "probe script did not run"
        assert m.group(1) == m.group(2) == str(len(plots.FIGURES) - len(plots.OPTIONAL))
        subprocess.run([*base, f"--screenshot={shot}", "--window-size=1200,3000",
                        out.as_uri()], capture_output=True, timeout=120, check=True)
    assert shot.exists() and shot.read_bytes().startswith(b"\x89PNG")
    assert shot.stat().st_size > 20_000  # a blank page is a few kB


def test_planner_shaped_grid(tmp_path: Path) -> None:
    """Axes as the sweep planner writes them (null for ignored axes), fixed and lanes timing
    models, prefill and decode, two models: every figure is drawn, speedups match."""
    from analysis import synth
    from analysis.tests.synthetic_sweep import write_run

    names = ("uarch", "vlen", "lanes", "timing_model", "kernel", "precision", "model",
             "phase", "n", "l", "proj", "seed")
    root = tmp_path / "results" / "grid"

    def axes(**kw: object) -> dict[str, object]:
        return {**dict.fromkeys(names), **kw}

    i = 0
    for model in ("tinyllama-1.1b", "qwen2.5-3b"):
        for phase, shape in (("prefill", {"n": 16}), ("decode", {"l": 64})):
            common = {"uarch": "vp", "precision": "fp32", "model": model, "phase": phase,
                      "seed": 1, **shape}
            write_run(root, f"s{i}", axes(kernel="ggml-scalar", **common),
                      stats=synth.roi_stats_text(8_000_000, 10, filler=False))
            i += 1
            for tm, lane_set in (("lanes", (8, 16)), ("fixed", (None,))):
                for v in (512, 1024, 2048):
                    for la in lane_set:
                        for k, c in (("ggml-vec", 1_000_000), ("fa-v", 400_000 * 512 // v)):
                            # 16 active fp32 elements per micro-op at every VLEN
                            vt = synth.vec_timing_stats(
                                {"SimdFloatMultAcc": 10, "SimdStridedLoad": 30},
                                {"SimdFloatMultAcc": 160, "SimdStridedLoad": 30},
                                busyCycles={"SimdFloatMultAcc": c // 2},
                                laneUtilization=0.5)
                            write_run(root, f"r{i}", axes(kernel=k, vlen=v, lanes=la,
                                                          timing_model=tm, **common),
                                      stats=synth.roi_stats_text(c, 10, filler=False,
                                                                 vec_timing=vt))
                            i += 1
    df = collect(root).df
    assert df["usable"].all()
    sp = speedup.speedup_table(df)
    fixed = sp[(sp["timing_model"] == "fixed") & (sp["kernel"] == "fa-v")]
    assert len(fixed) == 12 and fixed["lanes"].isna().all()
    r = fixed[(fixed["vlen"] == 2048) & (fixed["model"] == "qwen2.5-3b")
              & (fixed["phase"] == "decode")].iloc[0]
    assert r["speedup_vs_ggml-scalar"] == pytest.approx(80.0)
    assert r["speedup_vs_ggml-vec"] == pytest.approx(10.0)
    summ = speedup.speedup_summary(sp)
    assert (summ["lanes"] == "-").sum() == 12
    made, notes = plots.make_all(df, tmp_path / "f")
    assert notes == ["Q8_0 breakdown: no usable gem5 run of a q8 kernel"]
    assert "q8_breakdown" not in made
    assert len(made["speedup_vs_vlen"]) == 4 and len(made["vlen_lanes_heatmap"]) == 4
    assert len(made["peak_share"]) == 2 and len(made["lane_utilisation"]) == 2
    assert len(made["vl_fill"]) == 2  # one figure: a panel per model and phase
    fill = cycles.vl_fill_table(df)
    # lanes pooled (two runs under lanes timing), timing_model kept: it differs
    assert "lanes" not in fill.columns and "timing_model" in fill.columns
    assert len(fill) == 2 * 2 * 2 * 3 * 2  # models, phases, kernels, VLENs, timing
    assert set(fill.loc[fill["timing_model"] == "lanes", "runs"]) == {2}
    assert (fill["fill_pct"] == 100 * 16 * 32 / fill["vlen"]).all()
    assert (fill["elems_per_uop"] == 190 / 40).all()  # memory micro-ops counted here


@pytest.mark.parametrize("name", ["status.json", "run.json"])
def test_report_survives_a_non_utf8_file_in_the_first_run(sweep: Path, name: str) -> None:
    """The run that provenance() reads first has a file that is not UTF-8: the report is
    still written, and that run is reported not usable, with its file named."""
    first = sorted((sweep / "runs").iterdir())[0]
    (first / name).write_bytes(b"\xff\xfe\x00 not text")
    out = make_report(sweep, use_cache=False).path
    assert out.exists()
    df = collect(sweep, use_cache=False).df
    row = df[df["id"] == first.name].iloc[0]
    assert not row["usable"] and name in row["analysis_error"]
