"""Reading a uarch file: find it by name or path, read its YAML (with `extends`), validate it
against the model, check what involves several keys. Every problem is one line,
``FILE: KEY: problem`` (UarchError)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from system.model import REPO_ROOT, Uarch
from vecscale.vocab import DEFAULT_LANE_GROUPS, MEM_BYTES_PER_CYCLE
from vecscale.yamlinput import first_error, read_yaml

UARCH_DIR: Path = REPO_ROOT / "configs" / "uarch"


class UarchError(ValueError):
    """A uarch file or point is invalid. The message is one line: ``FILE: KEY: problem``."""


def display(path: Path) -> str:
    """A short name for messages: relative to the current directory or the repo if possible."""
    p = path.resolve()
    for base in (Path.cwd().resolve(), REPO_ROOT):
        try:
            return str(p.relative_to(base))
        except ValueError:
            continue
    return str(path)


def list_uarchs(directory: Path = UARCH_DIR) -> list[str]:
    """Names (file stems) of the uarch YAML files in ``directory``, sorted."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.glob("*.yaml") if p.is_file())


def _find(name_or_path: str | Path, directory: Path) -> Path:
    text = str(name_or_path)
    candidate = Path(text)
    looks_like_path = (
        isinstance(name_or_path, Path) or "/" in text or text.endswith((".yaml", ".yml"))
    )
    if looks_like_path:
        if candidate.is_file():
            return candidate
        if candidate.is_dir():
            raise UarchError(f"{text}: a folder, not a uarch file")
        available = ", ".join(list_uarchs(directory)) or "none"
        raise UarchError(f"{text}: file not found (uarchs in {display(directory)}: {available})")
    path = Path(directory) / f"{text}.yaml"
    if path.is_file():
        return path
    available = ", ".join(list_uarchs(directory)) or "none"
    raise UarchError(f"{display(path)}: no uarch named {text!r} (available: {available})")


def _read(path: Path) -> dict[str, Any]:
    shown = display(path)
    data = read_yaml(path, shown, UarchError)
    if data is None:
        raise UarchError(f"{shown}: empty file (expected a mapping of uarch keys)")
    if not isinstance(data, dict):
        raise UarchError(
            f"{shown}: top level: expected a mapping of uarch keys, got {type(data).__name__}"
        )
    for key in data:
        if not isinstance(key, str):
            raise UarchError(f"{shown}: {key!r}: keys must be strings")
    return data


# Keys replaced as a whole when a child overrides them (merging min/max with allowed, or two
# op class -> group mappings element by element, would mix two incompatible descriptions).
_REPLACE_WHOLE = {("vlen",), ("lanes",)}


def _deep_merge(base: Any, override: Any, path: tuple[str, ...] = ()) -> Any:
    if isinstance(base, dict) and isinstance(override, dict) and path not in _REPLACE_WHOLE:
        out = dict(base)
        for k, v in override.items():
            out[k] = _deep_merge(base[k], v, (*path, k)) if k in base else v
        return out
    return override


def _raw_with_parents(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    data = _read(path)
    parent = data.get("extends")
    if parent is None:
        return data
    shown = display(path)
    if not isinstance(parent, str):
        raise UarchError(f"{shown}: extends: expected a uarch name, got {parent!r}")
    parent_path = path.parent / f"{parent}.yaml"
    if not parent_path.is_file():
        available = ", ".join(n for n in list_uarchs(path.parent) if n != path.stem) or "none"
        raise UarchError(
            f"{shown}: extends: no uarch named {parent!r} next to this file "
            f"(available: {available})"
        )
    if parent_path.resolve() in seen or parent_path.resolve() == path.resolve():
        raise UarchError(f"{shown}: extends: cycle through {parent!r}")
    merged_parent = _raw_with_parents(parent_path, (*seen, path.resolve()))
    merged_parent.pop("name", None)
    merged_parent.pop("extends", None)
    return _deep_merge(merged_parent, data)


#: gem5's cache line (the board's cache_line_size): a cache has size / (line x assoc) sets
CACHE_LINE = 64
#: the smallest simulated memory a uarch may give: gem5 SE maps the workload's code, stack
#: and buffers into it (a 1-byte memory fails only inside gem5, run after run)
MEMORY_MIN = 64 << 20
_UNITS = {"B": 1, "KiB": 1 << 10, "kB": 1 << 10, "MiB": 1 << 20, "MB": 1 << 20,
          "GiB": 1 << 30, "GB": 1 << 30}  # gem5's toMemorySize: every prefix is binary


def size_bytes(text: str) -> int:
    """Bytes of a gem5 size string the model accepted ("64KiB")."""
    digits = text.rstrip("BKMGiIkb")
    return int(digits) * _UNITS[text[len(digits):]]


def check_sizes(u: Uarch, shown: str) -> None:
    """Cache and memory sizes gem5 can build and that make sense together: every cache a
    power-of-two number of whole sets (gem5 stops otherwise), an L2 no smaller than either
    L1, a memory of at least MEMORY_MIN."""
    caches = {"l1i": u.caches.l1i, "l1d": u.caches.l1d, "l2": u.caches.l2}
    for name, c in caches.items():
        size, way = size_bytes(c.size), CACHE_LINE * c.assoc
        sets = size // way
        if size % way or sets & (sets - 1) or not sets:
            raise UarchError(
                f"{shown}: caches.{name}.size: {c.size} with assoc {c.assoc} is "
                f"{size / way:g} sets of {c.assoc} x {CACHE_LINE} B lines; gem5 needs a "
                "whole power-of-two number of sets")
    for l1 in ("l1d", "l1i"):
        if size_bytes(u.caches.l2.size) < size_bytes(caches[l1].size):
            raise UarchError(f"{shown}: caches.l2.size: {u.caches.l2.size} is smaller than "
                             f"caches.{l1}.size {caches[l1].size}")
    if size_bytes(u.memory.size) < MEMORY_MIN:
        raise UarchError(f"{shown}: memory.size: {u.memory.size} is below the "
                         f"{MEMORY_MIN >> 20}MiB a workload needs (its code, stack and "
                         "buffers; the shipped uarchs have 1GiB)")


def check_core(u: Uarch, shown: str) -> None:
    """The pipeline limits gem5 accepts and that make sense together (gem5 stops when the
    memory commit limit exceeds the commit limit), and one vector memory rate: the lanes
    model's mem_bytes_per_cycle is the LSQ's data interface width, core.memory_width."""
    core = u.core.resolved() if u.core is not None else None
    if core is not None:
        for mem, limit in (("memory_issue_limit", "issue_limit"),
                           ("memory_commit_limit", "commit_limit")):
            if core[mem] > core[limit]:
                stock = "" if getattr(u.core, limit) is not None else " (gem5's stock value)"
                raise UarchError(f"{shown}: core.{mem}: {core[mem]} is more than "
                                 f"core.{limit} {core[limit]}{stock}")
    if u.lanes_model is not None:
        width = core["memory_width"] if core is not None else MEM_BYTES_PER_CYCLE
        if u.lanes_model.mem_bytes_per_cycle != width:
            raise UarchError(
                f"{shown}: lanes_model.mem_bytes_per_cycle: {u.lanes_model.mem_bytes_per_cycle}"
                f" differs from core.memory_width {width} (the LSQ's data interface width is "
                "the only vector memory rate the gem5 side models; set both)")


def check_cross_keys(u: Uarch, shown: str, stem: str) -> None:
    """What the model cannot check one key at a time: the name is the file's, lanes_model
    only with (and always with) the lanes model, lanes no wider than the smallest VLEN,
    cache and memory sizes (check_sizes), pipeline limits (check_core)."""
    check_sizes(u, shown)
    check_core(u, shown)
    if u.name != stem:
        raise UarchError(f"{shown}: name: {u.name!r} must equal the file name stem {stem!r}")
    if u.timing_model == "lanes" and u.lanes_model is None:
        raise UarchError(f"{shown}: lanes_model: missing required key for timing_model lanes")
    if u.timing_model != "lanes" and u.lanes_model is not None:
        raise UarchError(
            f"{shown}: lanes_model: only allowed with timing_model lanes "
            f"(this file has {u.timing_model})"
        )
    if u.lanes_model is not None:
        groups = {**DEFAULT_LANE_GROUPS, **u.lanes_model.groups}
        for op in u.op_latency:
            if op in groups:
                raise UarchError(
                    f"{shown}: op_latency.{op}: timing_model lanes times this class from "
                    f"lanes_model (group {groups[op]}); remove it from op_latency"
                )
    if not u.ignores_lanes:
        if u.lanes is None:
            raise UarchError(
                f"{shown}: lanes: missing required key for timing_model {u.timing_model}"
            )
        lanes_min, _ = u.lanes.values_bounds()
        vlen_min, _ = u.vlen.values_bounds()
        key = "lanes.allowed" if u.lanes.allowed is not None else "lanes.min"
        if lanes_min * u.lane_bits > vlen_min:
            raise UarchError(
                f"{shown}: {key}: {lanes_min} lanes x {u.lane_bits} bits = "
                f"{lanes_min * u.lane_bits} bits is wider than vlen.min {vlen_min}"
            )


def load_uarch(name_or_path: str | Path, directory: Path = UARCH_DIR) -> Uarch:
    """Load and validate a uarch by name (a file in ``directory``) or by path."""
    path = _find(name_or_path, Path(directory))
    shown = display(path)
    data = _raw_with_parents(path)
    try:
        uarch = Uarch.model_validate(data)
    except ValidationError as err:
        raise UarchError(first_error(shown, err)) from None
    check_cross_keys(uarch, shown, path.stem)
    uarch._source = path
    return uarch


