"""Command line of the system package: check, resolve and list uarch files, export their
schema.

    python -m system check FILE...            # validate files, one line per problem
    python -m system resolve NAME VLEN LANES  # print the resolved system as JSON
    python -m system export-schema [DIR]      # write DIR/uarch.schema.json
    python -m system list                     # names of the shipped uarchs

Bad input exits with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from system.loader import UarchError, display, list_uarchs, load_uarch
from system.model import SCHEMA_DIR, export_schema
from system.resolved import resolve
from vecscale.cmdline import OneLineParser, folder_problem, os_error_line


def _int_arg(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _lanes_arg(text: str) -> int | None:
    if text.lower() in ("none", "-"):
        return None
    return _int_arg(text)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m system", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)
    p_check = sub.add_parser("check", help="validate uarch YAML files")
    p_check.add_argument("files", nargs="+")
    p_res = sub.add_parser("resolve", help="print the resolved system of one point as JSON")
    p_res.add_argument("name", help="uarch name or path to a YAML file")
    p_res.add_argument("vlen", type=_int_arg)
    p_res.add_argument("lanes", type=_lanes_arg, help="lane count, or 'none' for fixed")
    p_exp = sub.add_parser("export-schema", help="write the JSON Schema of uarch files")
    p_exp.add_argument("out_dir", nargs="?", default=None)
    sub.add_parser("list", help="list the shipped uarchs")
    args = parser.parse_args(argv)

    if args.cmd == "check":
        bad = 0
        for f in args.files:
            try:
                u = load_uarch(Path(f))
            except UarchError as e:
                print(e, file=sys.stderr)
                bad += 1
                continue
            print(f"ok: {display(Path(f))} ({u.timing_model}, {len(u.points())} points)")
        return 2 if bad else 0
    if args.cmd == "resolve":
        try:
            system = resolve(load_uarch(args.name), args.vlen, args.lanes)
        except UarchError as e:
            print(e, file=sys.stderr)
            return 2
        print(json.dumps(system, indent=2))
        return 0
    if args.cmd == "export-schema":
        out_dir = Path(args.out_dir) if args.out_dir else SCHEMA_DIR
        if problem := folder_problem(out_dir):
            print(f"export-schema: {problem} (expected a folder for uarch.schema.json)",
                  file=sys.stderr)
            return 2
        try:
            out = export_schema(out_dir)
        except OSError as e:
            print(os_error_line(e), file=sys.stderr)
            return 2
        print(f"wrote {display(out)}")
        return 0
    if args.cmd == "list":
        for name in list_uarchs():
            print(name)
        return 0
    return 2  # pragma: no cover (argparse rejects unknown commands)
