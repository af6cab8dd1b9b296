"""Tables inside hand-written Markdown, regenerated from the results they quote.

A block in a Markdown file

    <!-- table:paper_comparison model=tinyllama-1.1b cols=headline,paper,ours,point -->
    ...generated...
    <!-- /table -->

is replaced by that table (a name from `tables.all_tables`), keeping the rows whose
columns equal one of the listed values (`key=v1,v2`; numbers compare as numbers) and
only the columns of `cols=` in that order. `python -m analysis doc RESULTS_DIR [FILE]`
rewrites the blocks (FILE defaults to RESULTS_DIR/README.md); `--check` only reports
whether they are current, so a test can keep a document honest.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from . import tables

BLOCK = re.compile(r"(<!-- table:(?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /table -->)",
                   re.DOTALL)


class DocError(ValueError):
    """A block that names an unknown table, filter column or bad option."""


def _matches(col: pd.Series, values: list[str]) -> pd.Series:
    out = pd.Series(False, index=col.index)
    for v in values:
        try:
            num = float(v)
        except ValueError:
            out |= col.astype(str) == v
        else:
            out |= pd.to_numeric(col, errors="coerce") == num
    return out


def render_block(spec: str, tabs: dict[str, pd.DataFrame], where: str) -> str:
    name, *opts = spec.split()
    if name not in tabs:
        raise DocError(f"{where}: unknown table {name!r} (expected one of: "
                       f"{', '.join(tabs)})")
    t = tabs[name]
    cols: list[str] | None = None
    for opt in opts:
        key, sep, val = opt.partition("=")
        if not sep or not val:
            raise DocError(f"{where}: {opt!r}: expected key=value[,value...]")
        values = val.split(",")
        if key == "cols":
            cols = values
            continue
        if t.empty:
            continue
        if key not in t.columns:
            raise DocError(f"{where}: table {name} has no column {key!r}")
        t = t[_matches(t[key], values)]
    if cols is not None and not t.empty:
        missing = [c for c in cols if c not in t.columns]
        if missing:
            raise DocError(f"{where}: table {name} has no column {missing[0]!r}")
        t = t[cols]
    return tables.to_markdown(t.reset_index(drop=True))


def refresh(text: str, tabs: dict[str, pd.DataFrame], path: str = "document") -> str:
    def sub(m: re.Match[str]) -> str:
        line = text.count("\n", 0, m.start()) + 1
        body = render_block(m.group("spec"), tabs, f"{path}:{line}")
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(sub, text)


def refresh_file(results_dir: Path, doc: Path | None = None, check: bool = False
                 ) -> tuple[Path, bool]:
    """(the document, whether it was current). Rewrites it unless `check`."""
    from .collect import collect

    doc = doc or results_dir / "README.md"
    text = doc.read_text()
    if not BLOCK.search(text):
        raise DocError(f"{doc}: no <!-- table:NAME --> ... <!-- /table --> block")
    new = refresh(text, tables.all_tables(collect(results_dir).df), str(doc))
    current = new == text
    if not current and not check:
        doc.write_text(new)
    return doc, current
