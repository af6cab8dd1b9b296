"""The optional `core` block (Minor's pipeline widths, limits, integer ALUs and LSQ data
width) and the channeled memory types: they resolve completely, and a uarch without them
resolves exactly as before they existed (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from system.loader import UarchError, list_uarchs, load_uarch
from system.resolved import resolve
from system.tests.test_uarch import RESOLVED_KEYS, _base, _write
from vecscale.vocab import ALL_MEMORY_TYPES, CHANNELED_MEMORY_TYPES, MINOR_CORE_PARAMS

STOCK = {"decode_width": 2, "execute_input_width": 2, "issue_limit": 2,
         "memory_issue_limit": 1, "commit_limit": 2, "memory_commit_limit": 1,
         "memory_width": 64, "int_alus": 2}


def test_stock_values_are_gem5s() -> None:
    """src/cpu/minor/BaseMinorCPU.py of v24.0.0.1 (executeMemoryWidth 0 = the 64-byte line)."""
    assert {k: stock for k, (_, stock) in MINOR_CORE_PARAMS.items()} | {"int_alus": 2} == STOCK
    assert {param for param, _ in MINOR_CORE_PARAMS.values()} == {
        "decodeInputWidth", "executeInputWidth", "executeIssueLimit",
        "executeMemoryIssueLimit", "executeCommitLimit", "executeMemoryCommitLimit",
        "executeMemoryWidth"}


@pytest.mark.parametrize("name", [n for n in list_uarchs() if not n.startswith("spacemit")])
def test_uarchs_without_core_resolve_without_it(name: str) -> None:
    u = load_uarch(name)
    assert u.core is None
    vlen, lanes = u.points()[0]
    assert set(resolve(u, vlen, lanes)) == RESOLVED_KEYS


def test_empty_core_is_stock_minor(tmp_path: Path) -> None:
    u = load_uarch(_write(tmp_path, {**_base(), "core": {}}))
    system = resolve(u, 2048, 16)
    assert set(system) == RESOLVED_KEYS | {"core"}
    assert system["core"] == STOCK


def test_core_keys_override_stock(tmp_path: Path) -> None:
    core = {"decode_width": 1, "execute_input_width": 1, "issue_limit": 1,
            "commit_limit": 1, "int_alus": 1, "memory_width": 16}
    u = load_uarch(_write(tmp_path, {**_base(), "core": core}))
    assert resolve(u, 1024, 8)["core"] == {**STOCK, **core}


def test_core_merges_through_extends(tmp_path: Path) -> None:
    _write(tmp_path, {**_base("parent"), "core": {"issue_limit": 1, "commit_limit": 1}},
           "parent")
    u = load_uarch(_write(tmp_path, {"name": "kid", "extends": "parent",
                                     "core": {"decode_width": 1}}, "kid"))
    core = resolve(u, 1024, 8)["core"]
    assert (core["issue_limit"], core["commit_limit"], core["decode_width"]) == (1, 1, 1)
    # null removes the inherited block: the stock pipeline, no core key at all
    u = load_uarch(_write(tmp_path, {"name": "bare", "extends": "parent", "core": None},
                          "bare"))
    assert "core" not in resolve(u, 1024, 8)


def test_memory_rate_follows_core_memory_width(tmp_path: Path) -> None:
    data = {**_base(), "timing_model": "lanes", "op_latency": {"FloatAdd": 5},
            "core": {"memory_width": 16}}
    data["lanes_model"] = {"startup": dict.fromkeys(
        ("arith", "mul", "fma", "div", "reduce", "permute"), 2), "reduce_per_level": 1,
        "permute_per_lane_hop": 1, "queue_depth": 0, "mem_bytes_per_cycle": 16}
    system = resolve(load_uarch(_write(tmp_path, data)), 1024, 8)
    assert system["lanes_model"]["mem_bytes_per_cycle"] == system["core"]["memory_width"] == 16
    data["lanes_model"]["mem_bytes_per_cycle"] = 32
    with pytest.raises(UarchError, match="mem_bytes_per_cycle: 32 differs from core"):
        load_uarch(_write(tmp_path, data))


@pytest.mark.parametrize("memory", sorted(CHANNELED_MEMORY_TYPES))
def test_channeled_memory_types_are_accepted(tmp_path: Path, memory: str) -> None:
    data = _base()
    data["memory"] = {"type": memory, "size": "1GiB"}
    assert resolve(load_uarch(_write(tmp_path, data)), 512, 8)["memory"]["type"] == memory
    assert memory in ALL_MEMORY_TYPES
