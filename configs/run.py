"""Run one vecscale simulation inside gem5: `gem5.opt -re --outdir=DIR configs/run.py RUN_JSON`.

Reads a fully resolved run.json (written by the host-side planner, see sweeps/) and builds a
RISC-V SE-mode system from gem5's standard library: a switchable processor (gem5's atomic
CPU for set-up and the reference check, a RiscvMinorCPU with RVV at the given VLEN and the
selected vector timing model from gem5-patches/ for the kernel, with the uarch's pipeline
widths when it gives them), private L1 I/D and a shared L2, the uarch's memory. The
workload's own m5ops delimit the region of interest: switch_cpu to the Minor core,
reset_stats, the kernel, dump_stats, switch_cpu back; so stats dump 1 is the ROI, measured
on the Minor core only (caches are warmed by the set-up; the Minor core's branch predictor
starts cold). At the end it writes workload_exit.json with the simulated process's exit
code.

Runs inside gem5's embedded Python: standard library plus m5/gem5 only (no pyyaml); the
names it shares with the host (memory types, stock latency) come from vecscale/vocab.py,
which is standard library only too.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import m5
from gem5.components.boards.simple_board import SimpleBoard
from gem5.components.cachehierarchies.classic.private_l1_shared_l2_cache_hierarchy import (
    PrivateL1SharedL2CacheHierarchy,
)
from gem5.components.memory import single_channel
from gem5.components.memory.memory import ChanneledMemory
from gem5.components.processors.cpu_types import CPUTypes
from gem5.components.processors.simple_switchable_processor import (
    SimpleSwitchableProcessor,
)
from gem5.isas import ISA
from gem5.resources.resource import BinaryResource
from gem5.simulate.exit_event import ExitEvent
from gem5.simulate.simulator import Simulator
from m5.objects import (
    MinorDefaultFloatSimdFU,
    MinorDefaultFUPool,
    MinorDefaultIntFU,
    MinorFUTiming,
)
from patch_params import PATCH_PARAMS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository
from stack_layout import padded_env  # noqa: E402 (after the path: it imports vecscale)

from vecscale.vocab import (  # noqa: E402
    ALL_MEMORY_TYPES,
    CHANNELED_MEMORY_TYPES,
    MEM_BYTES_PER_CYCLE,
    MEMORY_TYPES,
    MINOR_CORE_PARAMS,
    STOCK_FLOAT_SIMD_LATENCY,
    workload_dir,
)

# Op classes handled by the patched vector timing (the FloatSimd FU's classes).
FLOAT_SIMD_CLASSES = sorted(
    {str(c.opClass) for c in MinorDefaultFloatSimdFU().opClasses.opClasses}
)


def fail(msg: str) -> None:
    """One-line error before simulation starts; exit code 2 = bad configuration."""
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_run(path: Path) -> dict:
    try:
        run = json.loads(path.read_text())
    except OSError as e:
        fail(f"{path}: cannot read ({e.strerror})")
    except json.JSONDecodeError as e:
        fail(f"{path}: not valid JSON (line {e.lineno}: {e.msg})")
    for key in ("system", "workload"):
        if not isinstance(run.get(key), dict):
            fail(f"{path}: key '{key}' missing or not an object")
    for key in ("vlen", "timing_model", "clock", "caches", "memory", "lsq", "op_latency"):
        if key not in run["system"]:
            fail(f"{path}: system.{key} missing")
    if "binary" not in run["workload"]:
        fail(f"{path}: workload.binary missing")
    return run


def op_class_names(names: list[str]) -> list[str]:
    """Checked op class names: gem5 ignores none silently."""
    from m5.objects.FuncUnit import OpClass

    known = set(OpClass.vals)
    for name in names:
        if name not in known:
            fail(f"run.json: unknown gem5 op class '{name}'")
    return names


def fu_pool_for_vector_timing(int_alus: int | None = None):
    """Stock Minor FU pool with the FloatSimd FU's pipeline depth cut to 1 cycle, and
    `int_alus` integer ALUs when given (system.core; stock 2).

    The patch can only lengthen an op beyond its FU depth, so the depth is made minimal and
    every class of that FU gets its latency from the timing model (stock 6 if not given).
    """
    pool = MinorDefaultFUPool()
    if int_alus is not None:
        # The integer ALUs first, as in the stock pool (Minor issues to the first free FU),
        # then a new unit of each other stock class: gem5 adopts a list of SimObjects only
        # when none of them has a parent yet (else the new ones stay orphans and gem5 stops).
        pool.funcUnits = [MinorDefaultIntFU() for _ in range(int_alus)] + [
            type(fu)() for fu in pool.funcUnits if not isinstance(fu, MinorDefaultIntFU)]
    for fu in pool.funcUnits:
        if isinstance(fu, MinorDefaultFloatSimdFU):
            fu.opLat = 1
            # Stock lets an op issue 2 cycles before its sources are ready (late operand
            # read); with 0 a dependent waits for the full modelled latency.
            fu.timings = [MinorFUTiming(description="FloatSimd", srcRegsRelativeLats=[0])]
    return pool


def configure_pipeline(core, system: dict, path: Path) -> dict | None:
    """Minor's widths and limits from system.core (None, and nothing set, without one: the
    stock pipeline, as for every uarch before the key existed)."""
    pipeline = system.get("core")
    if pipeline is None:
        return None
    if not isinstance(pipeline, dict):
        fail(f"{path}: system.core: expected an object")
    try:
        for key, (param, _stock) in MINOR_CORE_PARAMS.items():
            setattr(core, param, int(pipeline[key]))
        int(pipeline["int_alus"])
    except KeyError as e:
        fail(f"{path}: system.core.{e.args[0]} missing")
    except (TypeError, ValueError) as e:
        fail(f"{path}: system.core: {e}")
    return pipeline


def memory_system(memory: dict, path: Path):
    """The memory gem5's standard library builds for a memory type (vecscale/vocab.py)."""
    kind, size = memory.get("type"), memory.get("size")
    if kind in MEMORY_TYPES:
        return getattr(single_channel, MEMORY_TYPES[memory["type"]])(size=size)
    if kind in CHANNELED_MEMORY_TYPES:
        module, channels = CHANNELED_MEMORY_TYPES[kind]
        interfaces = importlib.import_module(f"gem5.components.memory.dram_interfaces.{module}")
        return ChanneledMemory(getattr(interfaces, kind), channels, 64, size=size)
    fail(f"{path}: system.memory.type: expected one of {sorted(ALL_MEMORY_TYPES)}")


def configure_core(core, system: dict, path: Path) -> None:
    missing = [p for p in PATCH_PARAMS if not hasattr(core, p)]
    if missing:
        fail(
            f"this gem5 binary lacks the vecscale patches (no RiscvMinorCPU.{missing[0]}): "
            "apply gem5-patches/ (all of them) and rebuild"
        )
    vlen = int(system["vlen"])

    lat = {c: STOCK_FLOAT_SIMD_LATENCY for c in FLOAT_SIMD_CLASSES}
    lat.update({c: int(v) for c, v in system["op_latency"].items()})
    pipeline = configure_pipeline(core, system, path)
    core.executeFuncUnits = fu_pool_for_vector_timing(
        None if pipeline is None else pipeline["int_alus"])
    core.vecTimingModel = system["timing_model"]
    core.vecTimingVlen = vlen
    core.vecTimingLanes = int(system.get("lanes") or 1)
    core.vecTimingLaneBits = int(system.get("lane_bits") or 64)
    core.vecTimingLatClasses = op_class_names(sorted(lat))
    core.vecTimingLatCycles = [lat[c] for c in sorted(lat)]

    model = system.get("lanes_model")
    if system["timing_model"] == "lanes":
        if not isinstance(model, dict):
            fail(f"{path}: system.lanes_model is required for timing model 'lanes'")
        startup, groups = model["startup"], model["groups"]
        timed = sorted(c for c, g in groups.items() if g not in ("mem", "config"))
        core.vecTimingStartupClasses = op_class_names(timed)
        core.vecTimingStartupCycles = [int(startup[groups[c]]) for c in timed]
        core.vecTimingReducePerLevel = int(model["reduce_per_level"])
        core.vecTimingPermuteCrossLane = int(model["permute_per_lane_hop"])
        core.vecTimingUnitQueue = int(model["queue_depth"])
        # Vector memory bandwidth is the Minor LSQ's: one fragment of its data interface
        # width (system.core.memory_width, else one cache line) per cycle.
        width = MEM_BYTES_PER_CYCLE if pipeline is None else pipeline["memory_width"]
        if int(model.get("mem_bytes_per_cycle", width)) != width:
            fail(
                f"{path}: system.lanes_model.mem_bytes_per_cycle: only {width} (one LSQ "
                "transfer of system.core.memory_width bytes per cycle) is modelled"
            )

    lsq = system["lsq"]
    core.executeMaxAccessesInMemory = int(lsq["max_accesses_in_memory"])
    core.executeLSQRequestsQueueSize = int(lsq["requests_queue"])
    core.executeLSQTransfersQueueSize = int(lsq["transfers_queue"])
    core.executeLSQStoreBufferSize = int(lsq["store_buffer"])


def build_board(run: dict, path: Path, binary: Path) -> SimpleBoard:
    system = run["system"]
    caches = system["caches"]
    memory = memory_system(system["memory"], path)
    processor = SimpleSwitchableProcessor(
        starting_core_type=CPUTypes.ATOMIC,
        switch_core_type=CPUTypes.MINOR,
        isa=ISA.RISCV,
        num_cores=1,
    )
    # (`processor.switch` is the switching method, hence the dict of core lists)
    start, detailed = (processor._switchable_cores[k] for k in ("start", "switch"))
    for simple_core in start + detailed:
        # Both cores must agree on the architectural vector state they hand over.
        for isa in simple_core.core.isa:
            isa.vlen = int(system["vlen"])
            isa.elen = 64
    configure_core(detailed[0].core, system, path)
    board = SimpleBoard(
        clk_freq=system["clock"],
        processor=processor,
        memory=memory,
        cache_hierarchy=PrivateL1SharedL2CacheHierarchy(
            l1i_size=caches["l1i"]["size"],
            l1i_assoc=int(caches["l1i"]["assoc"]),
            l1d_size=caches["l1d"]["size"],
            l1d_assoc=int(caches["l1d"]["assoc"]),
            l2_size=caches["l2"]["size"],
            l2_assoc=int(caches["l2"]["assoc"]),
        ),
    )
    args = list(run["workload"].get("args", []))
    ref = run["workload"].get("ref")
    if isinstance(ref, dict) and (path.parent / ref["file"]).is_file():
        # a precomputed reference (sweeps/refs.py): the check reads it instead of computing
        args += ["--ref", str((path.parent / ref["file"]).resolve())]
    env = None
    stack = run["workload"].get("stack")
    if isinstance(stack, dict):
        # the same initial stack pointer whatever the paths and arguments (stack_layout.py)
        try:
            area, shift = int(stack["area"]), int(stack.get("shift", 0))
            env = padded_env([str(binary), *args], [], area, shift)
        except KeyError:
            fail(f"{path}: workload.stack.area missing (bytes for argv and env)")
        except (TypeError, ValueError) as e:  # StackLayoutError is a ValueError
            fail(f"{path}: workload.stack: {e}")
    board.set_se_binary_workload(BinaryResource(local_path=str(binary)), arguments=args,
                                 env_list=env)
    return board


def resolve_binary(run: dict, path: Path) -> Path:
    """run.json names the binary by file name: the run folder's own, else the workloads
    folder's ($VECSCALE_WORKLOADS, else workloads/build)."""
    name = run["workload"]["binary"]
    for cand in (path.parent / name, Path(workload_dir()) / name):
        if cand.is_file():
            return cand
    fail(f"{path}: workload.binary: '{name}' not found (run `make workloads`)")


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: gem5.opt -re --outdir=DIR configs/run.py RUN_JSON")
    path = Path(sys.argv[1])
    run = load_run(path)
    board = build_board(run, path, resolve_binary(run, path))

    # switch_cpu m5ops toggle between the atomic and the Minor core; reset/dump stats need no
    # handler. The run ends when the simulated process exits.
    def switch_cores():
        while True:
            board.get_processor().switch()
            yield False  # keep simulating

    simulator = Simulator(board=board, on_exit_event={ExitEvent.SWITCHCPU: switch_cores()})
    simulator.run()
    record = {
        "exit_code": int(simulator.get_last_exit_event_code()),
        "cause": simulator.get_last_exit_event_cause(),
        "sim_ticks": int(m5.curTick()),
    }
    out = Path(m5.options.outdir) / "workload_exit.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record) + "\n")
    os.replace(tmp, out)
    print(f"vecscale: workload exited with {record['exit_code']} ({record['cause']})")


main()
