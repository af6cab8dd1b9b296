"""A uarch file that is wrong says so in one line naming the file and key; `extends`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from system.loader import UARCH_DIR, UarchError, load_uarch
from system.resolved import resolve
from system.tests.test_uarch import _base, _write

# ----------------------------------------------------------------------------- malformed


def _del(*keys: str):
    def f(d: dict[str, Any]) -> None:
        for k in keys[:-1]:
            d = d[k]
        del d[keys[-1]]

    return f


def _set(value: Any, *keys: str):
    def f(d: dict[str, Any]) -> None:
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value

    return f


def _to_lanes_model(d: dict[str, Any]) -> None:
    d["timing_model"] = "lanes"


def _add_lanes_model(d: dict[str, Any]) -> None:
    v = yaml.safe_load((UARCH_DIR / "vitruvius-plus.yaml").read_text())
    d["lanes_model"] = v["lanes_model"]


def _lanes_model_with(change) -> Any:
    def f(d: dict[str, Any]) -> None:
        v = yaml.safe_load((UARCH_DIR / "vitruvius-plus.yaml").read_text())
        v["name"] = d["name"]
        d.clear()
        d.update(v)
        change(d)

    return f


def _sizes(**sizes: str):
    def f(d: dict[str, Any]) -> None:
        for cache, size in sizes.items():
            d["caches"][cache]["size"] = size

    return f


MALFORMED: list[tuple[str, Any, str]] = [
    ("unknown-top-key", _set(3, "vlen_max"), "vlen_max: unknown key"),
    ("unknown-nested-key", _set(2, "caches", "l1i", "latency"), "caches.l1i.latency: unknown"),
    ("missing-clock", _del("clock"), "clock: missing required key"),
    ("missing-l1d", _del("caches", "l1d"), "caches.l1d: missing required key"),
    ("missing-lanes", _del("lanes"), "lanes: missing required key"),
    ("lane-bits-string", _set("64", "lane_bits"), "lane_bits: expected an integer"),
    ("lanes-max-bool", _set(True, "lanes", "max"), "lanes.max: expected an integer"),
    ("op-latency-string", _set("5", "op_latency", "SimdFloatAdd"), "op_latency.SimdFloatAdd"),
    ("timing-model", _set("cycle-accurate", "timing_model"), "timing_model: 'cycle-accurate'"),
    ("op-class", _set(5, "op_latency", "SimdFloatFoo"), "op_latency.SimdFloatFoo: not a gem5"),
    ("op-latency-zero", _set(0, "op_latency", "FloatAdd"), "op_latency.FloatAdd: 0 cycles"),
    ("vlen-not-pow2", _set(5000, "vlen", "max"), "vlen.max: 5000 is not a power of two"),
    ("vlen-too-small", _set(64, "vlen", "min"), "vlen.min: 64 outside 128..65536"),
    ("vlen-too-big", _set(131072, "vlen", "max"), "vlen.max: 131072 outside 128..65536"),
    ("vlen-min-gt-max", _set(16384, "vlen", "min"), "vlen.min: 16384 is greater than max"),
    ("vlen-allowed-pow2", _set({"allowed": [512, 1000]}, "vlen"), "vlen.allowed: 1000 is not"),
    ("vlen-both-forms", _set([512], "vlen", "allowed"), "vlen: give either min/max or allowed"),
    ("vlen-half-range", _del("vlen", "max"), "vlen: give both min and max"),
    ("lanes-zero", _set(0, "lanes", "min"), "lanes.min: 0 must be >= 1"),
    ("lanes-wider-than-vlen", _set(16, "lanes", "min"), "lanes.min: 16 lanes x 64 bits"),
    (
        "lanes-allowed-wider",
        _set({"allowed": [64, 16]}, "lanes"),
        "lanes.allowed: 16 lanes x 64 bits = 1024 bits is wider than vlen.min 512",
    ),
    ("lane-bits-odd", _set(48, "lane_bits"), "lane_bits: 48 must be a power of two"),
    ("name-mismatch", _set("other", "name"), "name: 'other' must equal the file name stem"),
    ("clock-format", _set("fast", "clock"), "clock: 'fast' does not look right"),
    ("cache-size", _set("1 megabyte", "caches", "l2", "size"), "caches.l2.size: '1 megabyte'"),
    ("cache-assoc", _set(0, "caches", "l2", "assoc"), "caches.l2.assoc:"),
    ("memory-type", _set("DDR9_9999", "memory", "type"), "memory.type: 'DDR9_9999' is not"),
    ("lsq-zero", _set(0, "lsq", "store_buffer"), "lsq.store_buffer:"),
    ("lanes-model-not-lanes", _add_lanes_model, "lanes_model: only allowed with timing_model"),
    ("lanes-without-model", _to_lanes_model, "lanes_model: missing required key"),
    (
        "lanes-model-group",
        _lanes_model_with(_set(3, "lanes_model", "startup", "gather")),
        "lanes_model.startup.gather: unknown class group",
    ),
    (
        "lanes-model-missing-group",
        _lanes_model_with(_del("lanes_model", "startup", "div")),
        "lanes_model.startup.div: missing class group",
    ),
    (
        "lanes-model-startup-zero",
        _lanes_model_with(_set(0, "lanes_model", "startup", "fma")),
        "lanes_model.startup.fma: 0 must be >= 1",
    ),
    (
        "lanes-model-mem-rate",
        _lanes_model_with(_set(128, "lanes_model", "mem_bytes_per_cycle")),
        "lanes_model.mem_bytes_per_cycle: 128 must be a power of two in 8..64",
    ),
    (
        "lanes-model-mem-rate-not-core",
        _lanes_model_with(_set(16, "lanes_model", "mem_bytes_per_cycle")),
        "lanes_model.mem_bytes_per_cycle: 16 differs from core.memory_width 64",
    ),
    (
        "lanes-model-mem-rate-vs-core",
        _lanes_model_with(_set({"memory_width": 16}, "core")),
        "lanes_model.mem_bytes_per_cycle: 64 differs from core.memory_width 16",
    ),
    (
        "lanes-model-group-untimed-class",
        _lanes_model_with(_set({"SimdAes": "arith"}, "lanes_model", "groups")),
        "lanes_model.groups.SimdAes: not a class the lanes model times",
    ),
    (
        "lanes-model-group-unknown",
        _lanes_model_with(_set({"SimdMisc": "shuffle"}, "lanes_model", "groups")),
        "lanes_model.groups.SimdMisc: unknown class group 'shuffle'",
    ),
    (
        "lanes-model-vector-op-latency",
        _lanes_model_with(_set(5, "op_latency", "SimdFloatAdd")),
        "op_latency.SimdFloatAdd: timing_model lanes times this class from lanes_model",
    ),
    ("extends-unknown", _set("no-such-parent", "extends"), "extends:"),
    # the Minor pipeline (issue 17): one line naming the key
    ("core-not-mapping", _set(2, "core"), "core: expected a mapping"),
    ("core-unknown-key", _set({"fetch_width": 2}, "core"), "core.fetch_width: unknown key"),
    ("core-width-zero", _set({"issue_limit": 0}, "core"), "core.issue_limit:"),
    ("core-width-big", _set({"decode_width": 9}, "core"), "core.decode_width:"),
    ("core-width-string", _set({"commit_limit": "2"}, "core"),
     "core.commit_limit: expected an integer"),
    ("core-alus-zero", _set({"int_alus": 0}, "core"), "core.int_alus:"),
    ("core-memory-width-odd", _set({"memory_width": 24}, "core"),
     "core.memory_width: 24 must be a power of two in 8..64"),
    ("core-memory-width-big", _set({"memory_width": 128}, "core"),
     "core.memory_width: 128 must be a power of two in 8..64"),
    ("core-memory-width-small", _set({"memory_width": 4}, "core"),
     "core.memory_width: 4 must be a power of two in 8..64"),
    ("core-memory-issue", _set({"issue_limit": 1, "memory_issue_limit": 2}, "core"),
     "core.memory_issue_limit: 2 is more than core.issue_limit 1"),
    ("core-memory-commit", _set({"memory_commit_limit": 3}, "core"),
     "core.memory_commit_limit: 3 is more than core.commit_limit 2 (gem5's stock value)"),
    # sizes gem5 cannot build, or that make no sense together (issue 19)
    ("l2-smaller-than-l1d", _set("32KiB", "caches", "l2", "size"),
     "caches.l2.size: 32KiB is smaller than caches.l1d.size 64KiB"),
    ("l2-smaller-than-l1i", _sizes(l1d="16KiB", l2="32KiB"),
     "caches.l2.size: 32KiB is smaller than caches.l1i.size 64KiB"),
    ("memory-one-byte", _set("1B", "memory", "size"),
     "memory.size: 1B is below the 64MiB a workload needs"),
    ("memory-small", _set("63MiB", "memory", "size"), "memory.size: 63MiB is below"),
    ("l1d-sets-not-pow2", _set("48KiB", "caches", "l1d", "size"),
     "caches.l1d.size: 48KiB with assoc 8 is 96 sets of 8 x 64 B lines; gem5 needs a whole "
     "power-of-two number of sets"),
    ("l2-assoc-not-pow2", _set(12, "caches", "l2", "assoc"),
     "caches.l2.size: 1MiB with assoc 12 is 1365.33 sets"),
    ("l1i-smaller-than-a-set", _set("256B", "caches", "l1i", "size"),
     "caches.l1i.size: 256B with assoc 8 is 0.5 sets"),
    ("l1d-bytes-not-lines", _set("65600B", "caches", "l1d", "size"),
     "caches.l1d.size: 65600B with assoc 8 is 128.125 sets"),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_yaml(tmp_path: Path, case: str, mutate: Any, expected: str) -> None:
    data = _base()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(UarchError) as exc:
        load_uarch(path)
    msg = str(exc.value)
    assert "\n" not in msg
    assert "broken.yaml: " in msg
    assert expected in msg, msg


#: (file text, what the one line must contain)
MALFORMED_TEXT: list[tuple[str, str]] = [
    ("name: broken\nvlen: {min: 512, max: 8192\nlanes: 3\n", "YAML syntax error at line"),
    ("name: broken\n  bad: indent\n", "YAML syntax error at line 2"),
    ("", "empty file"),
    ("- 1\n- 2\n", "top level: expected a mapping"),
    ("just a string\n", "top level: expected a mapping"),
    ("1: one\n", "1: keys must be strings"),
    ("name: broken\nclock: 2GHz\nclock: 1GHz\n", "line 3, column 1: duplicate key 'clock'"),
    ("name: broken\ncaches:\n  l1i: {size: 1KiB, size: 2KiB}\n", "duplicate key 'size'"),
    ("name: broken\nvlen: [unclosed\n", "YAML syntax error at line"),
    ("name: broken\n\tclock: 2GHz\n", "YAML syntax error at line 2"),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED_TEXT)
def test_malformed_text(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(UarchError) as exc:
        load_uarch(path)
    msg = str(exc.value)
    assert "broken.yaml: " in msg and expected in msg and "\n" not in msg, msg


# ----------------------------------------------------------------------------- extends


def test_extends_deep_merge(tmp_path: Path) -> None:
    _write(tmp_path, _base("parent"), "parent")
    child = {
        "name": "child",
        "extends": "parent",
        "vlen": {"min": 1024, "max": 8192},
        "lanes": {"allowed": [16]},
        "op_latency": {"SimdFloatAdd": 7},
        "caches": {"l2": {"size": "4MiB"}},
    }
    u = load_uarch(_write(tmp_path, child, "child"))
    system = resolve(u, 1024, 16)
    assert system["uarch"] == "child"
    assert system["op_latency"]["SimdFloatAdd"] == 7
    assert system["op_latency"]["SimdFloatMult"] == 3  # inherited
    assert system["caches"]["l2"] == {"size": "4MiB", "assoc": 16}
    assert system["caches"]["l1d"] == {"size": "64KiB", "assoc": 8}
    assert u.allows(1024, 8) == "lanes: 8 outside the allowed [16]"
    assert u.description == _base()["description"]


def test_extends_shipped_uarch_switching_model(tmp_path: Path) -> None:
    # A child in another folder may name a path; here: switch vl-scaled -> fixed.
    _write(tmp_path, _base("parent"), "parent")
    child = {"name": "flat", "extends": "parent", "timing_model": "fixed", "lanes": None}
    u = load_uarch(_write(tmp_path, child, "flat"))
    assert u.ignores_lanes and resolve(u, 2048, None)["timing_model"] == "fixed"


def test_extends_cycle(tmp_path: Path) -> None:
    _write(tmp_path, {"name": "a", "extends": "b"}, "a")
    _write(tmp_path, {"name": "b", "extends": "a"}, "b")
    with pytest.raises(UarchError, match="extends: cycle"):
        load_uarch(tmp_path / "a.yaml")


def test_extends_child_error_names_child(tmp_path: Path) -> None:
    _write(tmp_path, _base("parent"), "parent")
    _write(tmp_path, {"name": "kid", "extends": "parent", "clock": 2}, "kid")
    with pytest.raises(UarchError) as exc:
        load_uarch(tmp_path / "kid.yaml")
    assert "kid.yaml: clock: expected a string" in str(exc.value)


def test_base_fixture_is_valid(tmp_path: Path) -> None:
    # Guard for the malformed cases: the unmodified base must load.
    data = copy.deepcopy(_base())
    assert load_uarch(_write(tmp_path, data)).name == "broken"
