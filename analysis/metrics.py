"""The metrics of one run's row: shapes, FLOPs and compulsory bytes from its axes and
result, cycles and vector statistics from its ROI stats dump, and what is derived from
them (FLOP/cycle, share of the lanes' peak). Formulas: analysis/README.md."""

from __future__ import annotations

import math
import re
from typing import Any

from vecscale.vocab import SIMD_CLASSES, VECTOR_UNIT_CLASSES
from workloads.kernels import Q8, family_of
from workloads.models import ModelsError, load_models

from .stats import Dump, parse_text, region_dumps

#: column prefix -> the cache's stat group, tried in order: the standard library's board
#: (configs/run.py), then the classic se.py names
CACHES = {"l1d": ("board.cache_hierarchy.l1dcaches", "system.cpu.dcache"),
          "l2": ("board.cache_hierarchy.l2cache", "system.l2cache")}
ELEM_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp64": 8}
ELEM_BITS = {k: 8 * v for k, v in ELEM_BYTES.items()}
Q8_BLOCK = 32  # int8 values per block_q8_0
Q8_BLOCK_BYTES = 34  # fp16 scale + 32 int8


CLOCK = re.compile(r"^\s*([0-9.]+)\s*([kMG]?)Hz\s*$")
CLOCK_UNIT = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def clock_hz(text: Any) -> float:
    """gem5's clock string ("2GHz") in Hz; NaN when it is not one."""
    m = CLOCK.match(str(text)) if text is not None else None
    return float(m.group(1)) * CLOCK_UNIT[m.group(2)] if m else math.nan


def num(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def attention_flops(phase: str, heads: float, head_dim: float, n: float, l_: float) -> float:
    """4*heads*D per (query, key) pair: QK^T and PV, a multiply and an add each."""
    if phase == "prefill":
        pairs = n * (n + 1) / 2  # causal: query i sees keys 0..i
    elif phase == "decode":
        pairs = l_
    else:
        return math.nan
    return 4.0 * heads * head_dim * pairs


def attention_bytes(phase: str, heads: float, kv_heads: float, head_dim: float, n: float,
                    l_: float, esize: float) -> float:
    """Compulsory traffic: read Q, K, V once, write O once."""
    if phase == "prefill":
        return esize * head_dim * (2 * n * heads + 2 * n * kv_heads)
    if phase == "decode":
        return esize * head_dim * (2 * heads + 2 * l_ * kv_heads)
    return math.nan


def q8_bytes(rows: float, cols: float) -> float:
    """Q8_0 weights and activations (34 bytes per 32 values) in, fp32 outputs out."""
    blocks = cols / Q8_BLOCK
    return rows * blocks * Q8_BLOCK_BYTES + blocks * Q8_BLOCK_BYTES + rows * 4


def pick(key: str, *sources: dict[str, Any], default: Any = None) -> Any:
    """The first value of key that is not None (axes hold None for unused axes)."""
    for s in sources:
        v = s.get(key)
        if v is not None:
            return v
    return default


def shape_metrics(axes: dict[str, Any], result: dict[str, Any]) -> dict[str, float]:
    kernel = str(pick("kernel", axes, result, default=""))
    workload = str(result.get("workload") or family_of(kernel))
    precision = str(pick("precision", axes, result, default="fp32"))
    out: dict[str, float] = {}
    if workload == Q8.name:
        rows, cols = num(pick("rows", result, axes)), num(pick("cols", result, axes))
        out["flops"] = 2.0 * rows * cols
        out["bytes_min"] = q8_bytes(rows, cols)
        return out
    model = _models().get(str(pick("model", axes, result, default="")), {})
    if workload == "layer":
        return layer_shape(axes, result, model)
    heads = num(pick("heads", result, model))
    kv = num(pick("kv_heads", result, model))
    d = num(pick("head_dim", result, model))
    phase = str(pick("phase", axes, result, default=""))
    n = num(pick("n", result, axes))
    l_ = num(pick("l", result, axes))
    out["flops"] = attention_flops(phase, heads, d, n, l_)
    out["bytes_min"] = attention_bytes(phase, heads, kv, d, n, l_,
                                       ELEM_BYTES.get(precision, math.nan))
    return out


#: per-run counters that add up over consecutive dumps (a layer's sublayers); the rest of a
#: dump's metrics (ratios, flags) are not kept for a multi-dump region
ADDITIVE = ("cycles", "sim_ticks", "sim_seconds", "host_seconds", "insts", "ops", "vec_uops_total",
            "l1d_accesses", "l1d_misses", "l2_accesses", "l2_misses", "vec_busy_total",
            "vec_elems_total", "vec_timing_uops_total", "vec_timing_uops_arith",
            "vec_elems_arith", "vec_wait_total", "vec_element_bits",
            *(f"vec_uops_{c}" for c in SIMD_CLASSES), *(f"vec_busy_{c}" for c in SIMD_CLASSES))
#: what each sublayer of a multi-dump region keeps as its own column, sub_<name>_<metric>
SUB_METRICS = ("cycles", "insts", "vec_uops_total", "vec_busy_total", "l1d_misses")


def regions_of(result: dict[str, Any]) -> tuple[str, ...]:
    """The ROI's regions of a workload that dumps once per region (the layer's sublayers, in
    dump order), else ()."""
    subs = result.get("sublayers")
    if isinstance(subs, list) and subs and all(isinstance(x, str) for x in subs):
        return tuple(subs)
    return ()


def layer_shape(axes: dict[str, Any], result: dict[str, Any], model: dict[str, Any]
                ) -> dict[str, float]:
    """A decoder layer's FLOPs (its Q8_0 matrix products, 2 per weight per token, and
    attention) and compulsory bytes (the Q8_0 weights read once, attention's). The FFN has
    three matrices (gate, up, down), a GPT-NeoX block's two (no gate)."""
    h, i = num(pick("hidden", result, model)), num(pick("intermediate", result, model))
    heads, kv = num(pick("heads", result, model)), num(pick("kv_heads", result, model))
    d = num(pick("head_dim", result, model))
    phase = str(pick("phase", axes, result, default=""))
    n, l_ = num(pick("n", result, axes)), num(pick("l", result, axes))
    tokens = n if phase == "prefill" else 1.0
    ffn = 2 if pick("arch", result, model) == "gptneox" else 3
    weights = h * heads * d * 2 + 2 * h * kv * d + ffn * h * i  # q and o, k and v, the FFN
    return {"flops": 2.0 * weights * tokens + attention_flops(phase, heads, d, n, l_),
            "bytes_min": weights / Q8_BLOCK * Q8_BLOCK_BYTES
            + attention_bytes(phase, heads, kv, d, n, l_, ELEM_BYTES["fp32"])}


def stats_metrics(text: str, source: str, roi: int, roi_only: bool = False,
                  regions: tuple[str, ...] = ()) -> dict[str, Any]:
    """The metrics of the ROI dump; with `regions` (a layer's sublayers, one dump each from
    `roi` on), their sums, and each region's SUB_METRICS as columns of its own."""
    dumps = parse_text(text, source)
    region = region_dumps(dumps, source, roi, max(1, len(regions)), roi_only)
    if not regions:
        return {"n_dumps": len(dumps), **dump_metrics(region[0])}
    per = [dump_metrics(d) for d in region]
    m: dict[str, Any] = {"n_dumps": len(dumps), "has_vec_timing": per[0]["has_vec_timing"]}
    for key in ADDITIVE:
        if all(key in one for one in per):
            m[key] = sum(one[key] for one in per)
    for name, one in zip(regions, per, strict=True):
        for key in SUB_METRICS:
            m[f"sub_{name}_{key}"] = one.get(key, math.nan)
    return m


def dump_metrics(d: Dump) -> dict[str, Any]:
    """Cycles, instruction mix, caches and the timing patch's vector statistics of one dump."""
    m: dict[str, Any] = {}
    cpu = d.cpu()
    m["cycles"] = d.get(f"{cpu}.numCycles")
    ticks, freq = d.get("simTicks", math.nan), d.get("simFreq", math.nan)
    m["sim_ticks"] = ticks
    m["sim_seconds"] = ticks / freq if freq and math.isfinite(freq) else d.get(
        "simSeconds", math.nan)
    m["host_seconds"] = d.get("hostSeconds", math.nan)
    m["insts"] = d.get(f"{cpu}.commitStats0.numInsts")
    m["ops"] = d.get(f"{cpu}.commitStats0.numOps")
    itype = d.vector(f"{cpu}.commitStats0.committedInstType")
    tot = 0.0
    for c in SIMD_CLASSES:
        v = itype.get(c, 0.0)
        m[f"vec_uops_{c}"] = v
        tot += v
    m["vec_uops_total"] = tot
    for col, groups in CACHES.items():
        for g in groups:
            if d.has(f"{g}.demandAccesses::total"):
                m[f"{col}_accesses"] = d.get(f"{g}.demandAccesses::total")
                m[f"{col}_misses"] = d.get(f"{g}.demandMisses::total")  # nozero
                break
    vt = f"{cpu}.vecTiming."
    has_vt = d.has_prefix(vt)
    m["has_vec_timing"] = has_vt
    if has_vt:
        busy = d.vector(vt + "busyCycles")
        for c in SIMD_CLASSES:
            m[f"vec_busy_{c}"] = busy.get(c, 0.0)
        m["vec_busy_total"] = busy.get("total", sum(v for k, v in busy.items() if k != "total"))
        elems = d.vector(vt + "elements")
        m["vec_elems_total"] = elems.get(
            "total", sum(v for k, v in elems.items() if k != "total"))
        uops = d.vector(vt + "microOps")
        m["vec_timing_uops_total"] = uops.get(
            "total", sum(v for k, v in uops.items() if k != "total"))
        # elementBits covers the arithmetic classes only: their micro-ops and elements too
        m["vec_timing_uops_arith"] = sum(v for k, v in uops.items() if k in VECTOR_UNIT_CLASSES)
        m["vec_elems_arith"] = sum(v for k, v in elems.items() if k in VECTOR_UNIT_CLASSES)
        m["vec_element_bits"] = d.get(vt + "elementBits")  # absent reads as 0
        wait = d.vector(vt + "waitCycles")
        m["vec_wait_total"] = wait.get("total", sum(v for k, v in wait.items() if k != "total"))
        m["lane_util"] = d.get(vt + "laneUtilization")  # nozero: absent means 0
    return m


def _models() -> dict[str, dict[str, int]]:
    """workloads/models.yaml (empty when unreadable: shapes then come from result.json)."""
    try:
        return load_models()
    except ModelsError:
        return {}


def derived(row: dict[str, Any], axes: dict[str, Any], system: dict[str, Any],
            result: dict[str, Any]) -> dict[str, float]:
    """FLOP/cycle, FLOP/byte and the share of the lanes' FMA peak of a row with cycles,
    flops and bytes_min."""
    cycles = num(row.get("cycles"))
    out = {"flop_per_cycle": row["flops"] / cycles if cycles and cycles > 0 else math.nan,
           "flop_per_byte": row["flops"] / row["bytes_min"] if row.get("bytes_min")
           else math.nan}
    lanes = num(pick("lanes", axes, system))
    ebits = ELEM_BITS.get(str(pick("precision", axes, result, default="fp32")), math.nan)
    peak = lanes * row["lane_bits"] / ebits * 2 if row["workload"] != Q8.name else math.nan
    out["peak_flop_per_cycle"] = peak
    out["peak_share"] = out["flop_per_cycle"] / peak if peak and peak > 0 else math.nan
    return out
