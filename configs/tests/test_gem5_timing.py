"""The patched timing models do what they say (needs gem5; skipped with a reason without it).

Runs the vbench microbenchmark in gem5 on a sample of (uarch, VLEN, lanes) points and checks
measured cycles per instruction against each model's formula (tools/vbench.py), and against
the measured table kept in configs/data/vbench.csv (gem5 cycle counts are deterministic).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tools import vbench

pytestmark = pytest.mark.gem5

SAMPLE = [
    ("paper-fixed", 512, 8), ("paper-fixed", 8192, 8),
    ("paper-vl-scaled", 512, 8), ("paper-vl-scaled", 8192, 8), ("paper-vl-scaled", 4096, 64),
    ("vitruvius-plus", 512, 8), ("vitruvius-plus", 8192, 8), ("vitruvius-plus", 8192, 64),
]


def sample_points() -> list[dict]:
    pts = []
    for u, v, la in SAMPLE:
        pts += [p for p in vbench.points(uarchs=(u,), vlens=(v,), lanes=(la,))
                if p["op"] in ("vfadd", "vfmacc", "vfredusum")]
    return pts


@pytest.fixture(scope="module")
def rows(gem5: dict, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    work = tmp_path_factory.mktemp("vbench")
    return [vbench.run_point(gem5["path"], p, work) for p in sample_points()]


def tolerance(r: dict) -> float:
    # Independent vfredusum at one per cycle measures 1.069 (one bubble every ~14 issues in
    # Minor, not from the timing model: the same ops match within 0.2% wherever the model
    # makes them slower than one per cycle). Documented in configs/README.md.
    if r["op"] == "vfredusum" and r["dep"] == "indep" and r["predicted_cpi"] == 1.0:
        return 0.08
    return 0.05


def test_arithmetic_cpi_matches_model(rows: list[dict]) -> None:
    bad = [r for r in rows
           if abs(r["cpi"] - r["predicted_cpi"]) > tolerance(r) * r["predicted_cpi"]]
    assert not bad, "\n".join(
        f"{r['uarch']} VLEN {r['vlen']} lanes {r['lanes']} {r['op']} {r['dep']} vl={r['vl']}: "
        f"measured {r['cpi']} vs predicted {r['predicted_cpi']}" for r in bad)


def test_vl_scaled_latency_grows_with_vlen_and_shrinks_with_lanes(rows: list[dict]) -> None:
    def cpi(u: str, v: int, la: int) -> float:
        return next(r["cpi"] for r in rows if (r["uarch"], r["vlen"], r["lanes"], r["op"],
                    r["dep"], r["vl"]) == (u, v, la, "vfadd", "chain", "max"))
    assert cpi("paper-vl-scaled", 8192, 8) > cpi("paper-vl-scaled", 512, 8)
    assert cpi("paper-vl-scaled", 4096, 64) < cpi("paper-vl-scaled", 8192, 8)
    assert cpi("paper-fixed", 8192, 8) == cpi("paper-fixed", 512, 8)


def test_measured_table_is_reproduced(rows: list[dict]) -> None:
    table = Path(vbench.DATA) / "vbench.csv"
    if not table.is_file():
        pytest.skip("configs/data/vbench.csv not generated yet (python -m tools.vbench table)")
    with open(table) as f:
        stored = {(r["uarch"], int(r["vlen"]), int(r["lanes"]), r["op"], r["dep"], r["vl"]):
                  (int(r["cycles_short"]), int(r["cycles_long"])) for r in csv.DictReader(f)}
    for r in rows:
        key = (r["uarch"], r["vlen"], r["lanes"], r["op"], r["dep"], r["vl"])
        now = (r["cycles_short"], r["cycles_long"])
        assert stored.get(key) == now, f"{key}: table {stored.get(key)} now {now}"
