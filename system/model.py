"""A uarch file's model: the keys of configs/uarch/*.yaml, their types and the checks of one
key at a time (pydantic), and the JSON Schema exported from it for editors.

Cross-key checks, `extends` and the one-line errors are loader.py's; configs/README.md
describes the file format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from vecscale.vocab import (
    ALL_MEMORY_TYPES,
    DEFAULT_LANE_GROUPS,
    GEM5_OP_CLASSES,
    LANE_FREE_TIMING_MODELS,
    LANE_GROUPS,
    MEM_BYTES_PER_CYCLE,
    MINOR_CORE_PARAMS,
    STOCK_INT_ALUS,
    TIMING_MODELS,
)

REPO_ROOT: Path = Path(__file__).resolve().parent.parent
SCHEMA_DIR: Path = REPO_ROOT / "configs" / "schema"
SCHEMA_FILE_NAME = "uarch.schema.json"

VLEN_MIN = 128
VLEN_MAX = 65536

_SIZE_PATTERN = r"^[1-9][0-9]*(B|KiB|MiB|GiB|kB|MB|GB)$"
_CLOCK_PATTERN = r"^[1-9][0-9]*(\.[0-9]+)?(GHz|MHz|kHz|Hz)$"


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _known_op_class(op: str) -> None:
    if op not in GEM5_OP_CLASSES:
        raise ValueError(f"[{op}] not a gem5 v24 OpClass name")



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

    def keyed(self) -> list[tuple[str, int]]:
        """(key, value) of every bound or allowed value, the key for error messages."""
        if self.allowed is not None:
            return [("allowed", v) for v in self.allowed]
        assert self.min is not None and self.max is not None
        return [("min", self.min), ("max", self.max)]

    def in_order(self) -> Axis:
        """Itself, unless min is greater than max."""
        lo, hi = self.values_bounds()
        if self.allowed is None and lo > hi:
            raise ValueError(f"[min] {lo} is greater than max {hi}")
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
    type: Literal[ALL_MEMORY_TYPES] = Field(  # type: ignore[valid-type]
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
        description="vector memory bytes per cycle: the Minor LSQ's data interface width "
        f"(core.memory_width, {MEM_BYTES_PER_CYCLE} = one cache line unless the uarch sets "
        "it), one fragment per cycle; a power of two in 8..64 equal to core.memory_width"
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
        return _memory_width(v)

    @field_validator("groups")
    @classmethod
    def _group_keys(cls, v: dict[str, str]) -> dict[str, str]:
        for op, group in v.items():
            _known_op_class(op)
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


def _memory_width(v: int) -> int:
    if not is_pow2(v) or not 8 <= v <= MEM_BYTES_PER_CYCLE:
        raise ValueError(
            f"{v} must be a power of two in 8..{MEM_BYTES_PER_CYCLE} (the Minor LSQ's data "
            "interface: at most one cache line per cycle)"
        )
    return v


def _width(description: str) -> Any:
    return Field(default=None, ge=1, le=8, description=description)


class Core(_Strict):
    """The Minor pipeline's widths and limits and its integer ALU count. Every key is
    optional: an unset key keeps gem5's stock value (vecscale.vocab.MINOR_CORE_PARAMS,
    STOCK_INT_ALUS); a uarch without `core` leaves the whole pipeline stock."""

    decode_width: StrictInt | None = _width("instructions decoded per cycle (decodeInputWidth)")
    execute_input_width: StrictInt | None = _width(
        "instructions entering Execute per cycle (executeInputWidth)")
    issue_limit: StrictInt | None = _width("instructions issued per cycle (executeIssueLimit)")
    memory_issue_limit: StrictInt | None = _width(
        "memory instructions issued per cycle (executeMemoryIssueLimit); <= issue_limit")
    commit_limit: StrictInt | None = _width(
        "instructions committed per cycle (executeCommitLimit)")
    memory_commit_limit: StrictInt | None = _width(
        "memory instructions committed per cycle (executeMemoryCommitLimit); <= commit_limit")
    memory_width: StrictInt | None = Field(
        default=None,
        description="bytes per LSQ transfer (executeMemoryWidth): the LSQ splits accesses "
        "at this width and sends one fragment per cycle; a power of two in 8..64",
    )
    int_alus: StrictInt | None = Field(
        default=None, ge=1, le=8,
        description=f"integer ALUs in the FU pool (MinorDefaultIntFU; stock {STOCK_INT_ALUS})",
    )

    @field_validator("memory_width")
    @classmethod
    def _mem_width(cls, v: int | None) -> int | None:
        return v if v is None else _memory_width(v)

    def resolved(self) -> dict[str, int]:
        """Every key with its value, gem5's stock value where the file gives none."""
        out = {k: getattr(self, k) if getattr(self, k) is not None else stock
               for k, (_, stock) in MINOR_CORE_PARAMS.items()}
        out["int_alus"] = self.int_alus if self.int_alus is not None else STOCK_INT_ALUS
        return out


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
    timing_model: Literal[TIMING_MODELS]  # type: ignore[valid-type]
    clock: StrictStr = Field(pattern=_CLOCK_PATTERN, description="core clock, e.g. 2GHz")
    op_latency: dict[StrictStr, StrictInt] = Field(
        description="gem5 OpClass -> base latency in cycles; unlisted classes keep gem5's stock "
        "MinorCPU FU latency"
    )
    lanes_model: LanesModel | None = None
    core: Core | None = Field(
        default=None,
        description="Minor pipeline widths, limits and integer ALUs (optional; absent: gem5's "
        "stock MinorCPU, dual issue)",
    )
    caches: Caches
    memory: Memory
    lsq: Lsq

    _source: Path | None = PrivateAttr(default=None)

    @field_validator("vlen")
    @classmethod
    def _vlen_values(cls, v: Axis) -> Axis:
        for key, value in v.keyed():
            if not is_pow2(value):
                raise ValueError(f"[{key}] {value} is not a power of two")
            if not VLEN_MIN <= value <= VLEN_MAX:
                raise ValueError(f"[{key}] {value} outside {VLEN_MIN}..{VLEN_MAX}")
        return v.in_order()

    @field_validator("lanes")
    @classmethod
    def _lanes_values(cls, v: Axis | None) -> Axis | None:
        if v is None:
            return v
        for key, value in v.keyed():
            if value < 1:
                raise ValueError(f"[{key}] {value} must be >= 1")
            if value > 4096:
                raise ValueError(f"[{key}] {value} must be <= 4096")
        return v.in_order()

    @field_validator("lane_bits")
    @classmethod
    def _lane_bits(cls, v: int) -> int:
        if not is_pow2(v) or not 8 <= v <= 1024:
            raise ValueError(f"{v} must be a power of two in 8..1024")
        return v

    @field_validator("op_latency")
    @classmethod
    def _op_classes(cls, v: dict[str, int]) -> dict[str, int]:
        for op, cycles in v.items():
            _known_op_class(op)
            if not 1 <= cycles <= 10000:
                raise ValueError(f"[{op}] {cycles} cycles outside 1..10000")
        return v

    # -- cross-key checks are loader.check_cross_keys(): their errors name the file

    @property
    def source(self) -> Path | None:
        """The file this uarch was loaded from (None if built in memory)."""
        return self._source

    @property
    def ignores_lanes(self) -> bool:
        """True when the timing model does not depend on the number of lanes."""
        return self.timing_model in LANE_FREE_TIMING_MODELS

    def allows(self, vlen: int, lanes: int | None) -> str | None:
        """None if (vlen, lanes) is a valid point of this uarch, else the reason (one line)."""
        if isinstance(vlen, bool) or not isinstance(vlen, int):
            return f"vlen: {vlen!r} is not an integer"
        if not is_pow2(vlen):
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
