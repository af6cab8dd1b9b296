"""Command-line input, the same in every CLI: is a path a folder that exists or can be made,
one line for an OSError (`<path>: <reason>`) instead of Python's `[Errno N] ...` or a
traceback, and an argparse parser whose errors are one line (no usage block).

Standard library only."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


class OneLineParser(argparse.ArgumentParser):
    """argparse, with an error as one line `PROG: error: ...` (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def folder_problem(path: Path) -> str | None:
    """What keeps `path` from being (or becoming) a folder we write into, or None: the
    first part of it that exists must be a writable folder, not a file."""
    p = path
    while not p.exists():
        if p.parent == p:
            return None
        p = p.parent
    if not p.is_dir():
        where = "" if p == path else f" (a parent of {path})"
        return f"{p} is a file, not a folder{where}"
    if not os.access(p, os.W_OK | os.X_OK):
        where = "" if p == path else f" (a parent of {path})"
        return f"{p} is a folder this user cannot write into{where}"
    return None


def os_error_line(e: OSError) -> str:
    """`<path>: <reason>` for an OSError (the reason alone when it names no file)."""
    reason = e.strerror or str(e)
    names = [str(n) for n in (e.filename, e.filename2) if n is not None]
    return f"{' -> '.join(names)}: {reason}" if names else reason
