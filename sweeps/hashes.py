"""sha256 of the files a run id hashes: workload binaries, gem5, the patch series."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from vecscale.vocab import REPO

PATCH_DIR = Path(REPO) / "gem5-patches"


class HashCache:
    """sha256 of files, memoised by (path, size, mtime) in a JSON file and in memory."""

    def __init__(self, store: Path | None) -> None:
        self.store = store
        self.mem: dict[str, str | None] = {}
        self.disk: dict[str, str] = {}
        self.dirty = False
        if store is not None and store.exists():
            try:
                self.disk = json.loads(store.read_text())
            except (OSError, ValueError):
                self.disk = {}

    def file(self, path: Path) -> str | None:
        key = str(path)
        if key in self.mem:
            return self.mem[key]
        try:
            st = path.stat()
        except OSError:
            self.mem[key] = None
            return None
        stamp = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        digest = self.disk.get(stamp)
        if digest is None:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()
            self.disk[stamp] = digest
            self.dirty = True
        self.mem[key] = digest
        return digest

    def save(self) -> None:
        if self.store is None or not self.dirty:
            return
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.store.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.disk))
            os.replace(tmp, self.store)
        except OSError:
            pass


def patches_sha256() -> str:
    """The gem5 patch series as run ids hash it: every gem5-patches/*.patch, name and bytes."""
    h = hashlib.sha256()
    for p in sorted(PATCH_DIR.glob("*.patch")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
