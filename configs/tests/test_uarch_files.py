"""The shipped configs/uarch/*.yaml files: they load, resolve over the paper's grid, say what
the paper says, and the exported JSON Schema in configs/schema/ is current."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from system.latency import (
    effective_latency,
    occupancy,
    predicted_latency,
    vl_scaled_latency,
)
from system.loader import UARCH_DIR, list_uarchs, load_uarch
from system.model import SCHEMA_DIR, SCHEMA_FILE_NAME, schema_text
from system.resolved import resolve
from vecscale.vocab import (
    CHANNELED_MEMORY_TYPES,
    DEFAULT_LANE_GROUPS,
    GEM5_OP_CLASSES,
    MEMORY_TYPES,
)
from vecscale.vocab import VECTOR_UNIT_CLASSES as VL_SCALED_CLASSES

REPO = Path(__file__).resolve().parents[2]
SHIPPED = list_uarchs()
PAPER_VLENS = [512, 1024, 2048, 4096, 8192]
PAPER_LANES = [8, 16, 32, 64]
REQUIRED = {"paper-fixed", "paper-vl-scaled", "vitruvius-plus"}
#: uarchs of one real core, not of the paper's design space: they allow that core's VLEN and
#: lanes only (their own tests below), not the paper's grid
REAL_CORES = {n for n in SHIPPED if n.startswith("spacemit-x60")}

# The paper's base latencies (PAPER.md, from gem5's O3_ARM_v7a); Simd* ones are VL-scaled.
PAPER_BASE = {
    "SimdFloatAdd": 5,
    "SimdFloatAlu": 5,
    "SimdFloatMult": 3,
    "SimdFloatMultAcc": 5,
    "SimdFloatReduceAdd": 4,
    "FloatAdd": 5,
    "FloatCvt": 5,
    "FloatMult": 4,
    "FloatMultAcc": 5,
}


def test_required_uarchs_are_shipped() -> None:
    assert REQUIRED <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_loads_and_name_matches_stem(name: str) -> None:
    u = load_uarch(name)
    assert u.name == name
    assert u.source is not None and u.source.resolve() == (UARCH_DIR / f"{name}.yaml").resolve()


@pytest.mark.parametrize("name", sorted(set(SHIPPED) - REAL_CORES))
def test_resolves_on_paper_grid(name: str) -> None:
    u = load_uarch(name)
    for vlen in PAPER_VLENS:
        for lanes in PAPER_LANES:
            assert u.allows(vlen, lanes) is None, (name, vlen, lanes)
            system = resolve(u, vlen, lanes)
            assert system["uarch"] == name
            assert (system["vlen"], system["lanes"]) == (vlen, lanes)
            assert all(op in GEM5_OP_CLASSES for op in system["op_latency"])
            assert json.loads(json.dumps(system)) == system


@pytest.mark.parametrize("name", SHIPPED)
def test_every_declared_point_resolves(name: str) -> None:
    u = load_uarch(name)
    points = u.points()
    assert points
    for vlen, lanes in points:
        resolve(u, vlen, lanes)


def test_paper_fixed_is_stock_gem5() -> None:
    u = load_uarch("paper-fixed")
    assert u.timing_model == "fixed" and u.ignores_lanes
    assert u.vlen.min == 128 and u.vlen.max == 65536
    for vlen in [128, *PAPER_VLENS, 16384, 65536]:
        system = resolve(u, vlen, None)
        # MinorDefaultFloatSimdFU.opLat in gem5 v24.0.0.1: 6 for every class, any VLEN.
        assert set(system["op_latency"].values()) == {6}
        assert effective_latency(system, "SimdFloatMultAcc") == 6
        assert system["lanes_model"] is None


def test_paper_vl_scaled_matches_paper() -> None:
    u = load_uarch("paper-vl-scaled")
    assert u.timing_model == "vl-scaled" and u.lane_bits == 64
    assert u.op_latency == PAPER_BASE
    assert u.allows(16384, 8) is not None and u.allows(256, 8) is not None
    for vlen in PAPER_VLENS:
        for lanes in PAPER_LANES:
            system = resolve(u, vlen, lanes)
            for op, base in PAPER_BASE.items():
                passes = -(-vlen // (lanes * 64))
                expected = base + max(0, passes - 1) if op.startswith("Simd") else base
                assert effective_latency(system, op) == expected
    # Spot values: 8 lanes (512 bit/cycle) at 8192 bits is 16 passes.
    s = resolve(u, 8192, 8)
    assert effective_latency(s, "SimdFloatAdd") == 20
    assert effective_latency(s, "SimdFloatReduceAdd") == 19
    assert effective_latency(resolve(u, 4096, 64), "SimdFloatMult") == 3


def test_vitruvius_plus_lanes_model() -> None:
    u = load_uarch("vitruvius-plus")
    assert u.timing_model == "lanes" and u.lane_bits == 64
    system = resolve(u, 8192, 8)
    lm = system["lanes_model"]
    assert lm["mem_bytes_per_cycle"] == 64  # 8 x 64-bit lanes = 512 bit/cycle
    assert lm["reduce_per_level"] >= 1
    assert lm["startup"]["div"] > lm["startup"]["fma"] >= lm["startup"]["arith"]
    # Vector classes are timed by the lanes model, not by op_latency.
    assert not set(system["op_latency"]) & VL_SCALED_CLASSES


#: SpacemiT X60 latencies at e32 m1 measured on a BPI-F3 (LLVM's RISCVSchedSpacemitX60.td,
#: the numbers configs/uarch/spacemit-x60.yaml cites): vector class -> cycles
X60_M1_LATENCY = {"SimdFloatAdd": 4, "SimdFloatMult": 4, "SimdFloatMultAcc": 5,
                  "SimdFloatDiv": 40, "SimdFloatReduceAdd": 15, "SimdMisc": 4, "SimdAdd": 4}


def test_spacemit_x60_is_the_bpi_f3_core() -> None:
    u = load_uarch("spacemit-x60")
    assert u.points() == [(256, 1), (256, 2)]
    s = resolve(u, 256, 2)
    assert (s["timing_model"], s["lane_bits"], s["clock"]) == ("lanes", 128, "1.6GHz")
    for op, cycles in X60_M1_LATENCY.items():  # an e32 m1 op: 8 elements, one cycle busy
        assert occupancy(8, 32, 2, 128) == 1
        assert predicted_latency(s, op, 8) == cycles, op
    # LMUL 8 is eight micro-ops of one cycle each: the measured 8-cycle vfmacc throughput
    assert 8 * occupancy(8, 32, 2, 128) == 8
    assert s["op_latency"]["FloatMultAcc"] == 5 and s["op_latency"]["FloatAdd"] == 4
    assert s["caches"] == {"l1i": {"size": "32KiB", "assoc": 4},
                           "l1d": {"size": "32KiB", "assoc": 4},
                           "l2": {"size": "512KiB", "assoc": 16}}
    assert s["memory"]["type"] in CHANNELED_MEMORY_TYPES
    core = s["core"]
    assert (core["decode_width"], core["issue_limit"], core["int_alus"]) == (2, 2, 2)
    assert core["memory_width"] == s["lanes_model"]["mem_bytes_per_cycle"] == 16
    # one 128-bit unit (lanes 1): half the FP throughput, the same m1 latencies
    s1 = resolve(u, 256, 1)
    assert occupancy(8, 32, 1, 128) == 2
    assert predicted_latency(s1, "SimdFloatReduceAdd", 8) == 15


def _flat(d: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


#: the sensitivity variants of the X60 (sweeps/bpi-f3.yaml): what each changes, nothing else
X60_VARIANTS = {
    "spacemit-x60-1issue": {"core.decode_width": 1, "core.execute_input_width": 1,
                            "core.issue_limit": 1, "core.commit_limit": 1, "core.int_alus": 1},
    "spacemit-x60-fastred": {"lanes_model.startup.reduce": 2},
    "spacemit-x60-ddr3": {"memory.type": "DDR3_1600_8x8"},
    "spacemit-x60-mem64": {"core.memory_width": 64, "lanes_model.mem_bytes_per_cycle": 64},
}


@pytest.mark.parametrize("name", sorted(X60_VARIANTS))
def test_spacemit_x60_variants_change_one_thing(name: str) -> None:
    base = _flat(resolve(load_uarch("spacemit-x60"), 256, 2))
    variant = _flat(resolve(load_uarch(name), 256, 2))
    changed = {k: v for k, v in variant.items() if base.get(k) != v}
    assert changed == {"uarch": name, **X60_VARIANTS[name]}
    assert set(variant) == set(base)
    assert REAL_CORES == {"spacemit-x60", *X60_VARIANTS}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_same_memory_system_as_paper(name: str) -> None:
    system = resolve(load_uarch(name), 2048, 16)
    assert system["clock"] == "2GHz"
    assert system["caches"]["l1d"]["size"] == "64KiB"
    assert system["caches"]["l2"]["size"] == "1MiB"
    assert system["memory"]["type"] == "DDR3_1600_8x8"


def test_shipped_memory_types_are_mapped_by_run_py() -> None:
    """run.py builds the memory MEMORY_TYPES names for each type (test_run_py.py builds
    every one with gem5's modules stood in)."""
    run_py = (REPO / "configs" / "run.py").read_text()
    assert "getattr(single_channel, MEMORY_TYPES[" in run_py
    assert "ChanneledMemory(getattr(interfaces, kind)" in run_py
    for name in SHIPPED:
        u = load_uarch(name)
        memory = resolve(u, *u.points()[0])["memory"]["type"]
        assert memory in MEMORY_TYPES or memory in CHANNELED_MEMORY_TYPES, name


@pytest.mark.parametrize("name", SHIPPED)
def test_yaml_points_editors_at_schema(name: str) -> None:
    text = (UARCH_DIR / f"{name}.yaml").read_text()
    if "extends" in yaml.safe_load(text):
        pytest.skip("files using extends do not validate on their own")
    first = text.splitlines()[0]
    assert first == f"# yaml-language-server: $schema=../schema/{SCHEMA_FILE_NAME}"


def test_exported_schema_is_current() -> None:
    path = SCHEMA_DIR / SCHEMA_FILE_NAME
    assert path.is_file(), "run: python -m system export-schema"
    assert path.read_text() == schema_text(), "stale: run python -m system export-schema"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_validate_against_exported_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMA_DIR / SCHEMA_FILE_NAME).read_text())
    data = yaml.safe_load((UARCH_DIR / f"{name}.yaml").read_text())
    if "extends" in data:
        pytest.skip("files using extends do not validate on their own")
    jsonschema.validate(data, schema)


def test_schema_rejects_what_the_loader_rejects() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMA_DIR / SCHEMA_FILE_NAME).read_text())
    data = yaml.safe_load((UARCH_DIR / "paper-vl-scaled.yaml").read_text())
    for key, value in [("timing_model", "magic"), ("clock", "fast"), ("bogus", 1)]:
        broken = dict(data, **{key: value})
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_formula_helper() -> None:
    assert vl_scaled_latency(5, 8192, 8) == 20


def test_op_classes_match_gem5_source() -> None:
    """Compare with src/cpu/FuncUnit.py of a gem5 checkout named by GEM5_SRC."""
    root = os.environ.get("GEM5_SRC")
    if not root:
        pytest.skip("set GEM5_SRC to a gem5 v24.0.0.1 source tree to compare op classes")
    text = (Path(root) / "src" / "cpu" / "FuncUnit.py").read_text()
    block = re.search(r"class OpClass\(Enum\):\s*vals = \[(.*?)\]", text, re.S)
    assert block
    names = re.findall(r'"([A-Za-z0-9_]+)"', block.group(1))
    assert tuple(names) == GEM5_OP_CLASSES


def test_lane_groups_cover_the_classes_the_patch_times() -> None:
    """DEFAULT_LANE_GROUPS must name exactly the classes VecTiming::unitOf() gives a unit."""
    patches = sorted((REPO / "gem5-patches").glob("*vector-length-aware-timing*.patch"))
    if not patches:
        pytest.skip("gem5-patches/ has no vector timing patch")
    text = patches[0].read_text()
    body = re.search(r"VecTiming::unitOf\(OpClass c\)(.*?)default:", text, re.S)
    assert body, "VecTiming::unitOf() not found in the patch"
    timed = set(re.findall(r"enums::(\w+)", body.group(1)))
    assert timed == set(DEFAULT_LANE_GROUPS)
    # Alternating [cases, unit, cases, unit, ...]: the cases before each "return Unit...".
    parts = re.split(r"return (Unit\w+);", body.group(1))
    slide_ops = [
        op
        for cases, unit in zip(parts[0::2], parts[1::2], strict=False)
        if unit == "UnitSldu"
        for op in re.findall(r"enums::(\w+)", cases)
    ]
    assert slide_ops
    for op in slide_ops:
        assert DEFAULT_LANE_GROUPS[op] == "permute", op
