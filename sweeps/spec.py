"""Sweep specifications: YAML -> validated `Spec` (pydantic), one-line errors.

A spec names a target (gem5 or qemu), the axes of the grid and filters on it. Everything
that can be checked before a single run starts is checked here, and every problem is
reported as one line: ``<file>: <key>: <what was expected>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from sweeps.yamlkeys import UniqueKeyLoader

REPO = Path(__file__).resolve().parents[1]
SPEC_DIR = Path(__file__).resolve().parent
MODELS_FILE = REPO / "workloads" / "models.yaml"
SCHEMA_FILE = SPEC_DIR / "schema" / "sweep.schema.json"

ATTN_KERNELS = ("ggml-scalar", "ggml-vec", "fa-v")
Q8_KERNELS = ("q8-scalar", "q8-ggml", "q8-packed", "q8-split")
KERNELS = ATTN_KERNELS + Q8_KERNELS
#: kernels built for rv64gc: no vector unit involved, so VLEN, lanes and timing do not matter
SCALAR_KERNELS = frozenset({"ggml-scalar", "q8-scalar"})
#: tunables only FlashAttention-V understands (flag name on the workload command line)
TUNABLES = {"block_r": "--block-r", "block_c": "--block-c", "unroll": "--unroll",
            "r": "--r", "lmul": "--lmul", "regime": "--regime"}
TUNABLE_KERNELS = frozenset({"fa-v"})
QEMU_VLENS = (128, 256, 512, 1024)

Kernel = Literal["ggml-scalar", "ggml-vec", "fa-v", "q8-scalar", "q8-ggml", "q8-packed",
                 "q8-split"]
Phase = Literal["prefill", "decode"]
Proj = Literal["q", "k", "v", "o", "gate", "up", "down"]
Precision = Literal["fp32", "fp16"]
Regime = Literal["auto", "blocked", "packed", "rows", "dot"]


def _axis(item: Any) -> Any:
    return Annotated[list[item], Field(min_length=1)]


class Axes(BaseModel):
    """The grid: every key is a list of values; the grid is their cross product."""

    model_config = ConfigDict(extra="forbid")

    uarch: _axis(str) | None = Field(None, description="configs/uarch names or paths (gem5)")
    vlen: _axis(StrictInt) = Field(description="vector length in bits (power of two)")
    lanes: _axis(StrictInt) | None = Field(None, description="64-bit vector lanes (gem5)")
    kernel: _axis(Kernel)
    precision: _axis(Precision) = ["fp32"]
    model: _axis(str) = Field(description="keys of workloads/models.yaml")
    phase: _axis(Phase) | None = Field(None, description="attention kernels only")
    n: _axis(StrictInt) | None = Field(None, description="prefill tokens")
    l: _axis(StrictInt) | None = Field(None, description="decode KV length")  # noqa: E741
    proj: _axis(Proj) | None = Field(None, description="q8 kernels only: linear layer")
    max_rows: _axis(StrictInt) | None = Field(None, description="q8: output rows simulated")
    seed: _axis(StrictInt) = [1]
    block_r: _axis(StrictInt) | None = None
    block_c: _axis(StrictInt) | None = None
    unroll: _axis(StrictInt) | None = None
    r: _axis(StrictInt) | None = None
    lmul: _axis(StrictInt) | None = Field(None, description="1, 2 or 4 (default: auto)")
    regime: _axis(Regime) | None = Field(None, description="fa-v: auto, blocked, packed, rows "
                                                          "or dot")
    stack_shift: _axis(StrictInt) | None = Field(
        None, description="gem5: bytes the workload's initial stack is moved down by, a "
        "multiple of 16 (memory-layout sensitivity studies; default 0)")
    test_perturb: _axis(StrictBool) | None = Field(
        None, description="test only: the workload reports a wrong result on purpose")


AXIS_NAMES = tuple(Axes.model_fields)
Scalar = StrictInt | StrictBool | str
FilterValue = Scalar | list[Scalar]


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    target: Literal["gem5", "qemu"]
    description: str = ""
    axes: Axes
    exclude: list[dict[str, FilterValue]] = Field(
        [], description="points matching any of these (every key equal / in list) are dropped")
    include_only: list[dict[str, FilterValue]] = Field(
        [], description="if given, only points matching one of these are kept")
    timeout_s: float = Field(6 * 3600, gt=0, description="per-run wall-clock limit")
    estimate_s: dict[str, float] = Field(
        {}, description="planning guess of wall seconds per run, by kernel or kernel/phase")


class SpecError(ValueError):
    """A one-line problem with a sweep spec (file: key: message)."""


#: the simulated stack keeps its 16-byte alignment (configs/stack_layout.py checks it again
#: inside gem5, where this package cannot be imported)
STACK_SHIFT_ALIGN = 16


def stack_shift_problem(v: int) -> str | None:
    """What is wrong with a stack shift in bytes, or None."""
    if v < 0 or v % STACK_SHIFT_ALIGN:
        return f"expected a multiple of {STACK_SHIFT_ALIGN} >= 0 (got {v})"
    return None


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc if not str(p).startswith(("function-", "list[",
                                                                    "literal[")))


def _format_pydantic(path: str, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = _loc(e["loc"]) or "(top level)"
    kind = e["type"]
    if kind == "extra_forbidden":
        parent = e["loc"][:-1]
        allowed = AXIS_NAMES if parent == ("axes",) else tuple(Spec.model_fields)
        msg = f"unknown key (expected one of: {', '.join(allowed)})"
    elif kind == "too_short":
        msg = "must not be empty (give at least one value)"
    elif kind == "missing":
        msg = "required key is missing"
    else:
        msg = e["msg"]
        if "input" in e and kind not in ("model_type", "dict_type"):
            msg += f" (got {json.dumps(e['input'], default=str)})"
    more = len(err.errors()) - 1
    suffix = f" [+{more} more]" if more else ""
    return f"{path}: {loc}: {msg}{suffix}"


def load_models() -> dict[str, dict[str, int]]:
    with open(MODELS_FILE) as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict):
        raise SpecError(f"{MODELS_FILE}: expected a mapping of model name -> shape")
    return data


def spec_path(name_or_path: str | Path) -> Path:
    """A name in sweeps/ ("smoke") or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists() or "/" in str(name_or_path):
        return p
    return SPEC_DIR / f"{name_or_path}.yaml"


def load_spec(name_or_path: str | Path) -> tuple[Spec, Path, str]:
    """Parse and check a spec; returns (spec, path, raw text). Raises SpecError."""
    path = spec_path(name_or_path)
    shown = _shown(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        known = ", ".join(sorted(p.stem for p in SPEC_DIR.glob("*.yaml")))
        raise SpecError(f"{shown}: cannot read sweep spec ({e.strerror}); "
                        f"known specs: {known}") from None
    except UnicodeDecodeError as e:
        line = path.read_bytes()[:e.start].count(b"\n") + 1
        raise SpecError(f"{shown}: line {line}: not UTF-8 text (byte "
                        f"0x{e.object[e.start]:02x} at offset {e.start}); save the spec as "
                        f"UTF-8") from None
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # safe_load that refuses duplicates
    except yaml.constructor.ConstructorError as e:
        if not str(e.problem).startswith("duplicate key"):
            raise SpecError(f"{shown}: YAML: {' '.join(str(e).split())}") from None
        mark = e.problem_mark
        where = f"line {mark.line + 1}" if mark is not None else "(parse)"
        raise SpecError(f"{shown}: {where}: {e.problem}: a key may be given once per "
                        f"mapping (YAML would keep the last one silently)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(parse)"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SpecError(f"{shown}: {where}: YAML syntax error: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{shown}: (top level): expected a mapping with keys name, target, "
                        f"axes (got {type(data).__name__})")
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        raise SpecError(_format_pydantic(shown, e)) from None
    check_spec(spec, shown)
    return spec, path, text


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def check_spec(spec: Spec, shown: str) -> None:
    """Checks pydantic cannot express: cross-key rules, names that must exist."""
    ax = spec.axes

    def fail(key: str, msg: str) -> None:
        raise SpecError(f"{shown}: {key}: {msg}")

    for key in ("vlen", "lanes", "n", "l", "max_rows", "block_r", "block_c", "unroll", "r",
                "lmul"):
        for i, v in enumerate(getattr(ax, key) or ()):
            if v <= 0:
                fail(f"axes.{key}.{i}", f"expected a positive integer (got {v})")
    for i, v in enumerate(ax.stack_shift or ()):
        if problem := stack_shift_problem(v):
            fail(f"axes.stack_shift.{i}", problem)
    if ax.stack_shift is not None and spec.target != "gem5":
        fail("axes.stack_shift", "only for target gem5 (QEMU's stack layout is its own)")
    for i, v in enumerate(ax.lmul or ()):
        if v not in (1, 2, 4):
            fail(f"axes.lmul.{i}", f"expected 1, 2 or 4 (got {v})")
    for i, v in enumerate(ax.vlen):
        if v & (v - 1):
            fail(f"axes.vlen.{i}", f"expected a power of two (got {v})")
    for key in AXIS_NAMES:
        vals = getattr(ax, key)
        if vals is not None and len(set(vals)) != len(vals):
            fail(f"axes.{key}", f"duplicate values in {vals}")
    models = load_models()
    for i, m in enumerate(ax.model):
        if m not in models:
            fail(f"axes.model.{i}", f"unknown model {m!r} (expected one of: "
                                    f"{', '.join(models)}; see workloads/models.yaml)")
    attn = [k for k in ax.kernel if k in ATTN_KERNELS]
    q8 = [k for k in ax.kernel if k in Q8_KERNELS]
    if attn:
        if ax.phase is None:
            fail("axes.phase", f"required for attention kernels {attn} (prefill and/or decode)")
        if "prefill" in ax.phase and ax.n is None:
            fail("axes.n", "required when phase includes prefill (tokens N)")
        if "decode" in ax.phase and ax.l is None:
            fail("axes.l", "required when phase includes decode (KV length L)")
    if q8 and ax.proj is None:
        fail("axes.proj", f"required for q8 kernels {q8} (q, k, v, o, gate, up, down)")
    for name, filters in (("exclude", spec.exclude), ("include_only", spec.include_only)):
        for i, f in enumerate(filters):
            if not f:
                fail(f"{name}.{i}", "empty filter would match every point")
            for k in f:
                if k not in AXIS_NAMES and k != "timing_model":
                    fail(f"{name}.{i}.{k}", f"unknown axis (expected one of: "
                                            f"{', '.join(AXIS_NAMES)}, timing_model)")
    for k in spec.estimate_s:
        kern = k.split("/")[0]
        if kern not in KERNELS:
            fail(f"estimate_s.{k}", "expected a kernel or kernel/phase key")
    if spec.target == "qemu":
        for key in ("uarch", "lanes"):
            if getattr(ax, key) is not None:
                fail(f"axes.{key}", "not used by target qemu (functional only); remove it")
        for i, v in enumerate(ax.vlen):
            if v not in QEMU_VLENS:
                fail(f"axes.vlen.{i}", f"qemu supports VLEN 128..1024 only (got {v})")
    else:
        if ax.uarch is None:
            fail("axes.uarch", "required for target gem5 (names in configs/uarch/)")
        if ax.lanes is None:
            fail("axes.lanes", "required for target gem5")
        from sweeps import uarch as uarch_mod

        for i, u in enumerate(ax.uarch):
            try:
                uarch_mod.load_uarch(u)
            except uarch_mod.UarchError as e:
                fail(f"axes.uarch.{i}", f"{u!r}: {e}")
            except FileNotFoundError:
                fail(f"axes.uarch.{i}", f"unknown uarch {u!r} (expected one of: "
                                        f"{', '.join(uarch_mod.list_uarchs())})")


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
