from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis import synth
from analysis.stats import StatsError, parse_file, parse_text, roi_dump

DATA = Path(__file__).parent / "data"
REAL = sorted(p for p in (DATA / "real").glob("*") if p.is_file() and not p.name.startswith("."))

B = "\n---------- Begin Simulation Statistics ----------\n"
E = "\n---------- End Simulation Statistics   ----------\n"

SMALL = (
    B
    + "simSeconds                                   0.000123                       "
      "# Number of seconds simulated (Second)\n"
    "simTicks                                    123000000                       "
    "# Number of ticks simulated (Tick)\n"
    "simFreq                                  1000000000000                       "
    "# The number of ticks per simulated second ((Tick/Second))\n"
    "system.cpu.numCycles                           246000                       "
    "# Number of cpu cycles simulated (Cycle)\n"
    "system.cpu.ipc                               nan                       # IPC (Count/Cycle)\n"
    "system.cpu.weird                             inf                       # inf (Count)\n"
    "system.cpu.neg                              -inf\n"
    "system.cpu.commitStats0.committedInstType::IntAlu          300     60.00%     60.00% "
    "# Class of committed instruction. (Count)\n"
    "system.cpu.commitStats0.committedInstType::SimdFloatMultAcc          200     40.00%"
    "    100.00% # Class of committed instruction. (Count)\n"
    "system.cpu.commitStats0.committedInstType::total          500                       "
    "# Class of committed instruction. (Count)\n"
    "system.cpu.lat::samples                            10                       # lat (Cycle)\n"
    "system.cpu.lat::mean                         2.500000                       # lat (Cycle)\n"
    "system.cpu.lat::stdev                        1.080123                       # lat (Cycle)\n"
    "system.cpu.lat::0-3                                 8     80.00%     80.00% # lat (Cycle)\n"
    "system.cpu.lat::4-7                                 2     20.00%    100.00% # lat (Cycle)\n"
    "system.cpu.lat::overflows                           0      0.00%    100.00% # lat (Cycle)\n"
    "system.cpu.lat::total                              10                       # lat (Cycle)\n"
    "system.cpu.cpiFormula                        1.234567                       # a formula\n"
    + E
    + B
    + "system.cpu.numCycles                           999999                       # (Cycle)\n"
    + E
)


def test_multiple_dumps_and_roi_selection() -> None:
    dumps = parse_text(SMALL, "small")
    assert len(dumps) == 2
    assert dumps[0].get("system.cpu.numCycles") == 246000
    assert dumps[1].get("system.cpu.numCycles") == 999999
    assert [d.index for d in dumps] == [1, 2]


def test_scalars_vectors_distributions_formulas() -> None:
    d = parse_text(SMALL)[0]
    assert d.get("simSeconds") == pytest.approx(0.000123)
    assert d.get("system.cpu.commitStats0.committedInstType::SimdFloatMultAcc") == 200
    vec = d.vector("system.cpu.commitStats0.committedInstType")
    assert vec == {"IntAlu": 300, "SimdFloatMultAcc": 200, "total": 500}
    dist = d.vector("system.cpu.lat")
    assert dist["samples"] == 10 and dist["0-3"] == 8 and dist["4-7"] == 2
    assert dist["mean"] == pytest.approx(2.5) and dist["overflows"] == 0
    assert d.get("system.cpu.cpiFormula") == pytest.approx(1.234567)


def test_nan_inf() -> None:
    d = parse_text(SMALL)[0]
    assert math.isnan(d.get("system.cpu.ipc"))
    assert d.get("system.cpu.weird") == math.inf
    assert d.get("system.cpu.neg") == -math.inf


def test_missing_stat_is_zero_and_prefix_not_confused() -> None:
    d = parse_text(SMALL)[0]
    assert d.get("system.cpu.vecTiming.busyCycles::SimdMisc") == 0.0
    assert d.get("system.cpu.numCycl") == 0.0  # a prefix of a real name is not a match
    assert d.vector("system.cpu.vecTiming.busyCycles") == {}
    assert math.isnan(d.get("nothere", math.nan))
    assert not d.has("system.cpu.numCycl") and d.has("system.cpu.numCycles")


def test_lazy_lookup_agrees_with_full_conversion() -> None:
    d = parse_file(DATA / "minor_rvv_two_dumps.txt")[0]
    full = d.to_dict()
    for name in ("system.cpu.numCycles", "simTicks", "system.cpu.vecTiming.laneUtilization",
                 "system.l2cache.overallMisses::cpu.data"):
        lazy = parse_file(DATA / "minor_rvv_two_dumps.txt")[0].get(name)
        assert lazy == full[name]
    assert full["system.cpu.numCycles"] == 123456
    assert d.vector("system.cpu.vecTiming.busyCycles")["SimdFloatMultAcc"] == 32768


def test_banner_with_message_and_comment_lines() -> None:
    text = ("\n---------- Begin Simulation Statistics (roi) ----------\n"
            "# a comment line\n"
            "system.cpu.numCycles   42   # cycles\n" + E)
    dumps = parse_text(text)
    assert dumps[0].message == "(roi)"
    assert dumps[0].get("system.cpu.numCycles") == 42
    assert dumps[0].to_dict() == {"system.cpu.numCycles": 42}


@pytest.mark.parametrize("text,reason", [
    ("", "empty"),
    ("   \n\n", "empty"),
    ("hello world\nthis is not gem5\n", "not a gem5 stats.txt"),
    ("\x7fELF\x00\x01\x02garbage", "binary"),
    (SMALL[: len(SMALL) // 2], "truncated"),
    (B + "system.cpu.numCycles  12", "truncated"),  # cut mid-line
    (SMALL[: SMALL.rindex(E)], "truncated"),  # second dump has no End banner
    ("\n---------- Begin Simulation Stat", "not a gem5"),
])
def test_bad_files_raise_one_line_error(tmp_path: Path, text: str, reason: str) -> None:
    p = tmp_path / "stats.txt"
    p.write_bytes(text.encode("latin-1"))
    with pytest.raises(StatsError) as ei:
        parse_file(p)
    msg = str(ei.value)
    assert reason in msg and str(p) in msg and "\n" not in msg


def test_non_numeric_value_is_an_error() -> None:
    d = parse_text(B + "system.cpu.numCycles   abc\n" + E)[0]
    with pytest.raises(StatsError, match="non-numeric"):
        d.get("system.cpu.numCycles")


def test_roi_dump_out_of_range(tmp_path: Path) -> None:
    p = tmp_path / "stats.txt"
    p.write_text(SMALL)
    assert roi_dump(p, 2).get("system.cpu.numCycles") == 999999
    with pytest.raises(StatsError, match="has 2 dump"):
        roi_dump(p, 3)
    with pytest.raises(StatsError, match="no such file"):
        roi_dump(tmp_path / "absent.txt")


def test_synth_format_round_trip() -> None:
    text = synth.roi_stats_text(5000, 2500, inst_type={"SimdMisc": 7, "IntAlu": 2493})
    d = parse_text(text)[0]
    assert d.get("system.cpu.numCycles") == 5000
    assert d.vector("system.cpu.commitStats0.committedInstType")["SimdMisc"] == 7
    # nozero vectors omit zero entries: they read as 0
    assert d.get("system.cpu.vecTiming.busyCycles::SimdMisc") == 0


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_gem5_files(path: Path) -> None:
    dumps = parse_file(path)
    assert len(dumps) == 2  # the workload's ROI dump, then gem5's exit dump
    roi = dumps[0]
    cpu = roi.cpu()
    assert cpu == "board.processor.switch.core"  # the Minor core switched in for the ROI
    assert roi.get(cpu + ".numCycles") > 0 and roi.get(cpu + ".commitStats0.numInsts") > 0
    # the fast atomic core ran nothing inside the ROI
    assert roi.get("board.processor.start.core.numCycles") == 0
    if "scalar" not in path.name:
        assert roi.has_prefix(cpu + ".vecTiming.")
        assert roi.vector(cpu + ".vecTiming.microOps")["total"] > 0
    for d in dumps:
        full = d.to_dict()
        assert full.get("simTicks", 0) == d.get("simTicks")


def test_tab_separated_entries() -> None:
    d = parse_text(B + "system.cpu.numCycles\t77\t# cycles\nsystem.cpu.v::a\t3\n" + E)[0]
    assert d.get("system.cpu.numCycles") == 77
    assert d.vector("system.cpu.v") == {"a": 3}
