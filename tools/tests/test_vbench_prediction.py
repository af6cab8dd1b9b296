"""The microbenchmark's model predictions follow the formulas in gem5-patches/README.md."""

from __future__ import annotations

from system.loader import load_uarch
from system.resolved import resolve
from tools import vbench


def system(u: str, vlen: int, lanes: int) -> dict:
    return resolve(load_uarch(u), vlen, lanes)


def test_vl_scaled_matches_paper_formula() -> None:
    # SimdFloatAdd base 5: 8192-bit VL on 8 x 64-bit lanes -> 5 + 16 - 1 = 20 cycles.
    assert vbench.predicted_latency(system("paper-vl-scaled", 8192, 8), "vfadd", "max") == 20
    assert vbench.predicted_latency(system("paper-vl-scaled", 512, 8), "vfadd", "max") == 5
    assert vbench.predicted_latency(system("paper-vl-scaled", 512, 64), "vfmacc", "max") == 5


def test_fixed_ignores_vlen() -> None:
    lat = {v: vbench.predicted_latency(system("paper-fixed", v, 8), "vfmacc", "max")
           for v in (512, 8192)}
    assert lat[512] == lat[8192]


def test_lanes_model_occupancy_and_tree() -> None:
    s = system("vitruvius-plus", 8192, 8)  # 256 elems x 32 bit / 512 bit = 16 cycles
    fma = s["lanes_model"]["startup"]["fma"]
    assert vbench.predicted_latency(s, "vfmacc", "max") == fma + 16
    assert vbench.predicted_latency(s, "vfmacc", "half") == fma + 8
    red = s["lanes_model"]["startup"]["reduce"] + 16 + 3 * s["lanes_model"]["reduce_per_level"]
    assert vbench.predicted_latency(s, "vfredusum", "max") == red
    assert vbench.predicted_cpi(s, "vfmacc", "indep", "max") == 16.0


def test_grid_covers_paper_points() -> None:
    pts = vbench.points(ops=("vfadd",))
    seen = {(p["uarch"], p["vlen"], p["lanes"]) for p in pts}
    assert ("paper-vl-scaled", 8192, 64) in seen and ("vitruvius-plus", 512, 8) in seen
    assert len({p["lanes"] for p in pts if p["uarch"] == "paper-fixed"}) == 1
