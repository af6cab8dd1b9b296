"""BaseMinorCPU parameters that gem5-patches/ adds and configs/run.py sets.

A binary with the vecscale patches but without one of these was built from an older series:
it must be rebuilt. Imported inside gem5 (run.py, gem5_info.py): standard library only.
"""

PATCH_PARAMS = (
    "vecTimingModel",
    "vecTimingVlen",
    "vecTimingLanes",
    "vecTimingLaneBits",
    "vecTimingLatClasses",
    "vecTimingLatCycles",
    "vecTimingStartupClasses",
    "vecTimingStartupCycles",
    "vecTimingReducePerLevel",
    "vecTimingPermuteCrossLane",
    "vecTimingUnitQueue",
)
