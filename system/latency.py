"""What the timing models of gem5-patches/ predict for one vector micro-op.

    fixed      L = base                                   (stock 6 when op_latency omits it)
    vl-scaled  L = base + max(0, ceil(VLEN / (lanes x lane_bits)) - 1)   (the paper's)
    lanes      L = startup[group] + occupancy (+ per-level costs for reductions, slides)
               occupancy = ceil(vl x SEW / (lanes x lane_bits)) cycles the unit is busy

Pipelined in the first two (latency grows, occupancy does not); the lanes model holds its
unit for `occupancy` cycles. Standard library only: the analysis and the tools use it too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vecscale.vocab import STOCK_FLOAT_SIMD_LATENCY, VECTOR_UNIT_CLASSES


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


def occupancy(active_elems: int, sew: int, lanes: int, lane_bits: int = 64) -> int:
    """Cycles the lanes model keeps a unit busy with one micro-op of `active_elems` elements
    of `sew` bits: ceil(vl x SEW / (lanes x lane_bits))."""
    return math.ceil(active_elems * sew / (lanes * lane_bits))


def effective_latency(system: Mapping[str, Any], op_class: str) -> int | None:
    """Latency in cycles of a full-VLEN op of ``op_class`` in a resolved system, for the
    ``fixed`` and ``vl-scaled`` models; None when the class is not in ``op_latency`` (it then
    keeps gem5's stock FU latency). The ``lanes`` model depends on vl and SEW at run time and
    is not covered here."""
    base = system["op_latency"].get(op_class)
    if base is None:
        return None
    if system["timing_model"] == "vl-scaled" and op_class in VECTOR_UNIT_CLASSES:
        return vl_scaled_latency(base, system["vlen"], system["lanes"], system["lane_bits"])
    if system["timing_model"] == "lanes":
        raise ValueError("effective_latency: the lanes model has no static per-class latency")
    return base


def predicted_latency(system: Mapping[str, Any], op_class: str, active_elems: int,
                      sew: int = 32) -> int:
    """Result latency of one micro-op of a vector-unit class with `active_elems` elements, as
    the resolved system's timing model computes it (a class op_latency omits has the stock
    FloatSimd latency)."""
    lanes = int(system.get("lanes") or 1)
    lane_bits = int(system.get("lane_bits") or 64)
    if system["timing_model"] != "lanes":
        base = int(system["op_latency"].get(op_class, STOCK_FLOAT_SIMD_LATENCY))
        if system["timing_model"] == "vl-scaled":
            return vl_scaled_latency(base, system["vlen"], lanes, lane_bits)
        return base
    lm = system["lanes_model"]
    lat = int(lm["startup"][lm["groups"][op_class]]) + occupancy(active_elems, sew, lanes,
                                                                 lane_bits)
    if op_class.startswith(("SimdFloatReduce", "SimdReduce")):
        lat += int(lm["reduce_per_level"]) * int(math.log2(lanes))
    if op_class == "SimdMisc":
        lat += int(lm["permute_per_lane_hop"]) * int(math.log2(lanes))
    return lat
