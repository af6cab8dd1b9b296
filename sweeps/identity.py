"""Run identity: the id of a run is a content hash of everything that decides its result.

    id = first 16 hex of sha256(canonical JSON of identity_of(run.json))

Same inputs, same id: a finished run is found again by any sweep that asks for it, and a
changed input (binary, gem5, patch series, resolved system, arguments, stack layout) is a
new run. The kept archives (results/reference*) hold runs under these ids, and
sweeps/tests/test_golden_ids.py checks that they stay.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sweeps.runjson import RunJson
from system.resolved import identity_view
from workloads.kernels import kernel

ID_LEN = 16


def canonical(obj: Any) -> str:
    """JSON with sorted keys and no spaces: the same object always gives the same text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _as_before(sha: str | None) -> str:
    # Ids were first computed by an f-string that wrote a missing hash as the text "None"
    # (qemu runs have no gem5 or patch series); keeping it keeps their ids.
    return str(sha)


def identity_of(run: RunJson) -> dict[str, Any]:
    """What a run's id hashes, read from its run.json: the workload binary (name and sha256)
    and arguments, the stack layout, the part of the resolved system the kernel depends on,
    gem5 and the patch series, the QEMU VLEN of a vector kernel, the target and the schema.
    The reference file (workload.ref) is not part of it: with or without one the run
    computes the same thing."""
    wl = run["workload"]
    vector = kernel(run["axes"]["kernel"]).vector
    system = run["system"]
    ident: dict[str, Any] = {
        "args": wl["args"], "binary": wl["binary"], "sha256": _as_before(wl.get("sha256")),
        "gem5": _as_before(run.get("gem5_sha256")),
        "patches": _as_before(run.get("patches_sha256")),
        "qemu_vlen": run["qemu"]["vlen"] if vector and "qemu" in run else None,
        "schema": run["schema"], "target": run["target"],
        "system": None if system is None else identity_view(system, vector),
    }
    if "stack" in wl:
        ident["stack"] = wl["stack"]
    return ident


def run_id(run: RunJson) -> str:
    return hashlib.sha256(canonical(identity_of(run)).encode()).hexdigest()[:ID_LEN]
