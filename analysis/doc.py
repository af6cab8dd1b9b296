"""Tables inside hand-written Markdown, regenerated from the results they quote.

A block in a Markdown file

    <!-- table:paper_comparison model=tinyllama-1.1b cols=headline,paper,ours,point -->
    ...generated...
    <!-- /table -->

is replaced by that table (a name from `tables.all_tables`), keeping the rows whose
columns equal one of the listed values (`key=v1,v2`; numbers compare as numbers) or
match a regular expression (`key~=REGEX`), and only the columns of `cols=` in that order;
`pivot=ROW:COLUMN:VALUE` spreads VALUE over one column per distinct COLUMN value, one row
per distinct ROW (several columns joined by `+`: `pivot=model+vlen:block_c:cycles`).
Options are shell-quoted (`headline~="vs ggml-vec"`). `python -m analysis doc RESULTS_DIR [FILE]`
rewrites the blocks (FILE defaults to RESULTS_DIR/README.md); `--check` only reports
whether they are current, so a test can keep a document honest.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd

from . import tables
from .formatting import to_markdown

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
    try:
        name, *opts = shlex.split(spec)
    except ValueError as e:
        raise DocError(f"{where}: {e}") from None
    if name not in tabs:
        raise DocError(f"{where}: unknown table {name!r} (expected one of: "
                       f"{', '.join(tabs)})")
    t = tabs[name]
    cols: list[str] | None = None
    pivot: list[str] | None = None
    for opt in opts:
        key, sep, val = opt.partition("=")
        regex = key.endswith("~")
        key = key.rstrip("~")
        if not sep or not val or not key:
            raise DocError(f"{where}: {opt!r}: expected key=value[,value...] or key~=regex")
        if key == "cols":
            cols = val.split(",")
            continue
        if key == "pivot":
            pivot = val.split(":")
            if len(pivot) != 3:
                raise DocError(f"{where}: {opt!r}: expected pivot=ROW:COLUMN:VALUE")
            continue
        if t.empty:
            continue
        _need(t, [key], name, where)
        if regex:
            try:
                t = t[t[key].astype(str).str.contains(val, regex=True)]
            except re.error as e:
                raise DocError(f"{where}: {opt!r}: bad regular expression ({e})") from None
        else:
            t = t[_matches(t[key], val.split(","))]
    if pivot is not None and not t.empty:
        rows, (col, value) = pivot[0].split("+"), pivot[1:]
        _need(t, [*rows, col, value], name, where)
        t = t.pivot_table(index=rows, columns=col, values=value, aggfunc="first")
        t.columns = [f"{col} {_label(c)}" for c in t.columns]
        t = t.reset_index()
        for r in rows:
            t[r] = t[r].map(_label)
    if cols is not None and not t.empty:
        _need(t, cols, name, where)
        t = t[cols]
    return to_markdown(t.reset_index(drop=True))


def _need(t: pd.DataFrame, cols: list[str], name: str, where: str) -> None:
    missing = [c for c in cols if c not in t.columns]
    if missing:
        raise DocError(f"{where}: table {name} has no column {missing[0]!r}")


def _label(v: object) -> object:
    return int(v) if isinstance(v, float) and v.is_integer() else v


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
