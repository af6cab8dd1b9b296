"""python -m analysis collect|tables|plots|report RESULTS_DIR
python -m analysis compact RESULTS_DIR DEST_DIR
python -m analysis doc RESULTS_DIR [FILE] [--check]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vecscale.cmdline import OneLineParser, folder_problem, os_error_line

from .collect import CollectError, collect
from .stats import StatsError


def _parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog="python -m analysis",
                                 description="Analyse a results/<sweep> folder.")
    ap.add_argument("command", choices=["collect", "tables", "plots", "report", "compact",
                                        "doc"])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("dest", type=Path, nargs="?",
                    help="compact: the folder to write; doc: the Markdown file "
                         "(default RESULTS_DIR/README.md)")
    ap.add_argument("--check", action="store_true",
                    help="doc: only check that the generated tables are current (exit 1 if not)")
    ap.add_argument("--no-cache", action="store_true", help="re-parse every run")
    return ap


def _compact(root: Path, dest: Path | None) -> int:
    from .compact import compact

    if dest is None:
        print("error: compact needs a destination folder (e.g. results/reference)",
              file=sys.stderr)
        return 2
    if problem := folder_problem(dest):
        print(f"error: compact: {problem} (expected a folder to write the archive into)",
              file=sys.stderr)
        return 2
    done = compact(root, dest)
    for p in done.problems:
        print(f"warning: {p}", file=sys.stderr)
    print(f"compacted {done.runs} runs into {dest} ({done.size / 1e6:.2f} MB)")
    if done.stale:
        print(f"left out {done.stale} finished runs that the sweep's current plan "
              f"(points.json) does not name: older workload or gem5 binaries")
    if done.stopped:
        print(f"left out {done.stopped} runs stopped before they ended (killed): "
              f"not results; the next `run` of the sweep runs them again")
    return 0


def _doc(root: Path, dest: Path | None, check: bool) -> int:
    from .doc import refresh_file

    doc, current = refresh_file(root, dest, check=check)
    if check:
        print(f"{doc}: tables {'current' if current else 'out of date'}")
        return 0 if current else 1
    print(f"{doc}: tables {'already current' if current else 'rewritten'}")
    return 0


def _report(root: Path, use_cache: bool) -> int:
    from .report import make_report

    rep = make_report(root, use_cache=use_cache)
    for n in rep.notes:
        print(f"note: figure skipped: {n}")
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for line in (rep.summary, *rep.problems):
        print(line)
    print(f"wrote {rep.path}")
    return 0


def _collected(command: str, root: Path, use_cache: bool) -> int:
    """collect, tables or plots."""
    res = collect(root, use_cache=use_cache)
    df = res.df
    if command == "collect":
        from .completeness import headline, listing

        bad = int((~df["usable"]).sum()) if "usable" in df else 0
        print(f"{len(df)} runs ({res.parsed} parsed, {res.reused} from cache), "
              f"{bad} not usable; wrote {root / 'collected.csv'}")
        print(headline(df, "; ".join(res.notes)))
        for line in listing(df):
            print(line)
    elif command == "tables":
        from . import tables

        paths = tables.write_all(df, root / "tables")
        print(f"wrote {len(paths)} files under {root / 'tables'}")
    else:
        from . import plots

        made, notes = plots.make_all(df, root / "figures")
        for n in notes:
            print(f"note: figure skipped: {n}")
        print(f"wrote {sum(len(v) for v in made.values())} files under {root / 'figures'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root: Path = args.results_dir
    try:
        if args.command == "compact":
            return _compact(root, args.dest)
        if args.command == "doc":
            return _doc(root, args.dest, args.check)
        if args.command == "report":
            return _report(root, not args.no_cache)
        return _collected(args.command, root, not args.no_cache)
    except (CollectError, StatsError, OSError, ValueError) as exc:
        msg = os_error_line(exc) if isinstance(exc, OSError) else \
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
