"""The results folder: atomic writes, status.json reading, the sweep lock, summaries.

Kept free of heavy imports: `sweeps.runner` uses it inside every run.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import TYPE_CHECKING, Any

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
