"""Sweep specifications: YAML -> validated `Spec` (pydantic), one-line errors.

A spec names a target (gem5 or qemu), the axes of the grid and filters on it. Everything
that can be checked before a single run starts is checked here, and every problem is
reported as one line: ``<file>: <key>: <what was expected>``. The kernel axes (kernel names,
each kernel's tunables) come from the kernel registry, workloads/kernels.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    create_model,
)

from vecscale.vocab import QEMU_VLENS, STACK_SHIFT_ALIGN, TARGETS
from vecscale.yamlinput import first_error, parse_yaml, read_text
from workloads import kernels as registry
from workloads.models import ModelsError, load_models

REPO = Path(__file__).resolve().parents[1]
SPEC_DIR = Path(__file__).resolve().parent
SCHEMA_FILE = SPEC_DIR / "schema" / "sweep.schema.json"

Phase = Literal["prefill", "decode"]
Proj = Literal["q", "k", "v", "o", "gate", "up", "down"]
Precision = Literal["fp32", "fp16"]


def _axis(item: Any) -> Any:
    return Annotated[list[item], Field(min_length=1)]


def _tunable_axis(t: registry.Tunable) -> tuple[Any, Any]:
    item = Literal[t.choices] if t.kind is str else StrictInt  # type: ignore[valid-type]
    return _axis(item) | None, Field(None, description=t.doc)


#: the grid: every key is a list of values; the grid is their cross product
Axes = create_model(
    "Axes",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The grid: every key is a list of values; the grid is their cross product.",
    uarch=(_axis(str) | None, Field(None, description="configs/uarch names or paths (gem5)")),
    vlen=(_axis(StrictInt), Field(description="vector length in bits (power of two)")),
    lanes=(_axis(StrictInt) | None, Field(None, description="64-bit vector lanes (gem5)")),
    kernel=(_axis(Literal[registry.names()]), ...),  # type: ignore[valid-type]
    precision=(_axis(Precision), ["fp32"]),
    model=(_axis(str), Field(description="keys of workloads/models.yaml")),
    phase=(_axis(Phase) | None, Field(None, description="attention and layer kernels only")),
    n=(_axis(StrictInt) | None, Field(None, description="prefill tokens")),
    l=(_axis(StrictInt) | None, Field(None, description="decode KV length")),
    proj=(_axis(Proj) | None, Field(None, description="q8 kernels only: linear layer")),
    max_rows=(_axis(StrictInt) | None, Field(None, description="q8: output rows simulated")),
    seed=(_axis(StrictInt), [1]),
    **{name: _tunable_axis(t) for name, t in registry.TUNABLES.items()},
    stack_shift=(_axis(StrictInt) | None, Field(
        None, description="gem5: bytes the workload's initial stack is moved down by, a "
        "multiple of 16 (memory-layout sensitivity studies; default 0)")),
    test_perturb=(_axis(StrictBool) | None, Field(
        None, description="test only: the workload reports a wrong result on purpose")),
)

AXIS_NAMES = tuple(Axes.model_fields)
#: integer axes whose values must be positive
POSITIVE_AXES = ("vlen", "lanes", "n", "l", "max_rows",
                 *(n for n, t in registry.TUNABLES.items() if t.kind is int))
Scalar = StrictInt | StrictBool | str
FilterValue = Scalar | list[Scalar]


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    target: Literal[TARGETS]  # type: ignore[valid-type]
    description: str = ""
    axes: Axes  # type: ignore[valid-type]
    exclude: list[dict[str, FilterValue]] = Field(
        [], description="points matching any of these (every key equal / in list) are dropped")
    include_only: list[dict[str, FilterValue]] = Field(
        [], description="if given, only points matching one of these are kept")
    timeout_s: float = Field(6 * 3600, gt=0, description="per-run wall-clock limit")
    estimate_s: dict[str, float] = Field(
        {}, description="planning guess of wall seconds per run, by kernel or kernel/phase")


class SpecError(ValueError):
    """A one-line problem with a sweep spec (file: key: message)."""


def stack_shift_problem(v: int) -> str | None:
    """What is wrong with a stack shift in bytes, or None."""
    if v < 0 or v % STACK_SHIFT_ALIGN:
        return f"expected a multiple of {STACK_SHIFT_ALIGN} >= 0 (got {v})"
    return None


def _allowed_keys(parent: tuple[Any, ...]) -> str:
    return ", ".join(AXIS_NAMES if parent == ("axes",) else tuple(Spec.model_fields))


def spec_path(name_or_path: str | Path) -> Path:
    """A name in sweeps/ ("smoke") or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists() or "/" in str(name_or_path):
        return p
    return SPEC_DIR / f"{name_or_path}.yaml"


def shipped_specs() -> list[str]:
    """The spec names in sweeps/ (what a SPEC argument may name)."""
    return sorted(p.stem for p in SPEC_DIR.glob("*.yaml"))


def load_spec(name_or_path: str | Path) -> tuple[Spec, Path, str]:
    """Parse and check a spec; returns (spec, path, raw text). Raises SpecError."""
    path = spec_path(name_or_path)
    shown = _shown(path)
    known = ", ".join(shipped_specs())
    text = read_text(path, shown, SpecError, f"known specs: {known}")
    data = parse_yaml(text, shown, SpecError)
    if not isinstance(data, dict):
        raise SpecError(f"{shown}: (top level): expected a mapping with keys name, target, "
                        f"axes (got {type(data).__name__})")
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        raise SpecError(first_error(shown, e, _allowed_keys)) from None
    check_spec(spec, shown)
    return spec, path, text


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def check_spec(spec: Spec, shown: str) -> None:
    """Checks pydantic cannot express: cross-key rules, names that must exist."""
    for check in (_check_values, _check_models, _check_kernel_axes, _check_filters,
                  _check_target):
        problem = check(spec)
        if problem is not None:
            raise SpecError(f"{shown}: {problem[0]}: {problem[1]}")


Problem = tuple[str, str] | None


def _check_values(spec: Spec) -> Problem:
    ax = spec.axes
    for key in POSITIVE_AXES:
        for i, v in enumerate(getattr(ax, key) or ()):
            if v <= 0:
                return f"axes.{key}.{i}", f"expected a positive integer (got {v})"
    for i, v in enumerate(ax.stack_shift or ()):
        if problem := stack_shift_problem(v):
            return f"axes.stack_shift.{i}", problem
    for name, t in registry.TUNABLES.items():
        for i, v in enumerate(getattr(ax, name) or ()):
            if t.kind is int and t.choices and v not in t.choices:
                allowed = ", ".join(map(str, t.choices[:-1])) + f" or {t.choices[-1]}"
                return f"axes.{name}.{i}", f"expected {allowed} (got {v})"
    for i, v in enumerate(ax.vlen):
        if v & (v - 1):
            return f"axes.vlen.{i}", f"expected a power of two (got {v})"
    for key in AXIS_NAMES:
        vals = getattr(ax, key)
        if vals is not None and len(set(vals)) != len(vals):
            return f"axes.{key}", f"duplicate values in {vals}"
    return None


def _check_models(spec: Spec) -> Problem:
    try:
        models = load_models()
    except ModelsError as e:
        return "axes.model", str(e)
    for i, m in enumerate(spec.axes.model):
        if m not in models:
            return f"axes.model.{i}", (f"unknown model {m!r} (expected one of: "
                                       f"{', '.join(models)}; see workloads/models.yaml)")
    return None


def _check_kernel_axes(spec: Spec) -> Problem:
    """The axes the spec's kernels need: attention and layer a phase and its size, q8 a
    projection."""
    ax = spec.axes
    q8 = [k for k in ax.kernel if registry.kernel(k).family is registry.Q8]
    for fam in registry.FAMILIES.values():
        if "phase" not in fam.axes:
            continue
        phased = [k for k in ax.kernel if registry.kernel(k).family is fam]
        if not phased:
            continue
        if ax.phase is None:
            return "axes.phase", (f"required for {fam.name} kernels {phased} (prefill and/or "
                                  "decode)")
        if "prefill" in ax.phase and ax.n is None:
            return "axes.n", "required when phase includes prefill (tokens N)"
        if "decode" in ax.phase and ax.l is None:
            return "axes.l", "required when phase includes decode (KV length L)"
    if q8 and ax.proj is None:
        return "axes.proj", f"required for q8 kernels {q8} (q, k, v, o, gate, up, down)"
    for k in spec.estimate_s:
        if k.split("/")[0] not in registry.KERNELS:
            return f"estimate_s.{k}", "expected a kernel or kernel/phase key"
    return None


def _check_filters(spec: Spec) -> Problem:
    for name, filters in (("exclude", spec.exclude), ("include_only", spec.include_only)):
        for i, f in enumerate(filters):
            if not f:
                return f"{name}.{i}", "empty filter would match every point"
            for k in f:
                if k not in AXIS_NAMES and k != "timing_model":
                    return f"{name}.{i}.{k}", (f"unknown axis (expected one of: "
                                               f"{', '.join(AXIS_NAMES)}, timing_model)")
    return None


def _check_target(spec: Spec) -> Problem:
    ax = spec.axes
    if ax.stack_shift is not None and spec.target != "gem5":
        return "axes.stack_shift", "only for target gem5 (QEMU's stack layout is its own)"
    if spec.target == "qemu":
        for key in ("uarch", "lanes"):
            if getattr(ax, key) is not None:
                return f"axes.{key}", "not used by target qemu (functional only); remove it"
        for i, v in enumerate(ax.vlen):
            if v not in QEMU_VLENS:
                return f"axes.vlen.{i}", f"qemu supports VLEN 128..1024 only (got {v})"
        return None
    if ax.uarch is None:
        return "axes.uarch", "required for target gem5 (names in configs/uarch/)"
    if ax.lanes is None:
        return "axes.lanes", "required for target gem5"
    from system.loader import UarchError, load_uarch

    for i, u in enumerate(ax.uarch):
        try:
            load_uarch(u)
        except UarchError as e:
            return f"axes.uarch.{i}", f"{u!r}: {e}"
    return None


def json_schema() -> dict[str, Any]:
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "vecscale sweep spec"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def write_schema(path: Path = SCHEMA_FILE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_text())
    return path
