"""Expand a spec into runs: filter, drop ignored axes, resolve, hash, dedupe.

A *point* is one combination of the spec's axes. A *run* is what gets simulated. Several
points map to the same run when they differ only in axes the kernel ignores (the scalar
kernels ignore VLEN, lanes and vector timing; the `fixed` timing model ignores lanes;
prefill ignores L, decode ignores N, ...; workloads/kernels.py says which). The run id is a
content hash of everything that decides the result (sweeps/identity.py), so a finished run
is found again by any sweep that asks for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeps.hashes import HashCache, patches_sha256
from sweeps.identity import run_id
from sweeps.refs import reference_of
from sweeps.runjson import RunJson, make_run_json, stack_layout
from sweeps.spec import AXIS_NAMES, Spec, SpecError
from system.gem5find import Gem5Error, find_gem5
from system.loader import UarchError, load_uarch
from system.model import Uarch
from system.resolved import ResolvedSystem, resolve
from vecscale.vocab import workload_dir
from workloads import kernels as registry
from workloads.models import load_models

#: the axes of a run.json, in the order they are written
RUN_AXES = tuple(dict.fromkeys(("uarch", "vlen", "lanes", "timing_model", *AXIS_NAMES)))


@dataclass
class Run:
    id: str
    axes: dict[str, Any]
    run_json: RunJson
    kernel: str
    phase: str | None


@dataclass
class Plan:
    spec: Spec
    runs: dict[str, Run] = field(default_factory=dict)
    #: every requested point (full axes) with the id of the run that answers it
    points: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def shared(self) -> int:
        return len(self.points) - len(self.runs)


@dataclass
class Inputs:
    """What the runs of one plan share: file hashes and the loaded uarchs."""

    binary_sha: dict[str, str | None] = field(default_factory=dict)
    gem5_sha: str | None = None
    patches_sha: str | None = None
    uarchs: dict[str, Uarch] = field(default_factory=dict)
    systems: dict[tuple[str, int, int], ResolvedSystem] = field(default_factory=dict)
    #: what the plan says about itself (a value lowered to what the problem has), once each
    notes: dict[str, None] = field(default_factory=dict)


def point_matches(point: dict[str, Any], flt: dict[str, Any]) -> bool:
    for k, want in flt.items():
        have = point.get(k)
        if isinstance(want, list):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


def _binary_hashes(spec: Spec, hashes: HashCache, require: bool, warnings: list[str]
                   ) -> dict[str, str | None]:
    wdir = Path(workload_dir())
    out: dict[str, str | None] = {}
    for name, prec in itertools.product(spec.axes.kernel, spec.axes.precision):
        k = registry.kernel(name)
        try:
            b = k.binary_for(prec if "precision" in k.family.axes else "fp32")
        except KeyError:
            continue  # no such binary: a point that asks for it is refused in run_of
        if b not in out:
            out[b] = hashes.file(wdir / b)
            if out[b] is None:
                msg = f"{wdir / b}: workload binary missing (run `make workloads`)"
                if require:
                    raise SpecError(msg)
                warnings.append(msg)
    return out


def _gem5_hash(shown: str, hashes: HashCache, require: bool, fallback: str | None,
               warnings: list[str]) -> str | None:
    try:
        gem5 = find_gem5()
    except Gem5Error as e:
        if require:
            raise SpecError(f"{shown}: target gem5: {e}") from None
        if fallback:
            warnings.append("no gem5 (GEM5 unset, no `make gem5` build); using the gem5 binary "
                            f"hash recorded by the last run of this sweep ({fallback[:12]})")
        else:
            warnings.append(f"{e}; ids below use gem5 'unknown'")
        return fallback
    sha = hashes.file(Path(gem5))
    if sha is None:
        raise SpecError(f"GEM5={gem5}: no such file (expected a gem5.opt binary)")
    return sha


def _inputs(spec: Spec, shown: str, hashes: HashCache, require: bool, fallback: str | None,
            warnings: list[str]) -> Inputs:
    inputs = Inputs(_binary_hashes(spec, hashes, require, warnings))
    if spec.target == "gem5":
        inputs.gem5_sha = _gem5_hash(shown, hashes, require, fallback, warnings)
        inputs.patches_sha = patches_sha256()
        inputs.uarchs = {u: load_uarch(u) for u in spec.axes.uarch or ()}
    return inputs


def points(spec: Spec, inputs: Inputs) -> Iterator[dict[str, Any]]:
    """The spec's points, filtered: each a dict of axis values (plus the uarch's
    timing_model on gem5, which filters may name)."""
    names = [n for n in AXIS_NAMES if getattr(spec.axes, n) is not None]
    for combo in itertools.product(*(getattr(spec.axes, n) for n in names)):
        point = dict(zip(names, combo, strict=True))
        for k in registry.kernel(point["kernel"]).family.drops:
            point.pop(k, None)
        if spec.target == "gem5":
            point["timing_model"] = inputs.uarchs[point["uarch"]].timing_model
        if spec.exclude and any(point_matches(point, f) for f in spec.exclude):
            continue
        if spec.include_only and not any(point_matches(point, f) for f in spec.include_only):
            continue
        yield point


def _system(point: dict[str, Any], inputs: Inputs, shown: str) -> ResolvedSystem:
    u, v, la = point["uarch"], point["vlen"], point["lanes"]
    system = inputs.systems.get((u, v, la))
    if system is None:
        ua = inputs.uarchs[u]
        why = ua.allows(v, la)
        if why:
            raise SpecError(f"{shown}: axes.vlen: VLEN {v} with {la} lanes not allowed by "
                            f"uarch {u}: {why} (exclude it or pick another uarch)")
        try:
            system = resolve(ua, v, la)
        except UarchError as e:
            raise SpecError(f"{shown}: axes.uarch: {u}: {e}") from None
        inputs.systems[(u, v, la)] = system
    return system


def _check_args(axes: dict[str, Any], k: registry.Kernel, spec: Spec, inputs: Inputs,
                shown: str) -> None:
    """The workload arguments a run gets, checked against the ranges its workload accepts
    (workloads/kernels.py); a value the workload lowers to what the problem has (q8's
    max_rows beyond the layer) is lowered here too, so the run is labelled with what runs."""
    problem = registry.arg_problem(axes)
    if problem is not None:
        axis, why = problem
        i = list(getattr(spec.axes, axis)).index(axes[axis])
        raise SpecError(f"{shown}: axes.{axis}.{i}: {why}")
    for axis, (value, what) in k.family.lowered(axes, load_models()[axes["model"]]).items():
        inputs.notes[f"axes.{axis}: {axes[axis]} is more than {what}: those runs compute "
                     f"(and are labelled) {value}"] = None
        axes[axis] = value


def run_of(point: dict[str, Any], spec: Spec, inputs: Inputs, shown: str,
           qemu_vlen: int) -> RunJson:
    """The run.json (with its id) that answers a point: the point's axes a kernel ignores
    set to null, the resolved system, the workload's command line."""
    k = registry.kernel(point["kernel"])
    phase = point.get("phase") if "phase" in k.family.axes else None
    used = registry.used_axes(k.name, phase)
    system = None
    if spec.target == "gem5":
        system = _system(point, inputs, shown)
        used.add("uarch")
        if k.vector:
            used.add("timing_model")
            if inputs.uarchs[point["uarch"]].ignores_lanes:
                used.discard("lanes")
    axes = {a: (point.get(a) if a in used else None) for a in RUN_AXES}
    _check_args(axes, k, spec, inputs, shown)
    gem5 = spec.target == "gem5"
    try:  # one binary per kernel family and precision
        binary = k.binary_for(axes.get("precision") or "fp32")
    except KeyError as e:
        raise SpecError(f"{shown}: axes.precision: {e.args[0]} (exclude those points)") from None
    run = make_run_json(
        target=spec.target, axes=axes, system=system, binary=binary,
        sha256=inputs.binary_sha[binary],
        args=registry.workload_args(axes, "m5" if gem5 else "none"),
        gem5_sha256=inputs.gem5_sha, patches_sha256=inputs.patches_sha,
        stack=stack_layout(axes.get("stack_shift") or 0) if gem5 else None,
        qemu_vlen=None if gem5 else (point["vlen"] if k.vector else qemu_vlen),
        ref=reference_of(axes) if gem5 and k.family.reference_kernel else None)
    run["id"] = run_id(run)
    return run


def build_plan(spec: Spec, shown: str = "spec", hashes: HashCache | None = None,
               require_inputs: bool = False, gem5_sha_fallback: str | None = None) -> Plan:
    """Expand, filter, resolve and hash. `require_inputs`: missing binaries are errors."""
    hashes = hashes or HashCache(None)
    plan = Plan(spec)
    inputs = _inputs(spec, shown, hashes, require_inputs, gem5_sha_fallback, plan.warnings)
    qemu_vlen = min(spec.axes.vlen)  # a scalar kernel on qemu runs at the smallest VLEN
    dropped: dict[tuple[str, str], int] = {}
    for point in points(spec, inputs):
        if why := registry.kernel(point["kernel"]).cannot_run(point,
                                                               load_models()[point["model"]]):
            dropped[(point["kernel"], why)] = dropped.get((point["kernel"], why), 0) + 1
            continue
        run = run_of(point, spec, inputs, shown, qemu_vlen)
        plan.points.append((point, run["id"]))
        if run["id"] not in plan.runs:
            plan.runs[run["id"]] = Run(run["id"], run["axes"], run, point["kernel"],
                                       run["axes"]["phase"])
    drops = [f"axes.kernel: {k}: {n} point{'s' if n > 1 else ''} dropped where it cannot "
             f"run ({why})" for (k, why), n in dropped.items()]
    if not plan.points:
        if drops:
            raise SpecError(f"{shown}: no point left to run: {'; '.join(drops)}")
        raise SpecError(f"{shown}: exclude/include_only: the filters leave no point to run")
    plan.warnings += [f"{shown}: {n}" for n in [*inputs.notes, *drops]]
    hashes.save()
    return plan
