"""configs/run.py without gem5: its gem5 and m5 imports are stand-ins that record what it
builds, so that the resolved system it reads and the binary it finds are checked in CI
(the gem5-gated tests run it for real)."""

from __future__ import annotations

import json
import os
import re
import runpy
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from system.loader import load_uarch
from system.resolved import resolve
from vecscale.vocab import (
    CHANNELED_MEMORY_TYPES,
    GEM5_OP_CLASSES,
    MEMORY_TYPES,
    MINOR_CORE_PARAMS,
)

RUN_PY = Path(__file__).resolve().parents[1] / "run.py"


class Record:
    """Anything run.py calls or sets: keeps the keyword arguments and attributes."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        self.args, self.kw = args, kw
        self.calls: list[Record] = []

    def __call__(self, *args: Any, **kw: Any) -> Record:
        self.calls.append(Record(*args, **kw))
        return self.calls[-1]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = Record()
        setattr(self, name, value)
        return value


class Core(Record):
    """A Minor (or atomic) core: it has every parameter asked for (the patch's too)."""

    def __init__(self) -> None:
        super().__init__()
        self.isa = [Record()]


class Processor(Record):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._switchable_cores = {"start": [types.SimpleNamespace(core=Core())],
                                  "switch": [types.SimpleNamespace(core=Core())]}


class FloatSimdFU(Record):
    opClasses = types.SimpleNamespace(opClasses=[types.SimpleNamespace(opClass=c)
                                                 for c in ("SimdFloatAdd", "SimdMisc")])


class IntFU(Record):
    """MinorDefaultIntFU."""


def stock_pool() -> types.SimpleNamespace:
    """MinorDefaultFUPool's units, as far as run.py looks at them (two integer ALUs)."""
    return types.SimpleNamespace(funcUnits=[IntFU(), IntFU(), Record(), FloatSimdFU()])


class Simulator(Record):
    def run(self) -> None:
        built.append(self.kw["board"])

    def get_last_exit_event_code(self) -> int:
        return 0

    def get_last_exit_event_cause(self) -> str:
        return "exiting with last thread"


built: list[Record] = []


def memory_factory(name: str) -> Any:
    return lambda size: ("memory", name, size)


def stand_ins(outdir: Path) -> dict[str, types.ModuleType]:
    """sys.modules entries for every gem5 and m5 module run.py imports."""
    mods: dict[str, types.ModuleType] = {}

    def mod(name: str, **attrs: Any) -> None:
        mods[name] = types.ModuleType(name)
        mods[name].__dict__.update(attrs)

    for pkg in ("gem5", "gem5.components", "gem5.components.boards",
                "gem5.components.cachehierarchies", "gem5.components.cachehierarchies.classic",
                "gem5.components.processors", "gem5.resources", "gem5.simulate"):
        mod(pkg)
    mod("m5", curTick=lambda: 1, options=types.SimpleNamespace(outdir=str(outdir)))
    mod("m5.objects", MinorDefaultFloatSimdFU=FloatSimdFU, MinorDefaultFUPool=stock_pool,
        MinorDefaultIntFU=IntFU, MinorFUTiming=Record)
    mod("m5.objects.FuncUnit", OpClass=types.SimpleNamespace(vals=list(GEM5_OP_CLASSES)))
    mod("gem5.components.boards.simple_board", SimpleBoard=Record)
    mod("gem5.components.cachehierarchies.classic.private_l1_shared_l2_cache_hierarchy",
        PrivateL1SharedL2CacheHierarchy=Record)
    mod("gem5.components.memory", single_channel=types.SimpleNamespace(
        **{f: memory_factory(f) for f in MEMORY_TYPES.values()}))
    mod("gem5.components.memory.memory", ChanneledMemory=lambda *a, size: ("channeled", *a, size))
    mod("gem5.components.memory.dram_interfaces")
    for module in {m for m, _ in CHANNELED_MEMORY_TYPES.values()}:
        mod(f"gem5.components.memory.dram_interfaces.{module}",
            **{k: f"<{k}>" for k, (m, _) in CHANNELED_MEMORY_TYPES.items() if m == module})
    mod("gem5.components.processors.cpu_types", CPUTypes=Record())
    mod("gem5.components.processors.simple_switchable_processor",
        SimpleSwitchableProcessor=Processor)
    mod("gem5.isas", ISA=Record())
    mod("gem5.resources.resource", BinaryResource=Record)
    mod("gem5.simulate.exit_event", ExitEvent=Record())
    mod("gem5.simulate.simulator", Simulator=Simulator)
    return mods


def run_py(tmp_path: Path, run: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Record:
    """Run configs/run.py on `run` with the stand-ins; the board it built."""
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "run.json").write_text(json.dumps(run))
    for name, m in stand_ins(rundir).items():
        monkeypatch.setitem(sys.modules, name, m)
    monkeypatch.setattr(sys, "argv", [str(RUN_PY), str(rundir / "run.json")])
    monkeypatch.syspath_prepend(str(RUN_PY.parent))
    built.clear()
    runpy.run_path(str(RUN_PY), run_name="__main__")
    assert json.loads((rundir / "workload_exit.json").read_text())["exit_code"] == 0
    (board,) = built
    return board


@pytest.fixture
def workloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    wl = tmp_path / "wl"
    wl.mkdir()
    (wl / "attention-fa-v").write_text("stand-in binary")
    monkeypatch.setenv("VECSCALE_WORKLOADS", str(wl))
    return wl


def a_run(system: dict[str, Any]) -> dict[str, Any]:
    return {"schema": 1, "target": "gem5", "system": system, "roi_dump": 1,
            "workload": {"binary": "attention-fa-v", "args": ["--kernel", "fa-v"],
                         "stack": {"area": 4096, "shift": 0}}}


@pytest.mark.parametrize("memory", sorted(MEMORY_TYPES))
def test_every_memory_type_the_uarch_model_accepts_is_built(
        memory: str, tmp_path: Path, workloads: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = resolve(load_uarch("vitruvius-plus"), 2048, 16)
    system["memory"] = {"type": memory, "size": "2GiB"}
    board = run_py(tmp_path, a_run(system), monkeypatch)
    assert board.kw["memory"] == ("memory", MEMORY_TYPES[memory], "2GiB")
    assert board.kw["clk_freq"] == "2GHz"


@pytest.mark.parametrize("memory", sorted(CHANNELED_MEMORY_TYPES))
def test_channeled_memory_types_are_built_from_their_interface(
        memory: str, tmp_path: Path, workloads: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = resolve(load_uarch("vitruvius-plus"), 2048, 16)
    system["memory"] = {"type": memory, "size": "1GiB"}
    board = run_py(tmp_path, a_run(system), monkeypatch)
    channels = CHANNELED_MEMORY_TYPES[memory][1]
    assert board.kw["memory"] == ("channeled", f"<{memory}>", channels, 64, "1GiB")


def test_unknown_memory_type_is_one_line(tmp_path: Path, workloads: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    system = resolve(load_uarch("vitruvius-plus"), 2048, 16)
    system["memory"] = {"type": "LPDDR4X_4266", "size": "1GiB"}
    with pytest.raises(SystemExit) as e:
        run_py(tmp_path, a_run(system), monkeypatch)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1
    assert "system.memory.type: expected one of" in err and "LPDDR5_5500_1x16_BG_BL32" in err


def with_core(system: dict[str, Any], **keys: int) -> dict[str, Any]:
    """A resolved system with a core record: gem5's stock pipeline, `keys` changed."""
    stock = {k: v for k, (_, v) in MINOR_CORE_PARAMS.items()}
    return {**system, "core": {**stock, "int_alus": 2, **keys}}


def _detailed(board: Record) -> Any:
    """The Minor core run.py configured (the processor's switch core)."""
    return board.kw["processor"]._switchable_cores["switch"][0].core


def test_without_core_the_pipeline_is_left_stock(
        tmp_path: Path, workloads: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    core = _detailed(run_py(tmp_path, a_run(resolve(load_uarch("vitruvius-plus"), 2048, 16)),
                            monkeypatch))
    for param, _ in MINOR_CORE_PARAMS.values():
        assert param not in vars(core), param
    assert [type(fu).__name__ for fu in core.executeFuncUnits.funcUnits] == \
        ["IntFU", "IntFU", "Record", "FloatSimdFU"]


def test_core_sets_minor_widths_and_alus(tmp_path: Path, workloads: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    system = with_core(resolve(load_uarch("vitruvius-plus"), 2048, 16), decode_width=1,
                       execute_input_width=1, issue_limit=1, commit_limit=1, int_alus=3)
    stock = stock_pool()
    originals = list(stock.funcUnits)
    monkeypatch.setattr(sys.modules[__name__], "stock_pool", lambda: stock)
    core = _detailed(run_py(tmp_path, a_run(system), monkeypatch))
    for key, (param, _) in MINOR_CORE_PARAMS.items():
        assert getattr(core, param) == system["core"][key], param
    units = core.executeFuncUnits.funcUnits
    assert [type(fu).__name__ for fu in units] == \
        ["IntFU", "IntFU", "IntFU", "Record", "FloatSimdFU"]
    # gem5 adopts a SimObject list only when none of it has a parent: every unit is new
    # (reusing the stock pool's units left the new ALUs orphans: "Attempt to instantiate
    # orphan node" in gem5)
    assert not {id(fu) for fu in units} & {id(fu) for fu in originals}


def test_core_memory_width_is_the_vector_memory_rate(
        tmp_path: Path, workloads: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    system = with_core(resolve(load_uarch("vitruvius-plus"), 2048, 16), memory_width=16)
    system["lanes_model"]["mem_bytes_per_cycle"] = 16
    core = _detailed(run_py(tmp_path, a_run(system), monkeypatch))
    assert core.executeMemoryWidth == system["core"]["memory_width"]
    system["core"]["memory_width"] = 64  # a run.json edited by hand: the rates disagree
    (tmp_path / "again").mkdir()
    with pytest.raises(SystemExit) as e:
        run_py(tmp_path / "again", a_run(system), monkeypatch)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "system.lanes_model.mem_bytes_per_cycle: only 64" in err


def test_core_missing_key_is_one_line(tmp_path: Path, workloads: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    system = with_core(resolve(load_uarch("vitruvius-plus"), 2048, 16))
    del system["core"]["issue_limit"]
    with pytest.raises(SystemExit) as e:
        run_py(tmp_path, a_run(system), monkeypatch)
    assert e.value.code == 2 and "system.core.issue_limit missing" in capsys.readouterr().err


def test_binary_is_found_by_name_in_the_workloads_folder(
        tmp_path: Path, workloads: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    board = run_py(tmp_path, a_run(resolve(load_uarch("paper-vl-scaled"), 1024, 8)),
                   monkeypatch)
    (call,) = board.set_se_binary_workload.calls
    (resource,) = call.args
    assert resource.kw["local_path"] == str(workloads / "attention-fa-v")
    assert call.kw["arguments"] == ["--kernel", "fa-v"]
    (pad,) = call.kw["env_list"]
    assert pad.startswith("VECSCALE_STACK_PAD=")


def test_missing_binary_is_one_line(tmp_path: Path, workloads: Path,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    (workloads / "attention-fa-v").unlink()
    with pytest.raises(SystemExit) as e:
        run_py(tmp_path, a_run(resolve(load_uarch("paper-fixed"), 512, None)), monkeypatch)
    assert e.value.code == 2
    assert "workload.binary: 'attention-fa-v' not found" in capsys.readouterr().err


def test_single_channel_factories_exist_in_gem5() -> None:
    """Compare with src/python/gem5/components/memory/single_channel.py of GEM5_SRC."""
    root = os.environ.get("GEM5_SRC")
    if not root:
        pytest.skip("set GEM5_SRC to a gem5 v24.0.0.1 source tree to compare memory types")
    text = (Path(root) / "src/python/gem5/components/memory/single_channel.py").read_text()
    defined = set(re.findall(r"^def (\w+)\(", text, re.M))
    assert set(MEMORY_TYPES.values()) <= defined
    for name, (module, _) in CHANNELED_MEMORY_TYPES.items():
        iface = Path(root) / f"src/python/gem5/components/memory/dram_interfaces/{module}.py"
        assert re.search(rf"^class {name}\(DRAMInterface\)", iface.read_text(), re.M), name
