"""Parser for gem5 v24 text statistics (stats.txt).

A stats.txt holds one block per dump::

    ---------- Begin Simulation Statistics ----------
    simSeconds                                   0.000123  # Number of seconds simulated (Second)
    system.cpu.committedInstType::IntAlu     1234  45.00%  45.00%  # Class of ... (Count)
    ...
    ---------- End Simulation Statistics   ----------

Every printed entry is one line ``name value [pdf% cdf%] [# description (unit)]``. Vectors,
distributions and vector formulas print one such line per element, named ``base::sub``
(``::samples``, ``::mean``, ``::0-3``, ``::overflows``, ``::total`` ...). Stats flagged
``nozero`` are not printed when zero, so an absent name reads as 0.

Speed matters (a sweep can have 10,000 runs), so the parser does not split every line: it
locates the dump blocks with ``str.find`` and looks a stat up by searching for
``"\\n" + name + " "`` inside the selected block. Only the values that are asked for are
converted to float. ``Dump.to_dict()`` converts a whole block when that is wanted.
"""

from __future__ import annotations

import gzip
from pathlib import Path

BEGIN = "---------- Begin Simulation Statistics"
END = "---------- End Simulation Statistics"
#: Where the detailed core's stats live, first match wins: configs/run.py's switchable
#: processor (the Minor core switched in for the ROI), a stdlib SimpleProcessor, a classic
#: se.py-style system.
CPU_PREFIXES = ("board.processor.switch.core", "board.processor.cores.core", "system.cpu")


class StatsError(Exception):
    """A stats.txt that cannot be used; the message is one line and names the file."""


def _parse_value(token: str, name: str, source: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise StatsError(f"{source}: stat {name!r} has a non-numeric value {token[:40]!r}") \
            from None


class Dump:
    """One statistics block. Lookups are lazy; nothing is converted until asked."""

    __slots__ = ("_text", "index", "source", "message", "_dict")

    def __init__(self, text: str, index: int, source: str, message: str = "") -> None:
        # The text starts with "\n" so that every entry is preceded by a newline.
        self._text = text if text.startswith("\n") else "\n" + text
        self.index = index  # 1-based dump number
        self.source = source
        self.message = message
        self._dict: dict[str, float] | None = None

    def _value_at(self, pos: int, name: str) -> float:
        """Parse the value token that follows the name at text position pos."""
        text = self._text
        eol = text.find("\n", pos)
        if eol < 0:
            eol = len(text)
        fields = text[pos:eol].split(None, 3)
        if not fields:
            raise StatsError(f"{self.source}: dump {self.index}: stat {name!r} has no value")
        tok = fields[0]
        if tok == "|" and len(fields) > 1:  # "oneline" vectors: name | v pdf cdf | ...
            tok = fields[1]
        return _parse_value(tok, name, self.source)

    def _find(self, name: str) -> int:
        """Text position just after ``name`` at a line start, or -1. gem5 separates name and
        value with spaces; a tab is accepted too."""
        key = "\n" + name + " "
        pos = self._text.find(key)
        if pos < 0:
            key = "\n" + name + "\t"
            pos = self._text.find(key)
            if pos < 0:
                return -1
        return pos + len(key)

    def has(self, name: str) -> bool:
        if self._dict is not None:
            return name in self._dict
        return self._find(name) >= 0

    def get(self, name: str, default: float = 0.0) -> float:
        """Value of a scalar stat (or one vector element, ``base::sub``); absent -> default."""
        if self._dict is not None:
            return self._dict.get(name, default)
        pos = self._find(name)
        if pos < 0:
            return default
        return self._value_at(pos, name)

    def cpu(self) -> str:
        """Stat prefix of the core that ran the ROI: the first of CPU_PREFIXES with a
        ``numCycles`` entry in this dump."""
        for prefix in CPU_PREFIXES:
            if self.has(prefix + ".numCycles"):
                return prefix
        raise StatsError(f"{self.source}: dump {self.index} has no core statistics (none of "
                         f"{', '.join(p + '.numCycles' for p in CPU_PREFIXES)})")

    def vector(self, base: str) -> dict[str, float]:
        """All elements ``base::sub`` of a vector/distribution/formula as {sub: value}.

        Elements are printed contiguously, so the scan stops at the first line that does not
        start with the prefix.
        """
        prefix = base + "::"
        if self._dict is not None:
            n = len(prefix)
            return {k[n:]: v for k, v in self._dict.items() if k.startswith(prefix)}
        text = self._text
        key = "\n" + prefix
        pos = text.find(key)
        out: dict[str, float] = {}
        while pos >= 0:
            start = pos + len(key)
            eol = text.find("\n", start)
            if eol < 0:
                eol = len(text)
            fields = text[start:eol].split(None, 2)
            if len(fields) >= 2:
                tok = fields[1]
                if tok == "|" and len(fields) > 2:
                    tok = fields[2].split(None, 1)[0]
                out[fields[0]] = _parse_value(tok, prefix + fields[0], self.source)
            if text.startswith(key, eol):
                pos = eol
            else:
                pos = text.find(key, eol)
        return out

    def has_prefix(self, prefix: str) -> bool:
        """True when any stat name starts with prefix (e.g. a whole stats group)."""
        if self._dict is not None:
            return any(k.startswith(prefix) for k in self._dict)
        return self._text.find("\n" + prefix) >= 0

    def to_text(self) -> str:
        """The block's entry lines as gem5 printed them (without the banners)."""
        return self._text

    def to_dict(self) -> dict[str, float]:
        """Convert every entry of the block (slower; for inspection and tests)."""
        if self._dict is None:
            out: dict[str, float] = {}
            for line in self._text.splitlines():
                fields = line.split(None, 2)
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) < 2:
                    raise StatsError(
                        f"{self.source}: dump {self.index}: malformed line {line[:60]!r}")
                tok = fields[1]
                if tok == "|" and len(fields) > 2:
                    tok = fields[2].split(None, 1)[0]
                out[fields[0]] = _parse_value(tok, fields[0], self.source)
            self._dict = out
        return dict(self._dict)

    def __len__(self) -> int:
        return len(self.to_dict())


def _split_dumps(text: str, source: str) -> list[Dump]:
    if not text.strip():
        raise StatsError(f"{source}: empty stats file")
    if "\x00" in text:
        raise StatsError(f"{source}: binary data, not a gem5 stats.txt")
    pos = text.find(BEGIN)
    if pos < 0:
        raise StatsError(f"{source}: no '{BEGIN.strip('- ')}' banner: not a gem5 stats.txt")
    if text[:pos].strip():
        raise StatsError(f"{source}: unexpected text before the first Begin banner")
    dumps: list[Dump] = []
    while pos >= 0:
        eol = text.find("\n", pos)
        if eol < 0:
            raise StatsError(f"{source}: truncated: file ends in the Begin banner of dump "
                             f"{len(dumps) + 1}")
        # The banner may carry a message between the dashes ("Begin Simulation Statistics
        # (roi) ----------"); keep it.
        banner = text[pos + len(BEGIN):eol].strip().strip("-").strip()
        end = text.find(END, eol)
        nxt = text.find(BEGIN, eol)
        if end < 0 or (0 <= nxt < end):
            raise StatsError(f"{source}: truncated: dump {len(dumps) + 1} has no End banner")
        dumps.append(Dump(text[eol:end], len(dumps) + 1, source, banner))
        end_eol = text.find("\n", end)
        if end_eol < 0:
            end_eol = len(text)
        tail_end = nxt if nxt >= 0 else len(text)
        if text[end_eol:tail_end].strip():
            raise StatsError(f"{source}: unexpected text after the End banner of dump "
                             f"{len(dumps)}")
        pos = nxt
    return dumps


def read_text(path: str | Path) -> str:
    """A stats file's text; ``.gz`` files (compacted results) are decompressed."""
    p = Path(path)
    try:
        data = p.read_bytes()
        if p.suffix == ".gz":
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise StatsError(f"{p}: no such file") from None
    except OSError as exc:
        raise StatsError(f"{p}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except EOFError:
        raise StatsError(f"{p}: truncated gzip data") from None
    # latin-1 never fails and is the fastest decoder; gem5 writes ASCII.
    return data.decode("latin-1")


def parse_text(text: str, source: str = "<text>") -> list[Dump]:
    """All dumps of a stats.txt given as a string."""
    return _split_dumps(text, source)


def parse_file(path: str | Path) -> list[Dump]:
    """All dumps of a stats.txt file (StatsError when it is empty, truncated or not gem5)."""
    return _split_dumps(read_text(path), str(path))


def roi_dump(path: str | Path, dump: int = 1) -> Dump:
    """The dump number ``dump`` (1-based, from run.json roi_dump) of a stats.txt file."""
    dumps = parse_file(path)
    if not 1 <= dump <= len(dumps):
        raise StatsError(f"{path}: asked for dump {dump} but the file has {len(dumps)} dump(s)")
    return dumps[dump - 1]


def region_dumps(dumps: list[Dump], source: str, roi: int, span: int = 1,
                 roi_only: bool = False) -> list[Dump]:
    """The `span` dumps of the region of interest from dump `roi` on (a layer dumps once per
    sublayer). gem5 appends a dump at exit, so in a whole stats.txt the region must end
    before the last dump: a workload whose own dumps are missing must not have gem5's exit
    dump read as its last region. A compacted file (`roi_only`) holds the region only."""
    last = roi + span - 1
    if roi_only and 1 <= roi and last <= len(dumps):
        return dumps[roi - 1:last]
    if not roi_only and 1 <= roi and last < len(dumps):
        return dumps[roi - 1:last]
    if not roi_only and span == 1 and roi == len(dumps) == 1:
        raise StatsError(f"{source}: only one dump (gem5's exit dump): the workload's ROI "
                         "dump is missing")
    regions = f" with {span} regions (dumps {roi}-{last})" if span > 1 else ""
    after = "" if roi_only else ", and gem5's exit dump after them,"
    raise StatsError(f"{source}: roi_dump is {roi}{regions}{after} but the file has "
                     f"{len(dumps)} dump(s)")
