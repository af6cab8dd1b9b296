"""What a run's run.json and result.json must hold for its row to be trusted: the types of
the values the tables read. A value of the wrong type (a damaged or hand-edited file) makes
the run `corrupt`, named with its file and key, instead of reaching a table as a string
where a number belongs (or stopping the report)."""

from __future__ import annotations

from typing import Any

from workloads.kernels import TUNABLES

#: run.json axes and the type each one has (None is always allowed: an axis a kernel ignores)
INT_AXES = ("vlen", "lanes", "n", "l", "max_rows", "seed", "stack_shift",
            *(n for n, t in TUNABLES.items() if t.kind is int))
STR_AXES = ("uarch", "timing_model", "kernel", "model", "phase", "precision", "proj",
            *(n for n, t in TUNABLES.items() if t.kind is str))
BOOL_AXES = ("test_perturb",)
#: result.json: integers of the workload's JSON line, numbers, the verdict
RESULT_INTS = ("heads", "kv_heads", "head_dim", "n", "l", "rows", "cols", "vlen")
RESULT_NUMBERS = ("max_abs_err", "max_rel_err")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def run_problems(run: dict[str, Any], shown: str) -> list[str]:
    """Problems of a parsed run.json, one line each (`shown`: the file as reports name it)."""
    out = []
    for key, none_ok in (("axes", False), ("system", True)):  # qemu runs: system null
        v = run.get(key)
        if key in run and not isinstance(v, dict) and not (none_ok and v is None):
            out.append(f"{shown}: {key}: expected an object (got {type(v).__name__})")
    axes = run.get("axes") if isinstance(run.get("axes"), dict) else {}
    for names, ok, what in ((INT_AXES, _is_int, "an integer"),
                            (STR_AXES, lambda v: isinstance(v, str), "a name"),
                            (BOOL_AXES, lambda v: isinstance(v, bool), "true or false")):
        for name in names:
            v = axes.get(name)
            if v is not None and not ok(v):
                out.append(f"{shown}: axes.{name}: expected {what} (got {str(v)[:40]!r})")
    return out


def result_problems(result: dict[str, Any], shown: str) -> list[str]:
    """Problems of a parsed result.json (the workload's JSON line), one line each."""
    out = []
    for name in RESULT_INTS:
        v = result.get(name)
        if v is not None and not _is_int(v):
            out.append(f"{shown}: {name}: expected an integer (got {str(v)[:40]!r})")
    for name in RESULT_NUMBERS:
        v = result.get(name)
        if v is not None and not _is_number(v):
            out.append(f"{shown}: {name}: expected a number (got {str(v)[:40]!r})")
    if "pass" in result and not isinstance(result["pass"], bool):
        out.append(f"{shown}: pass: expected true or false (got {str(result['pass'])[:40]!r})")
    return out
