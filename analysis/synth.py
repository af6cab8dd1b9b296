"""Writers for gem5-v24-style text statistics, for tests and the parser benchmark.

There is no gem5 binary in CI, so tests build stats.txt files that follow the format of
gem5's ``src/base/stats/text.cc`` (v24): names padded to 40 columns, values to 12, pdf/cdf
columns of 10, ``# description (Unit)`` at the end, one Begin/End block per dump. The filler
stats (caches, memory controller, bus) mimic a MinorCPU system with L1I/L1D/L2 and DDR3 so
that files have a realistic size (about 1,000 lines per dump).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from vecscale.vocab import GEM5_OP_CLASSES, VECTOR_UNIT_CLASSES

BEGIN_LINE = "---------- Begin Simulation Statistics ----------"
END_LINE = "---------- End Simulation Statistics   ----------"

def fmt_value(v: float, precision: int = -1) -> str:
    """gem5's ValueToString: fixed notation, integers without decimals, 'nan'."""
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if precision >= 0:
        return f"{v:.{precision}f}"
    if float(v) == round(float(v)):
        return f"{v:.0f}"
    return f"{v:.6f}"


def scalar(name: str, v: float, desc: str = "", unit: str = "Count",
           precision: int = -1) -> str:
    line = f"{name:<40} {fmt_value(v, precision):>12} {'':>10} {'':>10}"
    if desc:
        line += f" # {desc}"
    if unit:
        line += f" ({unit})"
    return line


def vector(base: str, values: Mapping[str, float], desc: str = "", unit: str = "Count",
           total: bool = True, nozero: bool = False) -> list[str]:
    """A Vector stat with pdf/cdf columns and an optional ::total line."""
    tot = float(sum(values.values()))
    lines = []
    cdf = 0.0
    for sub, v in values.items():
        pdf = v / tot if tot else math.nan
        cdf += pdf if tot else 0.0
        if nozero and v == 0:
            continue
        pdfs = f"{pdf * 100:.2f}%" if tot else ""
        cdfs = f"{cdf * 100:.2f}%" if tot else ""
        line = f"{base + '::' + sub:<40} {fmt_value(v):>12} {pdfs:>10} {cdfs:>10}"
        line += f" # {desc} ({unit})" if desc else f" ({unit})"
        lines.append(line)
    if total:
        lines.append(scalar(base + "::total", tot, desc, unit))
    return lines


def distribution(base: str, samples: list[float], bucket: int, nbuckets: int,
                 desc: str = "", unit: str = "Count") -> list[str]:
    """A Distribution stat: samples, mean, stdev, underflows, buckets, overflows, total."""
    n = len(samples)
    lines = [scalar(base + "::samples", n, desc, unit)]
    mean = sum(samples) / n if n else math.nan
    lines.append(scalar(base + "::mean", mean, desc, unit))
    if n > 1:
        sq = sum(s * s for s in samples)
        sd = math.sqrt(max(0.0, (n * sq - sum(samples) ** 2) / (n * (n - 1.0))))
    else:
        sd = math.nan
    lines.append(scalar(base + "::stdev", sd, desc, unit))
    counts = [0] * nbuckets
    under = over = 0
    for s in samples:
        b = int(s // bucket)
        if s < 0:
            under += 1
        elif b >= nbuckets:
            over += 1
        else:
            counts[b] += 1
    tot = n
    cdf = 0.0

    def one(name: str, v: float) -> str:
        nonlocal cdf
        pdf = v / tot if tot else 0.0
        cdf += pdf
        return (f"{name:<40} {fmt_value(v):>12} {pdf * 100:>9.2f}% {cdf * 100:>9.2f}%"
                f" # {desc} ({unit})")

    lines.append(one(base + "::underflows", under))
    for i, c in enumerate(counts):
        lo, hi = i * bucket, i * bucket + bucket - 1
        lines.append(one(f"{base}::{lo}-{hi}" if hi > lo else f"{base}::{lo}", c))
    lines.append(one(base + "::overflows", over))
    lines.append(scalar(base + "::min_value", min(samples) if n else 0, desc, unit))
    lines.append(scalar(base + "::max_value", max(samples) if n else 0, desc, unit))
    lines.append(scalar(base + "::total", tot, desc, unit))
    return lines


def _filler(cycles: float, seed: int) -> list[str]:
    """Cache, bus and DRAM stats of a MinorCPU + L1/L2 + DDR3 system (values made up)."""
    lines: list[str] = []
    k = 1 + (seed % 7)
    for cache, reqs in (("system.cpu.icache", ("ReadReq",)),
                        ("system.cpu.dcache", ("ReadReq", "WriteReq", "ReadExReq")),
                        ("system.l2cache", ("ReadExReq", "ReadSharedReq", "WritebackDirty"))):
        for kind in ("Hits", "Misses", "Accesses", "MissLatency", "AvgMissLatency",
                     "MshrHits", "MshrMisses", "MshrMissLatency", "MshrMissRate",
                     "MissRate", "AvgMshrMissLatency"):
            for grp in ("demand", "overall"):
                base = f"{cache}.{grp}{kind}"
                lines += vector(base, {"cpu.inst": 1000 * k, "cpu.data": 37 * k + 5},
                                f"number of {grp} {kind}")
            for req in reqs:
                base = f"{cache}.{req}.{kind[0].lower()}{kind[1:]}"
                lines += vector(base, {"cpu.data": 11 * k}, f"number of {req} {kind}")
        lines.append(scalar(f"{cache}.replacements", 17 * k, "number of replacements"))
        lines.append(scalar(f"{cache}.tags.tagsInUse", 63.5 + k, "Average ticks per tags",
                            "Tick"))
        lines += distribution(f"{cache}.tags.ageTaskId_1024", [1.0 * i for i in range(k)],
                              1, 5, "Occupied blocks per task id")
    for i in range(8):
        b = f"system.mem_ctrl.dram.rank{i % 2}.bank{i}"
        lines.append(scalar(b + ".actEnergy", 1234567.89 * k, "Energy for activate", "pJ"))
        lines.append(scalar(b + ".readEnergy", 54321.0 * k, "Energy for read", "pJ"))
    lines += vector("system.mem_ctrl.dram.bytesRead", {"cpu.inst": 64 * k, "cpu.data": 4096 * k},
                    "Number of bytes read from this memory", "Byte")
    lines += vector("system.mem_ctrl.dram.bytesWritten", {"writebacks": 2048 * k},
                    "Number of bytes written to this memory", "Byte")
    lines += distribution("system.mem_ctrl.dram.bytesPerActivate",
                          [64.0 * (i % 9) for i in range(40)], 64, 16,
                          "Bytes accessed per row activation", "Byte")
    lines.append(scalar("system.mem_ctrl.dram.busUtil", 0.12 * k, "Data bus utilization in "
                        "percentage", "Ratio"))
    for port in ("system.membus", "system.l2bus"):
        lines += vector(f"{port}.transDist", {"ReadResp": 100 * k, "ReadReq": 100 * k,
                                              "WritebackDirty": 3 * k},
                        "Transaction distribution")
        lines += distribution(f"{port}.snoopFanout", [0.0] * (10 * k), 1, 2,
                              "Request fanout histogram")
    lines += distribution("system.cpu.execute0.iqInstsIssued", [i % 3 for i in range(30)], 1,
                          3, "Instructions issued per cycle")
    lines.append(scalar("system.cpu.idleCycles", cycles * 0.01, "Total idle cycles", "Cycle"))
    return lines


def _head_lines(cycles: float, insts: float, ops: float, freq: float, ticks: float,
                seed: int) -> list[str]:
    """The global and core scalars a dump starts with."""
    return [
        scalar("simSeconds", ticks / freq, "Number of seconds simulated", "Second"),
        scalar("simTicks", ticks, "Number of ticks simulated", "Tick"),
        scalar("finalTick", ticks * 3 + 12345, "Number of ticks from beginning of simulation "
               "(restored from checkpoints and never reset)", "Tick"),
        scalar("simFreq", freq, "The number of ticks per simulated second",
               "(Tick/Second)"),
        scalar("hostSeconds", 1.25 + seed % 5, "Real time elapsed on the host", "Second", 2),
        scalar("hostTickRate", 123456789, "The number of ticks simulated per host second "
               "(ticks/s)", "(Tick/Second)"),
        scalar("hostMemory", 17825792, "Number of bytes of host memory used", "Byte"),
        scalar("simInsts", insts * 2 + 777, "Number of instructions simulated", "Count"),
        scalar("simOps", ops * 2 + 801, "Number of ops (including micro ops) simulated",
               "Count"),
        scalar("hostInstRate", 345678, "Simulator instruction rate (inst/s)",
               "(Count/Second)"),
        scalar("hostOpRate", 356789, "Simulator op (including micro ops) rate (op/s)",
               "(Count/Second)"),
        scalar("system.clk_domain.clock", 1000, "Clock period in ticks", "Tick"),
        scalar("system.cpu.numCycles", cycles, "Number of cpu cycles simulated", "Cycle"),
        scalar("system.cpu.cpi", cycles / insts if insts else math.nan,
               "CPI: cycles per instruction (core level)", "(Cycle/Count)", 6),
        scalar("system.cpu.ipc", insts / cycles if cycles else math.nan,
               "IPC: instructions per cycle (core level)", "(Count/Cycle)", 6),
        scalar("system.cpu.numWorkItemsStarted", 0, "Number of work items this cpu started"),
        scalar("system.cpu.commitStats0.numInsts", insts, "Number of instructions committed "
               "(thread level)"),
        scalar("system.cpu.commitStats0.numOps", ops, "Number of ops (including micro ops) "
               "committed (thread level)"),
        scalar("system.cpu.commitStats0.numInstsNotNOP", insts, "Number of instructions "
               "committed excluding NOPs (thread level)"),
        scalar("system.cpu.commitStats0.cpi", cycles / insts if insts else math.nan,
               "CPI: cycles per instruction (thread level)", "(Cycle/Count)", 6),
        scalar("system.cpu.commitStats0.numVecInsts", 0, "Number of vector instructions"),
    ]



def dump_lines(cycles: float, insts: float, ops: float | None = None,
               inst_type: Mapping[str, float] | None = None,
               vec_timing: Mapping[str, Mapping[str, float] | float] | None = None,
               freq: float = 1e12, clock_ps: int = 500, filler: bool = True,
               seed: int = 0, extra: list[str] | None = None) -> list[str]:
    """Lines of one dump block (without banners).

    vec_timing, when given, holds the patch's stats: {"busyCycles": {cls: v}, "microOps":
    {...}, "elements": {...}, "elementBits": x, "laneUtilization": x}; zero vector entries
    are omitted (nozero); see vec_timing_stats for consistent elementBits.
    """
    ops = insts if ops is None else ops
    lines = _head_lines(cycles, insts, ops, freq, cycles * clock_ps, seed)
    types = {c: 0.0 for c in GEM5_OP_CLASSES}
    types.update(inst_type or {"IntAlu": ops})
    lines += vector("system.cpu.commitStats0.committedInstType", types,
                    "Class of committed instruction.")
    lines += vector("system.cpu.commitStats0.committedControl",
                    {"IsControl": insts * 0.05, "IsDirectControl": insts * 0.04,
                     "IsIndirectControl": insts * 0.01, "IsCondControl": insts * 0.03,
                     "IsUncondControl": insts * 0.02, "IsCall": 3, "IsReturn": 3},
                    "Class of control type instructions committed", total=False)
    if vec_timing:
        lines += _vec_timing_lines(vec_timing)
    if extra:
        lines += extra
    if filler:
        lines += _filler(cycles, seed)
    return lines


def _vec_timing_lines(vec_timing: Mapping[str, Mapping[str, float] | float]) -> list[str]:
    lines: list[str] = []
    for group in ("microOps", "elements", "busyCycles"):
        vals = vec_timing.get(group)
        if isinstance(vals, Mapping) and vals:
            lines += vector(f"system.cpu.vecTiming.{group}", vals,
                            f"vector timing model: {group} per op class", nozero=True)
    eb = vec_timing.get("elementBits")
    if eb is not None and not isinstance(eb, Mapping):
        lines.append(scalar("system.cpu.vecTiming.elementBits", float(eb),
                            "Active elements times SEW, arithmetic vector micro-ops"))
    lu = vec_timing.get("laneUtilization")
    if lu is not None and not isinstance(lu, Mapping):
        lines.append(scalar("system.cpu.vecTiming.laneUtilization", float(lu),
                            "busy lane-cycles / (lanes * busy cycles)", "Ratio", 6))
    return lines


def vec_timing_stats(micro_ops: Mapping[str, float], elements: Mapping[str, float],
                     sew: int = 32, **rest: object) -> dict[str, object]:
    """The patch's vecTiming stats for micro-ops of one SEW, elementBits counted as gem5
    does: active elements x SEW over VECTOR_UNIT_CLASSES only."""
    bits = sew * sum(v for c, v in elements.items() if c in VECTOR_UNIT_CLASSES)
    return {"microOps": dict(micro_ops), "elements": dict(elements), "elementBits": bits,
            **rest}


def stats_text(blocks: list[list[str]], messages: list[str] | None = None) -> str:
    """A whole stats.txt from the lines of each dump (gem5 puts a blank line first)."""
    out = []
    for i, lines in enumerate(blocks):
        banner = BEGIN_LINE
        if messages and messages[i]:
            banner = f"---------- Begin Simulation Statistics ({messages[i]}) ----------"
        out.append("\n" + banner + "\n")
        out.append("\n".join(lines) + "\n")
        out.append("\n" + END_LINE + "\n")
    return "".join(out)


def roi_stats_text(cycles: float, insts: float, **kw: object) -> str:
    """A two-dump file as the workload produces: dump 1 = ROI, dump 2 = the exit dump."""
    roi = dump_lines(cycles, insts, **kw)  # type: ignore[arg-type]
    final = dump_lines(cycles * 1.5 + 1000, insts * 1.4 + 100, filler=True)
    return stats_text([roi, final])
