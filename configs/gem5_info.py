"""Print facts about the running gem5 binary as one JSON line (used by `make check-gem5`).

Runs inside gem5: `gem5.opt -q configs/gem5_info.py`.
"""

import json

import _m5.core
from gem5.runtime import get_supported_isas
from patch_params import PATCH_PARAMS

info = {
    "version": _m5.core.gem5Version,
    "isas": sorted(isa.name for isa in get_supported_isas()),
    "patched": False,
    "missing_params": list(PATCH_PARAMS),
}
try:
    from m5.objects import BaseMinorCPU

    info["missing_params"] = [p for p in PATCH_PARAMS if p not in BaseMinorCPU._params]
    info["patched"] = "vecTimingModel" in BaseMinorCPU._params
except ImportError:
    pass
print("VECSCALE_GEM5_INFO " + json.dumps(info))
