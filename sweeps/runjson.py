"""run.json: what one run is, written by the planner (and by tools.one and tools.vbench),
read by the runner, configs/run.py and the analysis. make_run_json is its one constructor.

It names the workload binary by file name only (found in vecscale.vocab.workload_dir() when
the run starts), so it holds no path of the machine that planned it.
"""

from __future__ import annotations

from typing import Any, TypedDict

from system.resolved import ResolvedSystem

#: run.json's format version, also part of every run id
SCHEMA = 1
#: bytes the simulated process's argv and envp (strings and pointers) are padded to in gem5,
#: so that its stack addresses do not depend on paths or arguments (configs/stack_layout.py)
STACK_AREA = 4096


class StackLayout(TypedDict):
    area: int
    shift: int


class Reference(TypedDict):
    file: str  # relative to the run folder
    args: list[str]  # make it with `--make-ref FILE` (sweeps/refs.py)


class Workload(TypedDict, total=False):
    binary: str  # file name in the workloads folder
    sha256: str | None  # of the binary; None when it was not there at planning time
    args: list[str]
    stack: StackLayout  # gem5 runs
    ref: Reference  # gem5 attention runs: the precomputed reference (not part of the id)


class RunJson(TypedDict, total=False):
    schema: int
    id: str
    target: str
    axes: dict[str, Any]  # every axis, null where the run's kernel ignores it
    system: ResolvedSystem | None  # None on qemu
    workload: Workload
    roi_dump: int  # the stats dump of the region of interest (1-based)
    gem5_sha256: str | None
    patches_sha256: str | None
    qemu: dict[str, int]  # qemu runs: {"vlen": VLEN}


def stack_layout(shift: int = 0) -> StackLayout:
    return {"area": STACK_AREA, "shift": shift}


def make_run_json(*, target: str, axes: dict[str, Any], system: ResolvedSystem | None,
                  binary: str, args: list[str], sha256: str | None = None,
                  gem5_sha256: str | None = None, patches_sha256: str | None = None,
                  stack: StackLayout | None = None, qemu_vlen: int | None = None,
                  ref: Reference | None = None) -> RunJson:
    """A run's run.json (without its id, which sweeps.identity.run_id computes from it)."""
    workload: Workload = {"binary": binary, "sha256": sha256, "args": list(args)}
    if stack is not None:
        workload["stack"] = stack
    if ref is not None:
        workload["ref"] = ref
    run: RunJson = {"schema": SCHEMA, "target": target, "axes": axes, "system": system,
                    "workload": workload, "roi_dump": 1, "gem5_sha256": gem5_sha256,
                    "patches_sha256": patches_sha256}
    if target == "qemu":
        run["qemu"] = {"vlen": int(qemu_vlen or 0)}
    return run
