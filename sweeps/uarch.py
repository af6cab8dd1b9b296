"""Microarchitecture descriptions: load, validate and resolve ``configs/uarch/*.yaml``.

A uarch YAML describes a family of simulated systems. A point ``(uarch, vlen, lanes)``
resolves to a fully concrete dict (the "resolved system") that gem5's ``configs/run.py``
reads from ``run.json``. See ``configs/README.md`` for the file format.

Command line::

    python -m sweeps.uarch check FILE...            # validate files, one line per problem
    python -m sweeps.uarch resolve NAME VLEN LANES  # print the resolved system as JSON
    python -m sweeps.uarch export-schema [DIR]      # write DIR/uarch.schema.json
    python -m sweeps.uarch list                     # names of the shipped uarchs

Bad input exits with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from sweeps.yamlkeys import UniqueKeyLoader

REPO_ROOT: Path = Path(__file__).resolve().parent.parent
UARCH_DIR: Path = REPO_ROOT / "configs" / "uarch"
SCHEMA_DIR: Path = REPO_ROOT / "configs" / "schema"
SCHEMA_FILE_NAME = "uarch.schema.json"

VLEN_MIN = 128
VLEN_MAX = 65536

TIMING_MODELS: tuple[str, ...] = ("fixed", "vl-scaled", "lanes")

# gem5 v24.0.0.1 OpClass names, in the order of src/cpu/FuncUnit.py (OpClass.vals); the
# same set as the `static const OpClass ...Op` constants in src/cpu/op_class.hh.
GEM5_OP_CLASSES: tuple[str, ...] = (
    "No_OpClass", "IntAlu", "IntMult", "IntDiv",
    "FloatAdd", "FloatCmp", "FloatCvt", "FloatMult", "FloatMultAcc", "FloatDiv", "FloatMisc",
    "FloatSqrt",
    "SimdAdd", "SimdAddAcc", "SimdAlu", "SimdCmp", "SimdCvt", "SimdMisc", "SimdMult",
    "SimdMultAcc", "SimdMatMultAcc", "SimdShift", "SimdShiftAcc", "SimdDiv", "SimdSqrt",
    "SimdFloatAdd", "SimdFloatAlu", "SimdFloatCmp", "SimdFloatCvt", "SimdFloatDiv",
    "SimdFloatMisc", "SimdFloatMult", "SimdFloatMultAcc", "SimdFloatMatMultAcc",
    "SimdFloatSqrt",
    "SimdReduceAdd", "SimdReduceAlu", "SimdReduceCmp", "SimdFloatReduceAdd",
    "SimdFloatReduceCmp",
    "SimdAes", "SimdAesMix", "SimdSha1Hash", "SimdSha1Hash2", "SimdSha256Hash",
    "SimdSha256Hash2", "SimdShaSigma2", "SimdShaSigma3", "SimdPredAlu",
    "Matrix", "MatrixMov", "MatrixOP",
    "MemRead", "MemWrite", "FloatMemRead", "FloatMemWrite", "IprAccess", "InstPrefetch",
    "SimdUnitStrideLoad", "SimdUnitStrideStore", "SimdUnitStrideMaskLoad",
    "SimdUnitStrideMaskStore", "SimdStridedLoad", "SimdStridedStore", "SimdIndexedLoad",
    "SimdIndexedStore", "SimdWholeRegisterLoad", "SimdWholeRegisterStore",
    "SimdUnitStrideFaultOnlyFirstLoad", "SimdUnitStrideSegmentedLoad",
    "SimdUnitStrideSegmentedStore", "SimdExt", "SimdFloatExt", "SimdConfig",
)  # fmt: skip

# Vector memory op classes (they go to MinorDefaultMemFU in stock gem5, not the FloatSimd FU).
VECTOR_MEM_CLASSES: frozenset[str] = frozenset(
    c
    for c in GEM5_OP_CLASSES
    if c.startswith("Simd") and (c.endswith("Load") or c.endswith("Store"))
)

# Class groups of the lane-occupancy model and the default op class -> group mapping. The
# classes are exactly those the gem5 patch times (VecTiming::unitOf in gem5-patches/0003):
# vector arithmetic, reductions and SimdMisc (RISC-V slides, gathers, merges, moves go to
# the slide unit). Vector memory ops keep gem5's LSQ timing and SimdConfig (vset*vl*) its
# op_latency, so neither has a group.
LANE_GROUPS: tuple[str, ...] = ("arith", "mul", "fma", "div", "reduce", "permute")

DEFAULT_LANE_GROUPS: dict[str, str] = {
    **{
        c: "arith"
        for c in (
            "SimdAdd", "SimdAddAcc", "SimdAlu", "SimdCmp", "SimdCvt", "SimdShift",
            "SimdShiftAcc", "SimdExt", "SimdPredAlu", "SimdFloatAdd", "SimdFloatAlu",
            "SimdFloatCmp", "SimdFloatCvt", "SimdFloatMisc", "SimdFloatExt",
        )
    },
    **{c: "mul" for c in ("SimdMult", "SimdFloatMult")},
    **{
        c: "fma"
        for c in ("SimdMultAcc", "SimdMatMultAcc", "SimdFloatMultAcc", "SimdFloatMatMultAcc")
    },
    **{c: "div" for c in ("SimdDiv", "SimdSqrt", "SimdFloatDiv", "SimdFloatSqrt")},
    **{
        c: "reduce"
        for c in (
            "SimdReduceAdd", "SimdReduceAlu", "SimdReduceCmp", "SimdFloatReduceAdd",
            "SimdFloatReduceCmp",
        )
    },
    "SimdMisc": "permute",
}  # fmt: skip

# Classes whose latency the paper's vl-scaled model stretches with VLEN: the vector
# arithmetic classes above (when op_latency gives them a base). Scalar Float*/Int* classes,
# vector memory ops and SimdConfig keep their latency.
VL_SCALED_CLASSES: frozenset[str] = frozenset(DEFAULT_LANE_GROUPS)

# The only vector memory rate the gem5 side models: one 64-byte cache-line fragment per
# cycle, the Minor LSQ's rate (configs/run.py rejects anything else).
MEM_BYTES_PER_CYCLE = 64

# DRAM interfaces that gem5 v24's stdlib wraps as single-channel memories
# (src/python/gem5/components/memory/single_channel.py). configs/run.py has to map a type to
# its memory system too; configs/tests/test_uarch_files.py checks that for the shipped files.
GEM5_MEMORY_TYPES: tuple[str, ...] = (
    "DDR3_1600_8x8", "DDR3_2133_8x8", "DDR4_2400_8x8", "LPDDR3_1600_1x32",
    "HBM_1000_4H_1x128", "DDR5_4400_4x8", "DDR5_6400_4x8", "DDR5_8400_4x8",
)  # fmt: skip

_SIZE_PATTERN = r"^[1-9][0-9]*(B|KiB|MiB|GiB|kB|MB|GB)$"
_CLOCK_PATTERN = r"^[1-9][0-9]*(\.[0-9]+)?(GHz|MHz|kHz|Hz)$"


class UarchError(ValueError):
    """A uarch file or point is invalid. The message is one line: ``FILE: KEY: problem``."""


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def vl_scaled_latency(base: int, vlen: int, lanes: int, lane_bits: int = 64) -> int:
    """The paper's OpLat = BaseLat + max(0, ceil(VLEN / (lanes * lane_bits)) - 1).

    >>> vl_scaled_latency(5, 8192, 8)
    20
    >>> vl_scaled_latency(5, 512, 64)
    5
    """
    if base < 0 or vlen < 1 or lanes < 1 or lane_bits < 1:
        raise ValueError(
            f"vl_scaled_latency: need base >= 0 and vlen, lanes, lane_bits >= 1, got "
            f"base={base} vlen={vlen} lanes={lanes} lane_bits={lane_bits}"
        )
    width = lanes * lane_bits
    return base + max(0, -(-vlen // width) - 1)


def effective_latency(system: dict[str, Any], op_class: str) -> int | None:
    """Latency in cycles of a full-VLEN op of ``op_class`` in a resolved system, for the
    ``fixed`` and ``vl-scaled`` models; None when the class is not in ``op_latency`` (it then
    keeps gem5's stock FU latency). The ``lanes`` model depends on vl and SEW at run time and
    is not covered here."""
    base = system["op_latency"].get(op_class)
    if base is None:
        return None
    if system["timing_model"] == "vl-scaled" and op_class in VL_SCALED_CLASSES:
        return vl_scaled_latency(base, system["vlen"], system["lanes"], system["lane_bits"])
    if system["timing_model"] == "lanes":
        raise ValueError("effective_latency: the lanes model has no static per-class latency")
    return base


# ----------------------------------------------------------------------------- models


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Axis(_Strict):
    """Allowed values of vlen or lanes: an inclusive range ``{min, max}`` or ``allowed``."""

    min: StrictInt | None = None
    max: StrictInt | None = None
    allowed: list[StrictInt] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> Axis:
        has_range = self.min is not None or self.max is not None
        if has_range and self.allowed is not None:
            raise ValueError("give either min/max or allowed, not both")
        if not has_range and self.allowed is None:
            raise ValueError("give min and max, or allowed")
        if has_range and (self.min is None or self.max is None):
            raise ValueError("give both min and max")
        return self

    def values_bounds(self) -> tuple[int, int]:
        if self.allowed is not None:
            return min(self.allowed), max(self.allowed)
        assert self.min is not None and self.max is not None
        return self.min, self.max

    def contains(self, value: int) -> bool:
        if self.allowed is not None:
            return value in self.allowed
        assert self.min is not None and self.max is not None
        return self.min <= value <= self.max

    def describe(self) -> str:
        if self.allowed is not None:
            return "[" + ", ".join(str(v) for v in self.allowed) + "]"
        return f"{self.min}..{self.max}"


class Cache(_Strict):
    size: StrictStr = Field(pattern=_SIZE_PATTERN, description="gem5 size string, e.g. 64KiB")
    assoc: StrictInt = Field(ge=1, le=1024)


class Caches(_Strict):
    l1i: Cache
    l1d: Cache
    l2: Cache


class Memory(_Strict):
    type: Literal[GEM5_MEMORY_TYPES] = Field(  # type: ignore[valid-type]
        description="gem5 DRAM interface class"
    )
    size: StrictStr = Field(pattern=_SIZE_PATTERN)


class Lsq(_Strict):
    """MinorCPU LSQ limits (executeMaxAccessesInMemory, executeLSQRequestsQueueSize,
    executeLSQTransfersQueueSize, executeLSQStoreBufferSize)."""

    max_accesses_in_memory: StrictInt = Field(ge=1, le=1024)
    requests_queue: StrictInt = Field(ge=1, le=1024)
    transfers_queue: StrictInt = Field(ge=1, le=1024)
    store_buffer: StrictInt = Field(ge=1, le=1024)


class LanesModel(_Strict):
    """Lane-occupancy timing model parameters (timing_model: lanes)."""

    startup: dict[StrictStr, StrictInt] = Field(
        description="startup latency in cycles per class group: " + ", ".join(LANE_GROUPS)
    )
    reduce_per_level: StrictInt = Field(ge=0, description="cycles per level of the lane tree")
    permute_per_lane_hop: StrictInt = Field(ge=0, description="cycles per cross-lane hop")
    queue_depth: StrictInt = Field(
        ge=0, le=64,
        description="vector ops that may wait for a busy unit before the core stops issuing "
        "(0: issue waits until the unit is free)",
    )
    mem_bytes_per_cycle: StrictInt = Field(
        description=f"vector memory bytes per cycle; only {MEM_BYTES_PER_CYCLE} (one cache "
        "line per cycle, the Minor LSQ's rate) is modelled"
    )
    groups: dict[StrictStr, StrictStr] = Field(
        default_factory=dict,
        description="op class -> group overrides of the built-in mapping",
    )

    @field_validator("startup")
    @classmethod
    def _startup_keys(cls, v: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(v) - set(LANE_GROUPS))
        if unknown:
            raise ValueError(
                f"[{unknown[0]}] unknown class group (expected: {', '.join(LANE_GROUPS)})"
            )
        missing = [g for g in LANE_GROUPS if g not in v]
        if missing:
            raise ValueError(f"[{missing[0]}] missing class group")
        for g, cycles in v.items():
            if cycles < 1:
                # The patch treats a startup of 0 as "not timed by the lanes model".
                raise ValueError(f"[{g}] {cycles} must be >= 1")
        return v

    @field_validator("mem_bytes_per_cycle")
    @classmethod
    def _mem_rate(cls, v: int) -> int:
        if v != MEM_BYTES_PER_CYCLE:
            raise ValueError(
                f"{v}: only {MEM_BYTES_PER_CYCLE} (one cache line per cycle, the Minor LSQ's "
                "rate) is modelled by the gem5 side"
            )
        return v

    @field_validator("groups")
    @classmethod
    def _group_keys(cls, v: dict[str, str]) -> dict[str, str]:
        for op, group in v.items():
            if op not in GEM5_OP_CLASSES:
                raise ValueError(f"[{op}] not a gem5 v24 OpClass name")
            if op not in DEFAULT_LANE_GROUPS:
                raise ValueError(
                    f"[{op}] not a class the lanes model times (vector arithmetic, "
                    "reductions, SimdMisc)"
                )
            if group not in LANE_GROUPS:
                raise ValueError(
                    f"[{op}] unknown class group {group!r} (expected: {', '.join(LANE_GROUPS)})"
                )
        return v


class Uarch(_Strict):
    """One microarchitecture description (one configs/uarch/*.yaml file)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"title": "vecscale microarchitecture (configs/uarch/*.yaml)"},
    )

    name: StrictStr = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", description="= file stem")
    description: StrictStr
    extends: StrictStr | None = Field(
        default=None, description="name of a uarch in the same folder to inherit from"
    )
    vlen: Axis = Field(description="allowed VLEN in bits (powers of two)")
    lanes: Axis | None = Field(
        default=None, description="allowed lane counts (optional for timing_model fixed)"
    )
    lane_bits: StrictInt = Field(default=64, description="datapath width of one lane in bits")
    timing_model: Literal["fixed", "vl-scaled", "lanes"]
    clock: StrictStr = Field(pattern=_CLOCK_PATTERN, description="core clock, e.g. 2GHz")
    op_latency: dict[StrictStr, StrictInt] = Field(
        description="gem5 OpClass -> base latency in cycles; unlisted classes keep gem5's stock "
        "MinorCPU FU latency"
    )
    lanes_model: LanesModel | None = None
    caches: Caches
    memory: Memory
    lsq: Lsq

    _source: Path | None = PrivateAttr(default=None)

    @field_validator("vlen")
    @classmethod
    def _vlen_values(cls, v: Axis) -> Axis:
        values = v.allowed if v.allowed is not None else [v.min, v.max]
        keys = ["allowed"] * len(values) if v.allowed is not None else ["min", "max"]
        for key, value in zip(keys, values, strict=True):
            assert value is not None
            if not _is_pow2(value):
                raise ValueError(f"[{key}] {value} is not a power of two")
            if not VLEN_MIN <= value <= VLEN_MAX:
                raise ValueError(f"[{key}] {value} outside {VLEN_MIN}..{VLEN_MAX}")
        lo, hi = v.values_bounds()
        if v.allowed is None and lo > hi:
            raise ValueError(f"[min] {lo} is greater than max {hi}")
        return v

    @field_validator("lanes")
    @classmethod
    def _lanes_values(cls, v: Axis | None) -> Axis | None:
        if v is None:
            return v
        values = v.allowed if v.allowed is not None else [v.min, v.max]
        keys = ["allowed"] * len(values) if v.allowed is not None else ["min", "max"]
        for key, value in zip(keys, values, strict=True):
            assert value is not None
            if value < 1:
                raise ValueError(f"[{key}] {value} must be >= 1")
            if value > 4096:
                raise ValueError(f"[{key}] {value} must be <= 4096")
        lo, hi = v.values_bounds()
        if v.allowed is None and lo > hi:
            raise ValueError(f"[min] {lo} is greater than max {hi}")
        return v

    @field_validator("lane_bits")
    @classmethod
    def _lane_bits(cls, v: int) -> int:
        if not _is_pow2(v) or not 8 <= v <= 1024:
            raise ValueError(f"{v} must be a power of two in 8..1024")
        return v

    @field_validator("op_latency")
    @classmethod
    def _op_classes(cls, v: dict[str, int]) -> dict[str, int]:
        for op, cycles in v.items():
            if op not in GEM5_OP_CLASSES:
                raise ValueError(f"[{op}] not a gem5 v24 OpClass name")
            if not 1 <= cycles <= 10000:
                raise ValueError(f"[{op}] {cycles} cycles outside 1..10000")
        return v

    # -- cross-field checks; errors are raised as UarchError by _check_semantics()

    @property
    def source(self) -> Path | None:
        """The file this uarch was loaded from (None if built in memory)."""
        return self._source

    @property
    def ignores_lanes(self) -> bool:
        """True when the timing model does not depend on the number of lanes."""
        return self.timing_model == "fixed"

    def allows(self, vlen: int, lanes: int | None) -> str | None:
        """None if (vlen, lanes) is a valid point of this uarch, else the reason (one line)."""
        if isinstance(vlen, bool) or not isinstance(vlen, int):
            return f"vlen: {vlen!r} is not an integer"
        if not _is_pow2(vlen):
            return f"vlen: {vlen} is not a power of two"
        if not self.vlen.contains(vlen):
            return f"vlen: {vlen} outside the allowed {self.vlen.describe()}"
        if lanes is not None and (isinstance(lanes, bool) or not isinstance(lanes, int)):
            return f"lanes: {lanes!r} is not an integer"
        if lanes is not None and lanes < 1:
            return f"lanes: {lanes} must be >= 1"
        if self.ignores_lanes:
            return None
        if lanes is None:
            return f"lanes: required for timing_model {self.timing_model}"
        assert self.lanes is not None
        if not self.lanes.contains(lanes):
            return f"lanes: {lanes} outside the allowed {self.lanes.describe()}"
        return None

    def points(self) -> list[tuple[int, int | None]]:
        """Every allowed (vlen, lanes) point; lanes is None for uarchs that ignore lanes."""
        vlens = self._axis_values(self.vlen, pow2=True)
        if self.ignores_lanes or self.lanes is None:
            return [(v, None) for v in vlens]
        return [(v, n) for v in vlens for n in self._axis_values(self.lanes, pow2=False)]

    @staticmethod
    def _axis_values(axis: Axis, pow2: bool) -> list[int]:
        if axis.allowed is not None:
            return sorted(set(axis.allowed))
        lo, hi = axis.values_bounds()
        if pow2:
            out, v = [], lo
            while v <= hi:
                out.append(v)
                v *= 2
            return out
        return list(range(lo, hi + 1))


# ----------------------------------------------------------------------------- loading


def _display(path: Path) -> str:
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
        available = ", ".join(list_uarchs(directory)) or "none"
        raise UarchError(f"{text}: file not found (uarchs in {_display(directory)}: {available})")
    path = Path(directory) / f"{text}.yaml"
    if path.is_file():
        return path
    available = ", ".join(list_uarchs(directory)) or "none"
    raise UarchError(f"{_display(path)}: no uarch named {text!r} (available: {available})")


_UniqueKeyLoader = UniqueKeyLoader  # rejects a key given twice (sweeps/yamlkeys.py)


def _read_yaml(path: Path) -> dict[str, Any]:
    shown = _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UarchError(f"{shown}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise UarchError(f"{shown}: not UTF-8 text") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        raise UarchError(f"{shown}: YAML syntax error at {where}: {problem}") from None
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
    data = _read_yaml(path)
    parent = data.get("extends")
    if parent is None:
        return data
    shown = _display(path)
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


_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "string_type": "a string",
    "dict_type": "a mapping",
    "list_type": "a list",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "bool_type": "true or false",
}


_BOUND_WORDS = {
    "greater_than_equal": ">=",
    "greater_than": ">",
    "less_than_equal": "<=",
    "less_than": "<",
}


def _format_validation_error(shown: str, err: ValidationError) -> str:
    e = err.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in e["loc"])
    kind = e["type"]
    value = e.get("input")
    if kind == "extra_forbidden":
        msg = "unknown key"
    elif kind == "missing":
        msg = "missing required key"
    elif kind in _TYPE_WORDS:
        msg = f"expected {_TYPE_WORDS[kind]}, got {value!r}"
    elif kind == "literal_error":
        expected = e.get("ctx", {}).get("expected", "")
        msg = f"{value!r} is not one of {expected}"
    elif kind == "string_pattern_mismatch":
        msg = f"{value!r} does not look right (expected pattern {e['ctx']['pattern']})"
    elif kind in _BOUND_WORDS:
        msg = f"{value!r} must be {_BOUND_WORDS[kind]} {next(iter(e['ctx'].values()))}"
    elif kind in ("too_short", "too_long"):
        msg = f"{e['msg']} (got {value!r})"
    elif kind == "value_error":
        msg = str(e["msg"]).removeprefix("Value error, ")
    else:
        msg = f"{e['msg']} (got {value!r})"
    msg = " ".join(msg.split())
    # Our validators put a sub-key in brackets at the start of the message: "[max] ...".
    sub_key = re.match(r"^\[([^\]]+)\] (.*)$", msg)
    if sub_key:
        loc = f"{loc}.{sub_key.group(1)}" if loc else sub_key.group(1)
        msg = sub_key.group(2)
    return f"{shown}: {loc}: {msg}" if loc else f"{shown}: {msg}"


def _check_semantics(u: Uarch, shown: str, stem: str) -> None:
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
    shown = _display(path)
    data = _raw_with_parents(path)
    try:
        uarch = Uarch.model_validate(data)
    except ValidationError as err:
        raise UarchError(_format_validation_error(shown, err)) from None
    _check_semantics(uarch, shown, path.stem)
    uarch._source = path
    return uarch


def resolve(uarch: Uarch, vlen: int, lanes: int | None) -> dict[str, Any]:
    """The fully concrete resolved system of one point (the contract with configs/run.py)."""
    shown = _display(uarch.source) if uarch.source is not None else f"<uarch {uarch.name}>"
    reason = uarch.allows(vlen, lanes)
    if reason is not None:
        raise UarchError(f"{shown}: {reason}")
    lanes_model: dict[str, Any] | None = None
    if uarch.lanes_model is not None:
        lm = uarch.lanes_model
        lanes_model = {
            "startup": {g: lm.startup[g] for g in LANE_GROUPS},
            "reduce_per_level": lm.reduce_per_level,
            "permute_per_lane_hop": lm.permute_per_lane_hop,
            "queue_depth": lm.queue_depth,
            "mem_bytes_per_cycle": lm.mem_bytes_per_cycle,
            "groups": dict(sorted({**DEFAULT_LANE_GROUPS, **lm.groups}.items())),
        }
    return {
        "uarch": uarch.name,
        "vlen": vlen,
        "lanes": lanes,
        "lane_bits": uarch.lane_bits,
        "timing_model": uarch.timing_model,
        "clock": uarch.clock,
        "op_latency": dict(uarch.op_latency),
        "lanes_model": lanes_model,
        "caches": uarch.caches.model_dump(),
        "memory": uarch.memory.model_dump(),
        "lsq": uarch.lsq.model_dump(),
    }


def schema_text() -> str:
    """The JSON Schema of a uarch file, as written to configs/schema/uarch.schema.json."""
    schema = Uarch.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def export_schema(out_dir: Path = SCHEMA_DIR) -> Path:
    """Write ``out_dir/uarch.schema.json`` and return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / SCHEMA_FILE_NAME
    out.write_text(schema_text(), encoding="utf-8")
    return out


# ----------------------------------------------------------------------------- CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


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
    parser = _Parser(prog="python -m sweeps.uarch", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
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
            print(f"ok: {_display(Path(f))} ({u.timing_model}, {len(u.points())} points)")
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
        out = export_schema(Path(args.out_dir) if args.out_dir else SCHEMA_DIR)
        print(f"wrote {_display(out)}")
        return 0
    if args.cmd == "list":
        for name in list_uarchs():
            print(name)
        return 0
    return 2  # pragma: no cover (argparse rejects unknown commands)


__all__ = [
    "GEM5_OP_CLASSES",
    "UARCH_DIR",
    "Uarch",
    "UarchError",
    "effective_latency",
    "export_schema",
    "list_uarchs",
    "load_uarch",
    "resolve",
    "vl_scaled_latency",
]

if __name__ == "__main__":
    sys.exit(main())
