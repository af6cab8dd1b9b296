"""The results folder: atomic writes, status.json reading, the sweep lock, summaries.

Kept free of heavy imports: `sweeps.runner` uses it inside every run.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import TYPE_CHECKING, Any, TextIO

from vecscale.vocab import RESUMED, STATUSES

if TYPE_CHECKING:
    from pathlib import Path

#: files a run leaves; cleared before a rerun (run.json and cmd.sh are rewritten anyway)
OUTPUTS = ("stdout", "stderr", "simout", "simerr", "stats.txt", "config.ini", "config.json",
           "result.json", "workload_exit.json", "gem5.log", "status.json")


def _tmp_name(path: str | os.PathLike[str]) -> str:
    head, name = os.path.split(os.fspath(path))
    return os.path.join(head, f".{name}.{os.getpid()}.tmp")


def write_json_atomic(path: str | os.PathLike[str], obj: Any, sync: bool = True) -> None:
    """Write JSON to a temp file in the same folder, fsync (if `sync`), rename over it."""
    tmp = _tmp_name(path)
    try:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.write("\n")
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_stale_tmp(folder: str | os.PathLike[str]) -> int:
    """Delete the temp files of `_tmp_name` (".NAME.PID.tmp") in `folder` whose writer is no
    longer alive (a process killed between write and rename); returns how many."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        pid_text = name[:-4].rpartition(".")[2]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # its writer is alive (or the pid was reused): leave it
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed += 1
        except OSError:
            pass
    return removed


def write_text_atomic(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> None:
    tmp = _tmp_name(path)
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def read_status(rundir: str | os.PathLike[str]) -> dict[str, Any] | None:
    try:
        with open(os.path.join(rundir, "status.json")) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return None
    return st if isinstance(st, dict) and "status" in st else None


def tail(path: str | os.PathLike[str], nbytes: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - nbytes))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


class LockHeld(RuntimeError):
    pass


class SweepLock:
    """fcntl.flock on results/<sweep>/.lock: one driver per sweep folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / ".lock"
        self.fd: int | None = None

    def __enter__(self) -> SweepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
            finally:
                os.close(fd)
            raise LockHeld(f"{self.path}: another vecscale driver holds this sweep folder "
                           f"({holder}); wait for it or stop it first") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def collect_statuses(runs_dir: Path, ids: list[str]) -> dict[str, dict[str, Any] | None]:
    return {rid: read_status(runs_dir / rid) for rid in ids}


def summary_table(statuses: dict[str, dict[str, Any] | None], out: TextIO,
                  max_failed: int = 25) -> int:
    """Print counts per status and the failed runs; returns the number not ok."""
    from collections import Counter

    counts = Counter((st or {}).get("status", "missing") for st in statuses.values())
    width = max(len(s) for s in (*STATUSES, "missing"))
    out.write(f"{'status':<{width}}  runs\n")
    for s in (*STATUSES, "missing"):
        if counts.get(s):
            out.write(f"{s:<{width}}  {counts[s]}\n")
    out.write(f"{'total':<{width}}  {sum(counts.values())}\n")
    bad = [(rid, st) for rid, st in statuses.items() if not st or st.get("status") != "ok"]
    for rid, st in bad[:max_failed]:
        if st:
            cause = " ".join(str(st.get("cause", "")).split())[:160]
            again = " (not a result: a plain `run` reruns it)" if st["status"] in RESUMED \
                else ""
            out.write(f"  {rid}  {st['status']}: {cause}{again}\n")
        else:
            out.write(f"  {rid}  missing: not run yet\n")
    if len(bad) > max_failed:
        out.write(f"  ... and {len(bad) - max_failed} more\n")
    return len(bad)
