"""Formatting tables: CSV, Markdown and LaTeX (booktabs) files, and the text of one cell."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd


def cell(v: Any) -> str:
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
        cells = [cell(v).replace("|", "\\|") for v in rec]
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
        lines.append(" & ".join(tex_escape(cell(v)) for v in rec) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(t: pd.DataFrame, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.csv", out_dir / f"{name}.md", out_dir / f"{name}.tex"]
    t.to_csv(paths[0], index=False)
    paths[1].write_text(to_markdown(t))
    paths[2].write_text(to_latex(t))
    return paths
