"""Input checks where input enters: command-line numbers, --only values, grid size, paths.

Each problem is one `SpecError` line naming the option, key or file and what was expected;
the CLI prints it and exits 2.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeps.spec import AXIS_NAMES, Spec, SpecError
from vecscale.cmdline import folder_problem

if TYPE_CHECKING:
    import argparse

#: default limit on a spec's grid (cross product of its axes, before exclude/include_only)
MAX_POINTS = 100_000
#: what planning cost per point when the limit was chosen (issue 19: a 400,000-run spec took
#: 15.7 s and 0.93 GB); used only to say roughly what a refused plan would have cost
PLAN_S_PER_POINT = 40e-6
PLAN_BYTES_PER_POINT = 2400


def positive(option: str, value: float | None, allow_zero: bool = False) -> None:
    """A duration or count given on the command line: finite and > 0 (>= 0 with
    `allow_zero`); None (not given) passes."""
    if value is None:
        return
    ok = math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        want = "a number of seconds >= 0" if allow_zero else "a number > 0"
        raise SpecError(f"{option}: expected {want} (got {value:g})")


def check_run_options(a: argparse.Namespace) -> None:
    """The `run` verb's numbers: --timeout > 0, --grace >= 0, counts positive."""
    positive("--timeout", a.timeout)
    positive("--grace", a.grace, allow_zero=True)
    positive("--poll", a.poll)
    if a.max_parallel < 1:
        raise SpecError(f"--max-parallel: expected a positive number of array tasks "
                        f"(got {a.max_parallel})")
    if a.resubmit < 0:
        raise SpecError(f"--resubmit: expected a count >= 0 (got {a.resubmit})")


def check_max_points(value: int) -> None:
    if value < 1:
        raise SpecError(f"--max-points: expected a positive number of points (got {value})")


def grid_size(spec: Spec) -> int:
    """Points of the full cross product of the spec's axes, without expanding it."""
    return math.prod(len(v) for n in AXIS_NAMES if (v := getattr(spec.axes, n)) is not None)


def check_grid(spec: Spec, shown: str, max_points: int = MAX_POINTS) -> int:
    """Refuse a spec whose grid has more than `max_points` points before anything expands
    it (a 1e9-point spec would take minutes and gigabytes before saying a word)."""
    n = grid_size(spec)
    if n > max_points:
        cost_s = n * PLAN_S_PER_POINT
        cost_gb = n * PLAN_BYTES_PER_POINT / 1e9
        sizes = " x ".join(f"{len(v)} {k}" for k in AXIS_NAMES
                           if (v := getattr(spec.axes, k)) is not None and len(v) > 1)
        raise SpecError(f"{shown}: axes: the grid has {n:,} points ({sizes}), above the "
                        f"limit of {max_points:,} (planning it would take about "
                        f"{cost_s:,.0f} s and {cost_gb:,.1f} GB); shrink the axes, or raise "
                        f"the limit with --max-points {n}")
    return n


def check_only_values(spec: Spec, only: dict[str, list[Any]]) -> None:
    """Every `--only AXIS=V` value must be one of the spec's values of that axis (an unknown
    value was dropped without a word, so `--only kernel=fa-v,nope` ran fa-v only)."""
    for axis, values in only.items():
        allowed = getattr(spec.axes, axis, None)
        if allowed is None:
            continue  # an axis the spec does not set: restrict() names the values it has
        unknown = [v for v in values if not any(_same(v, a) for a in allowed)]
        if unknown:
            raise SpecError(f"--only {axis}={','.join(map(str, values))}: "
                            f"{', '.join(map(repr, unknown))} not a value of axis {axis} in "
                            f"sweep {spec.name} (expected one of: "
                            f"{', '.join(map(str, allowed))})")


def _same(a: Any, b: Any) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def check_results_dir(results: Path) -> None:
    """`--results` must be a folder or a path where one can be made."""
    if problem := folder_problem(results):
        raise SpecError(f"--results {results}: {problem} (expected a folder, or a path where "
                        "one can be made)")


def only_value(item: str, text: str) -> Any:
    """One value of `--only AXIS=V1,V2`, read as a YAML scalar (`512` is the integer)."""
    import yaml

    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        v = None
    if v is None or isinstance(v, (list, dict)):
        raise SpecError(f"--only {item}: {text.strip()!r}: expected a plain value "
                        f"(a number, true/false or a name)")
    return v
