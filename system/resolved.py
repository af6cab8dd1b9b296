"""The resolved system of one (uarch, VLEN, lanes) point: every number configs/run.py needs
to build the simulated machine, written into run.json under `system`.

This dict is the contract between the host and gem5's side (configs/README.md, "The
resolved system"): exactly the keys of ResolvedSystem, JSON-ready, no defaults left for
run.py to fill in. A run's id hashes the part of it the kernel depends on (identity_view).
"""

from __future__ import annotations

from typing import TypedDict

try:
    from typing import NotRequired
except ImportError:  # Python 3.10 (pydantic brings typing_extensions)
    from typing_extensions import NotRequired

from system.loader import UarchError, display
from system.model import Uarch
from vecscale.vocab import DEFAULT_LANE_GROUPS, LANE_FREE_TIMING_MODELS, LANE_GROUPS


class CacheRecord(TypedDict):
    size: str  # gem5 size string, e.g. "64KiB"
    assoc: int


class CachesRecord(TypedDict):
    l1i: CacheRecord
    l1d: CacheRecord
    l2: CacheRecord


class MemoryRecord(TypedDict):
    type: str  # one of vecscale.vocab.ALL_MEMORY_TYPES
    size: str


class LsqRecord(TypedDict):
    max_accesses_in_memory: int
    requests_queue: int
    transfers_queue: int
    store_buffer: int


class LanesModelRecord(TypedDict):
    startup: dict[str, int]  # every group of LANE_GROUPS
    reduce_per_level: int
    permute_per_lane_hop: int
    queue_depth: int
    mem_bytes_per_cycle: int
    groups: dict[str, str]  # the full op class -> group mapping, overrides applied


class CoreRecord(TypedDict):
    """Every key of vecscale.vocab.MINOR_CORE_PARAMS, and int_alus."""

    decode_width: int
    execute_input_width: int
    issue_limit: int
    memory_issue_limit: int
    commit_limit: int
    memory_commit_limit: int
    memory_width: int  # bytes per LSQ transfer (executeMemoryWidth)
    int_alus: int


class ResolvedSystem(TypedDict):
    uarch: str
    vlen: int
    lanes: int | None  # None: a fixed-latency uarch resolved without lanes
    lane_bits: int
    timing_model: str  # one of vecscale.vocab.TIMING_MODELS
    clock: str
    op_latency: dict[str, int]  # gem5 OpClass -> base latency; unlisted classes stock
    lanes_model: LanesModelRecord | None  # only for timing_model lanes
    caches: CachesRecord
    memory: MemoryRecord
    lsq: LsqRecord
    # only when the uarch has a `core` block, so that the record (and the run id) of a uarch
    # without one is what it was before the key existed; run.py leaves the pipeline stock
    core: NotRequired[CoreRecord]


#: keys only vector code depends on: left out of a scalar kernel's run identity
VECTOR_KEYS = ("uarch", "vlen", "lanes", "lane_bits", "timing_model", "lanes_model")


def resolve(uarch: Uarch, vlen: int, lanes: int | None) -> ResolvedSystem:
    """The fully concrete resolved system of one point; UarchError for a point the uarch
    does not allow."""
    shown = display(uarch.source) if uarch.source is not None else f"<uarch {uarch.name}>"
    reason = uarch.allows(vlen, lanes)
    if reason is not None:
        raise UarchError(f"{shown}: {reason}")
    lanes_model: LanesModelRecord | None = None
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
    system: ResolvedSystem = {
        "uarch": uarch.name,
        "vlen": vlen,
        "lanes": lanes,
        "lane_bits": uarch.lane_bits,
        "timing_model": uarch.timing_model,
        "clock": uarch.clock,
        "op_latency": dict(uarch.op_latency),
        "lanes_model": lanes_model,
        "caches": uarch.caches.model_dump(),  # type: ignore[typeddict-item]
        "memory": uarch.memory.model_dump(),  # type: ignore[typeddict-item]
        "lsq": uarch.lsq.model_dump(),  # type: ignore[typeddict-item]
    }
    if uarch.core is not None:
        system["core"] = uarch.core.resolved()  # type: ignore[typeddict-item]
    return system


def identity_view(system: ResolvedSystem, vector: bool) -> dict:
    """The part of a resolved system a kernel's result depends on. A scalar kernel keeps
    the machine around the core (caches, memory, clock, scalar latencies), so two uarchs
    that agree there share its run; a vector kernel drops the uarch's name, and under a
    timing model that ignores lanes also the lane count and width."""
    lanes_ignored = system["timing_model"] in LANE_FREE_TIMING_MODELS
    s: dict = dict(system)
    if not vector:
        for k in VECTOR_KEYS:
            s.pop(k, None)
        s["op_latency"] = {k: v for k, v in s["op_latency"].items() if not k.startswith("Simd")}
        return s
    for k in ("uarch", *(("lanes", "lane_bits") if lanes_ignored else ())):
        s.pop(k, None)
    return s
