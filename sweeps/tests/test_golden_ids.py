"""Golden run ids: refactoring must not move a run to a new id.

A run id hashes everything that decides a result (sweeps/README.md, "Run identity"), and the
kept archives (results/reference*/runs.tar.xz) and every results folder find their runs by
it. Three checks:

- every shipped spec, planned with fixed stand-ins for the binary, gem5 and patch hashes,
  gives the same (point -> run id) map as recorded in golden_ids.json;
- every run.json kept in an archive hashes to its own id (sweeps.identity.run_id is the
  formula the archived runs were made with);
- an archive planned from its own sweep.yaml with the hashes it recorded gives its ids
  again (the uarch files, the planner and the workload arguments are unchanged), for the
  archives made by the current planner.

A deliberate change to a shipped spec or uarch file changes its ids: regenerate with
`python -m sweeps.tests.test_golden_ids` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from sweeps import plan as plan_mod
from sweeps.hashes import HashCache
from sweeps.identity import canonical, run_id
from sweeps.plan import build_plan
from sweeps.spec import SPEC_DIR, load_spec
from vecscale.vocab import RUNS_ARCHIVE

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden_ids.json")
ARCHIVES = sorted(p.parent for p in (REPO / "results").glob(f"reference*/{RUNS_ARCHIVE}"))
SPECS = sorted(p.stem for p in SPEC_DIR.glob("*.yaml"))
#: archives planned by the planner as it is: the others predate the per-family attention
#: binaries (reference-block-c, reference-layout), so only their recorded run.json files
#: are checked against their ids
REPLANNABLE = {"reference-regimes", "reference", "reference-layer", "reference-headline"}
#: archives of a sweep still running across sessions (their README says which runs are in):
#: every kept run is a point of the plan, not every point has its run yet
PARTIAL = {"reference-layer-prefill"}


class FixedHashes(HashCache):
    """File hashes by file name, without reading files."""

    def __init__(self, by_name: dict[str, str]) -> None:
        super().__init__(None)
        self.by_name = by_name

    def file(self, path: Path) -> str | None:
        return self.by_name.get(Path(path).name)


def stand_in(name: str) -> str:
    return hashlib.sha256(f"golden {name}".encode()).hexdigest()


def planned_ids(spec_arg: str | Path, by_name: dict[str, str], patches: str,
                monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Sorted "point run-id" lines of a spec planned with the given hashes (a point a
    kernel answers under several values of an axis it ignores is listed once per value)."""
    monkeypatch.setenv("GEM5", "/golden/gem5.opt")
    monkeypatch.setattr(plan_mod, "patches_sha256", lambda: patches)
    spec, path, _ = load_spec(spec_arg)
    plan = build_plan(spec, str(path), FixedHashes(by_name))
    return sorted(f"{canonical(p)} {rid}" for p, rid in plan.points)


def digest(lines: list[str]) -> str:
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


def shipped(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    binaries = ("attention", "attention-fa-v", "attention-ggml-vec", "attention-scalar", "q8",
                "q8-scalar", "gem5.opt", "attention-ggml-lib", "attention-ggml-lib-scalar",
                "q8-ggml-lib", "q8-ggml-lib-scalar", "layer", "layer-scalar",
                "attention-fa-v-fp16", "attention-ggml-vec-fp16", "attention-scalar-fp16",
                "layer-fp16")
    lines = planned_ids(name, {b: stand_in(b) for b in binaries}, stand_in("patches"),
                        monkeypatch)
    ids = sorted({line.rsplit(" ", 1)[1] for line in lines})
    return {"points": len(lines), "runs": len(ids), "first": ids[:3], "digest": digest(lines)}


@pytest.mark.parametrize("name", SPECS)
def test_shipped_spec_ids_are_golden(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert name in golden, f"{name}: no golden ids yet (python -m sweeps.tests.test_golden_ids)"
    assert shipped(name, monkeypatch) == golden[name]


def archived_runs(archive: Path) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(run id -> run.json, points.json) of a kept archive."""
    runs: dict[str, dict[str, Any]] = {}
    points: list[dict[str, Any]] = []
    with tarfile.open(archive / RUNS_ARCHIVE) as tar:
        for m in tar.getmembers():
            if m.name == "points.json":
                points = json.load(io.TextIOWrapper(tar.extractfile(m)))
            elif m.name.endswith("/run.json"):
                runs[m.name.split("/")[1]] = json.load(io.TextIOWrapper(tar.extractfile(m)))
    return runs, points


@pytest.mark.parametrize("archive", ARCHIVES, ids=[a.name for a in ARCHIVES])
def test_archived_run_json_hashes_to_its_id(archive: Path) -> None:
    runs, points = archived_runs(archive)
    assert runs, f"{archive.name}: no run.json in {RUNS_ARCHIVE}"
    for rid, run in runs.items():
        assert run["id"] == rid and run_id(run) == rid, (archive.name, rid)
    if archive.name in PARTIAL:
        assert set(runs) <= {p["run"] for p in points}
    else:
        assert {p["run"] for p in points} <= set(runs)


@pytest.mark.parametrize("archive", sorted(a for a in ARCHIVES if a.name in REPLANNABLE),
                         ids=sorted(REPLANNABLE))
def test_archive_replans_to_its_ids(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs, points = archived_runs(archive)
    by_name = {r["workload"]["binary"]: r["workload"]["sha256"] for r in runs.values()}
    gem5 = {r["gem5_sha256"] for r in runs.values()}
    patches = {r["patches_sha256"] for r in runs.values()}
    assert len(gem5) == len(patches) == 1
    by_name["gem5.opt"] = gem5.pop()
    planned = planned_ids(archive / "sweep.yaml", by_name, patches.pop(), monkeypatch)
    assert sorted(f"{canonical(p['axes'])} {p['run']}" for p in points) == planned


def main() -> int:
    """Rewrite golden_ids.json from the planner as it is now."""
    mp = pytest.MonkeyPatch()
    try:
        golden = {name: shipped(name, mp) for name in SPECS}
    finally:
        mp.undo()
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN.relative_to(REPO)} ({len(golden)} specs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
