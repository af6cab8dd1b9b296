"""results/<sweep>/report.html: one self-contained page (figures embedded as base64 PNG)."""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import completeness, plots, tables
from .collect import collect
from .formatting import cell, write_table
from .select import runs_once

PROVENANCE_KEYS = [("gem5 version", ("gem5_version", "gem5_tag")),
                   ("gem5 binary", ("gem5", "gem5_path")),
                   ("gem5 binary sha256", ("gem5_sha256", "gem5_hash")),
                   ("patch series sha256", ("patches_sha256", "patch_hash")),
                   ("gem5 build series (stamp)", ("gem5_series",)),
                   ("gem5 commit (stamp)", ("gem5_commit",)),
                   ("workload sha256", ("workload_sha256",)),
                   ("vecscale git", ("vecscale_git",)),
                   ("sweep spec sha256", ("spec_sha256",))]

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1150px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:12px}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0} td:first-child,th:first-child{text-align:left}
img{max-width:100%;display:block;margin:.5em 0 1.5em}
pre{background:#f7f7f7;padding:.5em;overflow:auto;font-size:12px}
.note{color:#8a5a00}
"""


def _html_table(t: pd.DataFrame, max_rows: int = 400) -> str:
    if t is None or t.empty:
        return "<p><em>no data</em></p>"
    shown = t.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    body = []
    for rec in shown.itertuples(index=False):
        body.append("<tr>" + "".join(f"<td>{html.escape(cell(v))}</td>"
                                     for v in rec) + "</tr>")
    more = (f"<p>{len(t) - max_rows} more rows in the CSV.</p>" if len(t) > max_rows else "")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def _find_key(obj: Any, names: tuple[str, ...]) -> Any:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in names:
                return v
        for v in obj.values():
            found = _find_key(v, names)
            if found is not None:
                return found
    return None


def provenance(root: Path, df_uarch: list[Any] | None = None
               ) -> tuple[list[tuple[str, str]], str, str]:
    """(key facts, provenance.json text, sweep.yaml text); absent -> 'not recorded'."""
    sources: list[Any] = []
    pj_text = "not recorded"
    pj = root / "provenance.json"
    if pj.exists():
        try:
            obj = json.loads(pj.read_text())
            sources.append(obj)
            pj_text = json.dumps(obj, indent=2, sort_keys=True)
        except (ValueError, OSError):  # UnicodeDecodeError too
            pj_text = "provenance.json is not valid JSON"
    run_prov: dict[str, Any] = {}
    runs = root / "runs"
    if runs.is_dir():
        for st in sorted(runs.glob("*/status.json"))[:50]:
            try:
                p = json.loads(st.read_text()).get("provenance")
            except (ValueError, OSError, AttributeError):
                continue
            if isinstance(p, dict) and any(v is not None for v in p.values()):
                run_prov = p
                sources.append(p)
                break
        for rj in sorted(runs.glob("*/run.json"))[:1]:
            try:
                sources.append(json.loads(rj.read_text()))
            except (ValueError, OSError):  # UnicodeDecodeError too
                pass
    facts = []
    for label, names in PROVENANCE_KEYS:
        val = None
        for s in sources:
            val = _find_key(s, names)
            if val is not None:
                break
        facts.append((label, "not recorded" if val is None else
                      (val if isinstance(val, str) else json.dumps(val, sort_keys=True))))
    uarch = sorted({str(u) for u in (df_uarch or []) if isinstance(u, str) and u})
    facts.append(("uarch files", ", ".join(f"configs/uarch/{u}.yaml" for u in uarch)
                  if uarch else "not recorded"))
    if run_prov:
        facts.append(("run provenance (first run)", json.dumps(run_prov, sort_keys=True)))
    sy = root / "sweep.yaml"
    sweep_text = sy.read_text(errors="replace") if sy.exists() else "not recorded"
    return facts, pj_text, sweep_text


def _sections(tabs: dict[str, pd.DataFrame], before_figures: bool) -> list[str]:
    """A heading and an HTML table per catalogued table of that part of the report."""
    parts = []
    for t in tables.CATALOGUE:
        if t.before_figures == before_figures and not (t.omit_when_empty and tabs[t.name].empty):
            parts += [f"<h2>{html.escape(t.title)}</h2>", _html_table(tabs[t.name])]
    return parts


def render(root: Path, df: pd.DataFrame, tabs: dict[str, pd.DataFrame],
           figures: dict[str, list[Path]], notes: list[str], summary: str = "",
           table_notes: tuple[str, ...] = ()) -> str:
    facts, pj_text, sweep_text = provenance(
        root, list(df["uarch"].dropna().unique()) if "uarch" in df.columns else None)
    esc = html.escape
    runs = runs_once(df)
    made = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>vecscale report: "
             f"{esc(root.name)}</title><style>{CSS}</style></head><body>",
             f"<h1>vecscale report: {esc(root.name)}</h1>",
             f"<p id='completeness'><strong>{esc(summary)}</strong></p>" if summary else "",
             f"<p>{len(runs)} runs, {int(runs['usable'].sum()) if 'usable' in runs else 0} usable "
             f"for speedups (status ok, statistics parsed). Written {made}.</p>",
             *(f"<p class='note'>{esc(n)}</p>" for n in table_notes),
             *_sections(tabs, before_figures=True), "<h2>Figures</h2>"]
    for name, paths in figures.items():
        for p in paths:
            if p.suffix == ".png":
                b64 = base64.b64encode(p.read_bytes()).decode("ascii")
                parts.append(f"<h3>{esc(p.stem)}</h3><img alt='{esc(p.stem)}' "
                             f"data-figure='{esc(name)}' src='data:image/png;base64,{b64}'>")
    for n in notes:
        parts.append(f"<p class='note'>Figure skipped: {esc(n)}</p>")
    parts += _sections(tabs, before_figures=False)
    parts.append("<h2>Provenance</h2><table>")
    parts += [f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in facts]
    parts.append("</table><h3>provenance.json</h3><pre>" + esc(pj_text) + "</pre>")
    parts.append("<h3>sweep.yaml</h3><pre>" + esc(sweep_text) + "</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


@dataclass
class Report:
    path: Path
    notes: list[str]  # figures skipped, and why
    summary: str  # completeness.headline: ok runs against the plan, every other kind
    problems: list[str]  # one line per run that is not ok (completeness.listing)
    warnings: list[str]  # tables that could not be computed


def make_report(results_dir: str | Path, use_cache: bool = True) -> Report:
    """Collect, write tables and figures, and write report.html. If anything fails on the
    way, report.html is replaced by a page saying so (the previous one kept as
    report.previous.html) before the error goes up: an old report never looks current."""
    root = Path(results_dir)
    out = root / "report.html"
    try:
        return _make_report(root, out, use_cache)
    except BaseException as exc:
        _mark_failed(out, exc)
        raise


def _make_report(root: Path, out: Path, use_cache: bool) -> Report:
    res = collect(root, use_cache=use_cache)
    df = res.df
    warnings: list[str] = []
    tabs = tables.all_tables(df, warnings)
    for name, t in tabs.items():
        write_table(t, root / "tables", name)
    figures, notes = plots.make_all(df, root / "figures")
    summary = completeness.headline(df, "; ".join(res.notes))
    tmp = out.with_suffix(".html.tmp")
    tmp.write_text(render(root, df, tabs, figures, notes, summary, tuple(warnings)))
    tmp.replace(out)
    return Report(out, notes, summary, completeness.listing(df), warnings)


def _mark_failed(out: Path, exc: BaseException) -> None:
    """Replace report.html (if there is one) by a page naming the failure, keeping the old
    page as report.previous.html."""
    if not out.is_file():
        return
    why = " ".join(str(exc).split()) or type(exc).__name__
    made = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    try:
        os.replace(out, out.with_name("report.previous.html"))
        out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>vecscale "
                       f"report: not written</title></head><body><h1>Report not written</h1>"
                       f"<p>{html.escape(made)}: the report of {html.escape(out.parent.name)} "
                       f"could not be written: {html.escape(why)}</p><p>The previous report "
                       "is report.previous.html; it does not show the current results.</p>"
                       "</body></html>\n")
    except OSError:
        pass
