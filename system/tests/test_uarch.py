"""Tests of the system package: the latency formula, resolve(), error messages, extends, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from system.latency import effective_latency, vl_scaled_latency
from system.loader import UARCH_DIR, UarchError, list_uarchs, load_uarch
from system.resolved import resolve
from vecscale.vocab import GEM5_OP_CLASSES

REPO = Path(__file__).resolve().parents[2]
RESOLVED_KEYS = {
    "uarch",
    "vlen",
    "lanes",
    "lane_bits",
    "timing_model",
    "clock",
    "op_latency",
    "lanes_model",
    "caches",
    "memory",
    "lsq",
}


def _base(name: str = "broken") -> dict[str, Any]:
    """A valid vl-scaled uarch as a plain dict, named ``name``."""
    data = yaml.safe_load((UARCH_DIR / "paper-vl-scaled.yaml").read_text())
    data["name"] = name
    return data


def _write(directory: Path, data: Any, name: str = "broken") -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ----------------------------------------------------------------------------- formula


@pytest.mark.parametrize(
    ("base", "vlen", "lanes", "expected"),
    [
        (5, 8192, 8, 20),  # 5 + ceil(8192 / 512) - 1
        (5, 512, 8, 5),  # exactly one pass over 8 x 64-bit lanes
        (5, 512, 64, 5),  # physical width wider than VLEN: max(0, ...) keeps the base
        (5, 1024, 8, 6),
        (3, 2048, 16, 4),  # SimdFloatMult at 2048 bits on 16 lanes
        (4, 4096, 32, 5),  # SimdFloatReduceAdd
        (5, 8192, 64, 6),  # 64 lanes = 4096 bit/cycle: two passes
        (5, 8192, 16, 12),
        (5, 768, 8, 6),  # a partial second pass still costs a cycle (ceil)
    ],
)
def test_vl_scaled_latency_paper_numbers(base: int, vlen: int, lanes: int, expected: int) -> None:
    assert vl_scaled_latency(base, vlen, lanes) == expected


def test_vl_scaled_latency_lane_bits_and_bad_input() -> None:
    assert vl_scaled_latency(5, 2048, 8, lane_bits=32) == 5 + 8 - 1
    with pytest.raises(ValueError):
        vl_scaled_latency(5, 2048, 0)
    with pytest.raises(ValueError):
        vl_scaled_latency(-1, 2048, 8)


def test_op_class_list_is_gem5_v24() -> None:
    assert len(GEM5_OP_CLASSES) == len(set(GEM5_OP_CLASSES)) == 74
    assert GEM5_OP_CLASSES[0] == "No_OpClass" and GEM5_OP_CLASSES[-1] == "SimdConfig"
    for name in ("SimdFloatReduceAdd", "SimdUnitStrideSegmentedLoad", "MatrixOP", "SimdExt"):
        assert name in GEM5_OP_CLASSES


# ----------------------------------------------------------------------------- resolve


def test_resolve_contract_keys_and_values() -> None:
    system = resolve(load_uarch("paper-vl-scaled"), 2048, 16)
    assert set(system) == RESOLVED_KEYS
    assert system["uarch"] == "paper-vl-scaled"
    assert (system["vlen"], system["lanes"], system["lane_bits"]) == (2048, 16, 64)
    assert system["timing_model"] == "vl-scaled"
    assert system["clock"] == "2GHz"
    assert system["lanes_model"] is None
    assert system["op_latency"]["SimdFloatAdd"] == 5
    assert system["op_latency"]["SimdFloatMult"] == 3
    assert system["caches"] == {
        "l1i": {"size": "64KiB", "assoc": 8},
        "l1d": {"size": "64KiB", "assoc": 8},
        "l2": {"size": "1MiB", "assoc": 16},
    }
    assert system["memory"] == {"type": "DDR3_1600_8x8", "size": "1GiB"}
    assert system["lsq"] == {
        "max_accesses_in_memory": 16,
        "requests_queue": 4,
        "transfers_queue": 8,
        "store_buffer": 16,
    }
    assert json.loads(json.dumps(system)) == system


def test_resolve_returns_independent_dicts() -> None:
    u = load_uarch("paper-vl-scaled")
    a = resolve(u, 1024, 8)
    a["op_latency"]["SimdFloatAdd"] = 99
    a["caches"]["l1d"]["assoc"] = 1
    b = resolve(u, 1024, 8)
    assert b["op_latency"]["SimdFloatAdd"] == 5
    assert b["caches"]["l1d"]["assoc"] == 8


def test_effective_latency() -> None:
    vs = resolve(load_uarch("paper-vl-scaled"), 8192, 8)
    assert effective_latency(vs, "SimdFloatAdd") == 20
    assert effective_latency(vs, "SimdFloatMult") == 18
    assert effective_latency(vs, "FloatAdd") == 5  # scalar: never scaled
    assert effective_latency(vs, "SimdAes") is None  # not listed: stock FU latency
    fx = resolve(load_uarch("paper-fixed"), 8192, 8)
    assert effective_latency(fx, "SimdFloatAdd") == 6
    with pytest.raises(ValueError):
        effective_latency(resolve(load_uarch("vitruvius-plus"), 2048, 8), "FloatAdd")


def test_fixed_ignores_lanes() -> None:
    u = load_uarch("paper-fixed")
    assert u.ignores_lanes
    assert resolve(u, 4096, None)["lanes"] is None
    assert resolve(u, 4096, 12)["lanes"] == 12  # recorded as given
    assert resolve(u, 65536, 1000)["vlen"] == 65536
    assert u.allows(4096, 0) == "lanes: 0 must be >= 1"
    assert not load_uarch("paper-vl-scaled").ignores_lanes


@pytest.mark.parametrize(
    ("name", "vlen", "lanes", "reason"),
    [
        ("paper-vl-scaled", 16384, 8, "vlen: 16384 outside the allowed 512..8192"),
        ("paper-vl-scaled", 256, 8, "vlen: 256 outside the allowed 512..8192"),
        ("paper-vl-scaled", 3000, 8, "vlen: 3000 is not a power of two"),
        ("paper-vl-scaled", 2048, 4, "lanes: 4 outside the allowed 8..64"),
        ("paper-vl-scaled", 2048, 128, "lanes: 128 outside the allowed 8..64"),
        ("paper-vl-scaled", 2048, None, "lanes: required for timing_model vl-scaled"),
        ("vitruvius-plus", 2048, None, "lanes: required for timing_model lanes"),
        ("paper-fixed", 100, None, "vlen: 100 is not a power of two"),
        ("paper-fixed", 131072, None, "vlen: 131072 outside the allowed 128..65536"),
    ],
)
def test_disallowed_points(name: str, vlen: int, lanes: int | None, reason: str) -> None:
    u = load_uarch(name)
    assert u.allows(vlen, lanes) == reason
    with pytest.raises(UarchError) as exc:
        resolve(u, vlen, lanes)
    assert str(exc.value).endswith(f"{name}.yaml: {reason}")


def test_allows_rejects_non_integers() -> None:
    u = load_uarch("paper-vl-scaled")
    assert u.allows(2048.0, 8) is not None  # type: ignore[arg-type]
    assert u.allows(True, 8) is not None  # type: ignore[arg-type]
    assert u.allows(2048, "8") is not None  # type: ignore[arg-type]


def test_allowed_list_axes(tmp_path: Path) -> None:
    data = _base("listed")
    data["vlen"] = {"allowed": [512, 2048]}
    data["lanes"] = {"allowed": [8, 32]}
    u = load_uarch(_write(tmp_path, data, "listed"))
    assert u.points() == [(512, 8), (512, 32), (2048, 8), (2048, 32)]
    assert u.allows(1024, 8) == "vlen: 1024 outside the allowed [512, 2048]"
    assert u.allows(512, 16) == "lanes: 16 outside the allowed [8, 32]"


def test_lanes_model_resolves_groups() -> None:
    system = resolve(load_uarch("vitruvius-plus"), 4096, 32)
    lm = system["lanes_model"]
    assert set(lm) == {
        "startup",
        "reduce_per_level",
        "permute_per_lane_hop",
        "queue_depth",
        "mem_bytes_per_cycle",
        "groups",
    }
    assert lm["groups"]["SimdFloatMultAcc"] == "fma"
    assert lm["groups"]["SimdFloatReduceAdd"] == "reduce"
    assert lm["groups"]["SimdMisc"] == "permute"  # RISC-V slides and gathers
    assert "SimdUnitStrideLoad" not in lm["groups"]  # LSQ timing, not the lanes model
    assert "SimdConfig" not in lm["groups"]
    assert set(lm["groups"].values()) <= set(lm["startup"])
    assert all(op in GEM5_OP_CLASSES for op in lm["groups"])


def test_lanes_model_group_override(tmp_path: Path) -> None:
    data = yaml.safe_load((UARCH_DIR / "vitruvius-plus.yaml").read_text())
    data["name"] = "regroup"
    data["lanes_model"]["groups"] = {"SimdMisc": "arith"}
    system = resolve(load_uarch(_write(tmp_path, data, "regroup")), 1024, 8)
    assert system["lanes_model"]["groups"]["SimdMisc"] == "arith"
    assert system["lanes_model"]["groups"]["SimdFloatMult"] == "mul"


# ----------------------------------------------------------------------------- discovery


def test_list_uarchs(tmp_path: Path) -> None:
    assert {"paper-fixed", "paper-vl-scaled", "vitruvius-plus"} <= set(list_uarchs())
    _write(tmp_path, _base("b"), "b")
    _write(tmp_path, _base("a"), "a")
    (tmp_path / "notes.txt").write_text("not a uarch")
    assert list_uarchs(tmp_path) == ["a", "b"]
    assert list_uarchs(tmp_path / "missing") == []


def test_load_by_name_from_directory(tmp_path: Path) -> None:
    _write(tmp_path, _base("mine"), "mine")
    assert load_uarch("mine", directory=tmp_path).name == "mine"


def test_unknown_name_lists_available() -> None:
    with pytest.raises(UarchError) as exc:
        load_uarch("no-such-uarch")
    msg = str(exc.value)
    assert "no-such-uarch" in msg and "paper-vl-scaled" in msg and "\n" not in msg


def test_missing_path() -> None:
    with pytest.raises(UarchError, match="nowhere/x.yaml: file not found") as exc:
        load_uarch("nowhere/x.yaml")
    assert "paper-vl-scaled" in str(exc.value)
