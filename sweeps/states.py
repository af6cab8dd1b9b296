"""What each planned run's folder holds: a verdict (status.json's status), or nothing yet
(missing), or files that cannot be read (corrupt), or a status this version does not know.
`vecscale status` and the summary that ends `vecscale run` count and name every one of
them, so that no run drops out of the counts without a word.

Standard library only (the driver imports it for every plan).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from vecscale.vocab import CORRUPT, FAILED, MISSING, RESUMED, RUN_PROBLEMS, STATUSES
from vecscale.vocab import UNKNOWN_STATUS as UNKNOWN

#: states that are not a status.json verdict, in the order the summary lists them
PROBLEMS = RUN_PROBLEMS
#: a plain `run` runs these again (with `killed`): none of them is a result
RERUN = frozenset({MISSING, CORRUPT})


@dataclass(frozen=True)
class RunState:
    """One run's state: `kind` is a status of STATUSES or one of PROBLEMS; `detail` one line
    (the cause of a verdict, or the file and what is wrong with it)."""

    kind: str
    detail: str = ""
    status: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def _json_file(path: str, name: str) -> tuple[Any, str]:
    """(object, problem) of a JSON file; problem "" when it parsed."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, f"{name}: missing"
    except OSError as e:
        return None, f"{name}: cannot read ({e.strerror})"
    try:
        return json.loads(data.decode("utf-8")), ""
    except UnicodeDecodeError:
        return None, f"{name}: not UTF-8 text"
    except ValueError as e:
        return None, f"{name}: not valid JSON ({str(e).splitlines()[0][:80]})"


def inspect_run(rundir: str | os.PathLike[str], present: bool = True) -> RunState:
    """The state of one run folder (`present`: the folder exists, when the caller listed
    them already)."""
    d = os.fspath(rundir)
    if not present or not os.path.isdir(d):
        return RunState(MISSING, "no run folder (not run yet, or deleted)")
    if not os.path.lexists(os.path.join(d, "status.json")):
        return RunState(MISSING, "no status.json (not run yet, or stopped before it ended)")
    st, problem = _json_file(os.path.join(d, "status.json"), "status.json")
    if problem:
        return RunState(CORRUPT, problem)
    if not isinstance(st, dict) or not isinstance(st.get("status"), str):
        return RunState(CORRUPT, "status.json: no status (expected an object with a "
                                 "\"status\" string)")
    if st["status"] not in STATUSES:
        return RunState(UNKNOWN, f"status.json: status {st['status'][:40]!r} is not one of "
                                 f"{', '.join(STATUSES)}", st)
    run, problem = _json_file(os.path.join(d, "run.json"), "run.json")
    if not problem and not isinstance(run, dict):
        problem = "run.json: expected a JSON object"
    if problem:
        return RunState(CORRUPT, problem, st)
    if st["status"] == "ok":  # an ok run has the workload's result line (runner.classify)
        res, problem = _json_file(os.path.join(d, "result.json"), "result.json")
        if not problem and not isinstance(res, dict):
            problem = "result.json: expected a JSON object"
        if problem:
            return RunState(CORRUPT, problem, st)
    cause = " ".join(str(st.get("cause", "")).split())[:160]
    return RunState(st["status"], cause, st)


def inspect_runs(runs_dir: str | os.PathLike[str], ids: Iterable[str]
                 ) -> dict[str, RunState]:
    """inspect_run of every id, listing the folder once."""
    try:
        present = {e.name for e in os.scandir(runs_dir) if e.is_dir()}
    except OSError:
        present = set()
    return {rid: inspect_run(os.path.join(runs_dir, rid), rid in present) for rid in ids}


def to_rerun(state: RunState, retry_failed: bool = False) -> bool:
    """Whether a plain `run` (or `run --retry-failed`) runs this run again."""
    if state.kind in RERUN or state.kind in RESUMED:
        return True
    return retry_failed and not state.ok


def headline(states: dict[str, RunState], listed: int = 1) -> str:
    """"ok 2019 of 2020, 1 missing: <id>": the ok runs against the plan, then every other
    kind with its count (the ids inline when there are at most `listed` of that kind)."""
    counts = Counter(_group(s.kind) for s in states.values())
    parts = [f"ok {counts.get('ok', 0)} of {len(states)}"]
    for group in (*PROBLEMS, "killed", "failed"):
        n = counts.get(group, 0)
        if n:
            ids = [rid for rid, s in states.items() if _group(s.kind) == group]
            parts.append(f"{n} {group}" + (f": {', '.join(ids)}" if n <= listed else ""))
    return ", ".join(parts)


def _group(kind: str) -> str:
    if kind in RESUMED:
        return "killed"
    return "failed" if kind in FAILED else kind


def summary(states: dict[str, RunState], out: TextIO, max_listed: int = 25) -> int:
    """Counts per status and problem, the headline, then one line per run that is not ok
    (missing, corrupt and unknown-status runs first; at most `max_listed` of each kind);
    returns the number not ok."""
    counts = Counter(s.kind for s in states.values())
    width = max(len(s) for s in (*STATUSES, *PROBLEMS))
    out.write(f"{'status':<{width}}  runs\n")
    for kind in (*STATUSES, *PROBLEMS):
        if counts.get(kind):
            out.write(f"{kind:<{width}}  {counts[kind]}\n")
    out.write(f"{'total':<{width}}  {len(states)}\n")
    out.write(headline(states) + "\n")
    bad = 0
    for kind in (*PROBLEMS, *RESUMED, *(s for s in STATUSES if s in FAILED)):
        ids = [rid for rid, s in states.items() if s.kind == kind]
        bad += len(ids)
        for rid in ids[:max_listed]:
            s = states[rid]
            again = " (not a result: a plain `run` runs it again)" if kind in \
                {CORRUPT, *RESUMED} else ""
            out.write(f"  {rid}  {kind}: {s.detail}{again}\n")
        if len(ids) > max_listed:
            out.write(f"  ... and {len(ids) - max_listed} more {kind}\n")
    return bad
