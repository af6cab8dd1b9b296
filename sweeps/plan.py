"""Expand a spec into runs: filter, drop ignored axes, resolve, hash, dedupe.

A *point* is one combination of the spec's axes. A *run* is what gets simulated. Several
points map to the same run when they differ only in axes the kernel ignores (the scalar
kernels ignore VLEN, lanes and vector timing; the `fixed` timing model ignores lanes;
prefill ignores L, decode ignores N, ...). The run id is a content hash of everything that
decides the result, so a finished run is found again by any sweep that asks for it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeps.gem5find import Gem5Error, find_gem5
from sweeps.spec import (
    ATTN_KERNELS,
    AXIS_NAMES,
    REPO,
    SCALAR_KERNELS,
    TUNABLE_KERNELS,
    TUNABLES,
    Spec,
    SpecError,
)

SCHEMA = 1
#: bytes the simulated process's argv and envp (strings and pointers) are padded to in gem5,
#: so that its stack addresses do not depend on paths or arguments (configs/stack_layout.py)
STACK_AREA = 4096
ID_LEN = 16
#: system keys that only matter to vector code (dropped from a scalar run's identity)
VECTOR_SYSTEM_KEYS = ("uarch", "vlen", "lanes", "lane_bits", "timing_model", "lanes_model")
PATCH_DIR = REPO / "gem5-patches"


def workload_dir() -> Path:
    return Path(os.environ.get("VECSCALE_WORKLOADS") or REPO / "workloads" / "build")


def gem5_config() -> Path:
    return Path(os.environ.get("VECSCALE_GEM5_CONFIG") or REPO / "configs" / "run.py")


def binary_for(kernel: str) -> str:
    """The workload binary a kernel runs from: one per attention kernel family, so that a
    run's id (which hashes the binary) changes only with its own kernel's code."""
    if kernel in ATTN_KERNELS:
        return "attention-scalar" if kernel in SCALAR_KERNELS else f"attention-{kernel}"
    return "q8-scalar" if kernel in SCALAR_KERNELS else "q8"


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


class HashCache:
    """sha256 of files, memoised by (path, size, mtime) in a JSON file and in memory."""

    def __init__(self, store: Path | None) -> None:
        self.store = store
        self.mem: dict[str, str | None] = {}
        self.disk: dict[str, str] = {}
        self.dirty = False
        if store is not None and store.exists():
            try:
                self.disk = json.loads(store.read_text())
            except (OSError, ValueError):
                self.disk = {}

    def file(self, path: Path) -> str | None:
        key = str(path)
        if key in self.mem:
            return self.mem[key]
        try:
            st = path.stat()
        except OSError:
            self.mem[key] = None
            return None
        stamp = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        digest = self.disk.get(stamp)
        if digest is None:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()
            self.disk[stamp] = digest
            self.dirty = True
        self.mem[key] = digest
        return digest

    def save(self) -> None:
        if self.store is None or not self.dirty:
            return
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.store.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.disk))
            os.replace(tmp, self.store)
        except OSError:
            pass


def patches_sha256() -> str:
    h = hashlib.sha256()
    for p in sorted(PATCH_DIR.glob("*.patch")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass
class Run:
    id: str
    axes: dict[str, Any]
    run_json: dict[str, Any]
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


def point_matches(point: dict[str, Any], flt: dict[str, Any]) -> bool:
    for k, want in flt.items():
        have = point.get(k)
        if isinstance(want, list):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


def used_axes(kernel: str, phase: str | None) -> set[str]:
    """Axes whose value changes a run of this kernel/phase: what the workload computes, or
    (stack_shift) where its stack lies."""
    used = {"kernel", "model", "seed", "test_perturb", "stack_shift"}
    if kernel in ATTN_KERNELS:
        used |= {"phase", "precision", "n" if phase == "prefill" else "l"}
        if kernel in TUNABLE_KERNELS:
            used |= set(TUNABLES)
    else:
        used |= {"proj", "max_rows"}
    if kernel not in SCALAR_KERNELS:
        used |= {"vlen", "lanes"}
    return used


def workload_args(axes: dict[str, Any], roi: str) -> list[str]:
    k = axes["kernel"]
    args = ["--kernel", k, "--model", axes["model"]]
    if k in ATTN_KERNELS:
        args += ["--phase", axes["phase"]]
        args += ["--n", str(axes["n"])] if axes["phase"] == "prefill" else ["--l", str(axes["l"])]
        args += ["--precision", axes["precision"]]
    else:
        args += ["--proj", axes["proj"]]
        if axes.get("max_rows") is not None:
            args += ["--max-rows", str(axes["max_rows"])]
    for name, flag in TUNABLES.items():
        if axes.get(name) is not None:
            args += [flag, str(axes[name])]
    args += ["--seed", str(axes["seed"])]
    if axes.get("test_perturb"):
        args.append("--test-perturb")
    args += ["--roi", roi]
    return args


#: where a sweep keeps reference files, relative to a run folder (results/<sweep>/runs/<id>)
REFS_FROM_RUN = "../../refs"


def reference_of(axes: dict[str, Any]) -> dict[str, Any]:
    """The attention reference a gem5 run checks against: it depends on the problem and the
    seed only, so runs of every kernel, VLEN and uarch share one file, computed once on QEMU
    before the sweep (sweeps/refs.py) instead of on gem5 after every kernel. `args` make it
    (with --make-ref FILE); `file` is relative to the run folder. Not part of the run id:
    with or without the file the run computes the same thing."""
    args = ["--kernel", "ggml-scalar", "--model", axes["model"], "--phase", axes["phase"]]
    args += ["--n", str(axes["n"])] if axes["phase"] == "prefill" else ["--l", str(axes["l"])]
    args += ["--seed", str(axes["seed"])]
    key = hashlib.sha256(canonical(args).encode()).hexdigest()[:ID_LEN]
    return {"file": f"{REFS_FROM_RUN}/{key}.ref", "args": args}


def build_plan(spec: Spec, shown: str = "spec", hashes: HashCache | None = None,
               require_inputs: bool = False, gem5_sha_fallback: str | None = None) -> Plan:
    """Expand, filter, resolve and hash. `require_inputs`: missing binaries are errors."""
    hashes = hashes or HashCache(None)
    plan = Plan(spec)
    ax = spec.axes
    names = [n for n in AXIS_NAMES if getattr(ax, n) is not None]
    values = [getattr(ax, n) for n in names]

    wdir = workload_dir()
    bin_sha: dict[str, str | None] = {}
    for kern in ax.kernel:
        b = binary_for(kern)
        if b not in bin_sha:
            bin_sha[b] = hashes.file(wdir / b)
            if bin_sha[b] is None:
                msg = f"{wdir / b}: workload binary missing (run `make workloads`)"
                if require_inputs:
                    raise SpecError(msg)
                plan.warnings.append(msg)
    gem5_sha = patch_sha = None
    uarchs: dict[str, Any] = {}
    if spec.target == "gem5":
        try:
            gem5: str | None = find_gem5()
        except Gem5Error as e:
            if require_inputs:
                raise SpecError(f"{shown}: target gem5: {e}") from None
            gem5 = None
            if gem5_sha_fallback:
                gem5_sha = gem5_sha_fallback
                plan.warnings.append("no gem5 (GEM5 unset, no `make gem5` build); using the "
                                     "gem5 binary hash recorded by the last run of this sweep "
                                     f"({gem5_sha[:12]})")
            else:
                plan.warnings.append(f"{e}; ids below use gem5 'unknown'")
        if gem5:
            gem5_sha = hashes.file(Path(gem5))
            if gem5_sha is None:
                raise SpecError(f"GEM5={gem5}: no such file (expected a gem5.opt binary)")
        patch_sha = patches_sha256()
        from sweeps import uarch as uarch_mod

        for u in ax.uarch or ():
            uarchs[u] = uarch_mod.load_uarch(u)
    qemu_min_vlen = min(ax.vlen)

    resolved: dict[tuple[str, int, int], dict[str, Any]] = {}
    ident_sys: dict[tuple[str, int, int, bool], str] = {}
    roi = "m5" if spec.target == "gem5" else "none"

    for combo in itertools.product(*values):
        point = dict(zip(names, combo, strict=True))
        kern = point["kernel"]
        phase = point.get("phase") if kern in ATTN_KERNELS else None
        if kern not in ATTN_KERNELS:
            for k in ("phase", "n", "l", "precision"):
                point.pop(k, None)
        ua = None
        if spec.target == "gem5":
            ua = uarchs[point["uarch"]]
            point["timing_model"] = ua.timing_model
        if spec.exclude and any(point_matches(point, f) for f in spec.exclude):
            continue
        if spec.include_only and not any(point_matches(point, f) for f in spec.include_only):
            continue
        used = used_axes(kern, phase)
        system = None
        sys_ident = "null"
        qemu_vlen = None
        scalar = kern in SCALAR_KERNELS
        if ua is not None:
            u, v, la = point["uarch"], point["vlen"], point["lanes"]
            system = _resolve(ua, u, v, la, resolved, shown)
            lanes_ignored = bool(ua.ignores_lanes)
            key = (u, v, la, scalar)
            if key not in ident_sys:
                ident_sys[key] = canonical(_identity_system(system, scalar, lanes_ignored))
            sys_ident = ident_sys[key]
            used |= {"uarch"}
            if not scalar:
                used |= {"timing_model"}
                if lanes_ignored:
                    used.discard("lanes")
        else:
            qemu_vlen = qemu_min_vlen if scalar else point["vlen"]
        axes = {k: (point.get(k) if k in used else None) for k in
                ("uarch", "vlen", "lanes", "timing_model", *AXIS_NAMES)}
        args = workload_args(axes, roi)
        binary = binary_for(kern)
        stack = None
        if spec.target == "gem5":
            stack = {"area": STACK_AREA, "shift": axes.get("stack_shift") or 0}
        identity = (
            f'{{"args":{canonical(args)},"binary":"{binary}","gem5":"{gem5_sha}",'
            f'"patches":"{patch_sha}",'
            f'"qemu_vlen":{json.dumps(None if scalar else qemu_vlen)},'
            f'"schema":{SCHEMA},"sha256":"{bin_sha[binary]}",'
            + (f'"stack":{canonical(stack)},' if stack else "")
            + f'"system":{sys_ident},"target":"{spec.target}"}}'
        )
        rid = hashlib.sha256(identity.encode()).hexdigest()[:ID_LEN]
        plan.points.append((point, rid))
        if rid in plan.runs:
            continue
        run_json: dict[str, Any] = {
            "schema": SCHEMA,
            "id": rid,
            "target": spec.target,
            "axes": axes,
            "system": system,
            "workload": {"binary": binary, "path": str(wdir / binary),
                         "sha256": bin_sha[binary], "args": args,
                         **({"stack": stack} if stack else {})},
            "roi_dump": 1,
            "gem5_sha256": gem5_sha,
            "patches_sha256": patch_sha,
        }
        if spec.target == "qemu":
            run_json["qemu"] = {"vlen": qemu_vlen}
        elif kern in ATTN_KERNELS:
            run_json["workload"]["ref"] = reference_of(axes)
        plan.runs[rid] = Run(rid, axes, run_json, kern, phase)
    if not plan.points:
        raise SpecError(f"{shown}: exclude/include_only: the filters leave no point to run")
    hashes.save()
    return plan


def _resolve(ua: Any, u: str, v: int, la: int,
             cache: dict[tuple[str, int, int], dict[str, Any]], shown: str) -> dict[str, Any]:
    system = cache.get((u, v, la))
    if system is None:
        from sweeps import uarch as uarch_mod

        why = ua.allows(v, la)
        if why:
            raise SpecError(f"{shown}: axes.vlen: VLEN {v} with {la} lanes not allowed by "
                            f"uarch {u}: {why} (exclude it or pick another uarch)")
        try:
            system = uarch_mod.resolve(ua, v, la)
        except uarch_mod.UarchError as e:
            raise SpecError(f"{shown}: axes.uarch: {u}: {e}") from None
        cache[(u, v, la)] = system
    return system


def _identity_system(system: dict[str, Any], scalar: bool, lanes_ignored: bool) -> Any:
    s = dict(system)
    if scalar:
        for k in VECTOR_SYSTEM_KEYS:
            s.pop(k, None)
        lat = s.get("op_latency")
        if isinstance(lat, dict):
            s["op_latency"] = {k: v for k, v in lat.items() if not str(k).startswith("Simd")}
    elif lanes_ignored:
        s.pop("lanes", None)
        s.pop("lane_bits", None)
        s.pop("uarch", None)
    else:
        s.pop("uarch", None)
    return s
