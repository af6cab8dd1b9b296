"""Tests of the system package: the latency formula, resolve(), error messages, extends, CLI."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from system.cli import main
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
        "lanes_model.mem_bytes_per_cycle: 128: only 64",
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
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
    ],
)
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


# ----------------------------------------------------------------------------- CLI


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "system", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_resolve_prints_json() -> None:
    r = _cli("resolve", "paper-vl-scaled", "4096", "32")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == resolve(load_uarch("paper-vl-scaled"), 4096, 32)


def test_cli_resolve_fixed_without_lanes() -> None:
    r = _cli("resolve", "paper-fixed", "65536", "none")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["lanes"] is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("resolve", "paper-vl-scaled", "16384", "8"), "vlen: 16384 outside the allowed"),
        (("resolve", "paper-vl-scaled", "abc", "8"), "'abc' is not an integer"),
        (("resolve", "no-such-uarch", "512", "8"), "no uarch named 'no-such-uarch'"),
        (("resolve", "paper-vl-scaled"), "error:"),
        (("frobnicate",), "error:"),
        ((), "error:"),
        (("check", "does/not/exist.yaml"), "does/not/exist.yaml: file not found"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args: tuple[str, ...], expected: str) -> None:
    r = _cli(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert expected in r.stderr


def test_cli_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path, _base("good"), "good")
    bad_data = _base("bad")
    bad_data["vlen"]["max"] = 5000
    bad = _write(tmp_path, bad_data, "bad")
    assert main(["check", str(good)]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["check", str(good), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.yaml: vlen.max: 5000 is not a power of two" in err[0]


def test_cli_export_schema(tmp_path: Path) -> None:
    assert main(["export-schema", str(tmp_path)]) == 0
    schema = json.loads((tmp_path / "uarch.schema.json").read_text())
    assert schema["type"] == "object"
    assert {"name", "vlen", "timing_model", "op_latency"} <= set(schema["properties"])


def test_base_fixture_is_valid(tmp_path: Path) -> None:
    # Guard for the malformed cases: the unmodified base must load.
    data = copy.deepcopy(_base())
    assert load_uarch(_write(tmp_path, data)).name == "broken"
