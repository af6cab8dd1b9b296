"""Fault injection on a sweep's run folders (issue 19, item 3): `vecscale status` and the
summary of `vecscale run` compare the runs found with the plan and name every missing,
corrupt and unknown-status run by id, one line each; a plain `run` runs missing and corrupt
runs again and keeps every finished one. Real driver and runner processes, fake workloads."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from sweeps.tests.conftest import Fakes
from sweeps.tests.test_driver import attn


def _bytes(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


def _json(name: str, obj: object) -> Callable[[Path], None]:
    return lambda d: (d / name).write_text(json.dumps(obj))


def _rm(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).unlink()


def _status(value: object) -> Callable[[Path], None]:
    def f(d: Path) -> None:
        st = json.loads((d / "status.json").read_text())
        st["status"] = value
        (d / "status.json").write_text(json.dumps(st))

    return f


# (case, damage to a finished ok run's folder, state `vecscale status` names, detail text)
DAMAGE: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("folder-deleted", shutil.rmtree, "missing", "no run folder"),
    ("status-deleted", _rm("status.json"), "missing", "no status.json"),
    ("status-empty", _bytes("status.json", b""), "corrupt", "status.json: not valid JSON"),
    ("status-cut", _bytes("status.json", b'{"status": "o'), "corrupt",
     "status.json: not valid JSON"),
    ("status-not-utf8", _bytes("status.json", b"\xff\xfe{}"), "corrupt",
     "status.json: not UTF-8"),
    ("status-a-list", _json("status.json", ["ok"]), "corrupt", "status.json: no status"),
    ("status-no-status", _json("status.json", {"cause": ""}), "corrupt",
     "status.json: no status"),
    ("status-a-number", _status(0), "corrupt", "status.json: no status"),
    ("status-unknown", _status("exploded"), "unknown status", "'exploded' is not one of"),
    ("run-deleted", _rm("run.json"), "corrupt", "run.json: missing"),
    ("run-cut", _bytes("run.json", b'{"schema": 1, "targ'), "corrupt",
     "run.json: not valid JSON"),
    ("run-not-utf8", _bytes("run.json", b"\xff"), "corrupt", "run.json: not UTF-8"),
    ("run-a-list", _json("run.json", []), "corrupt", "run.json: expected a JSON object"),
    ("result-deleted", _rm("result.json"), "corrupt", "result.json: missing"),
    ("result-garbage", _bytes("result.json", b"\x00garbage"), "corrupt",
     "result.json: not valid JSON"),
    ("result-a-list", _json("result.json", [True]), "corrupt",
     "result.json: expected a JSON object"),
]
LINE = re.compile(r"^  ([0-9a-f]{16})  ([a-z -]+): (.*)$")


def _seeds(fakes: Fakes, sweep: str) -> dict[int, str]:
    """seed -> run id."""
    out = {}
    for rid, v in fakes.statuses(sweep).items():
        args = v["run"]["workload"]["args"]
        out[int(args[args.index("--seed") + 1])] = rid
    return out


def _listed(stdout: str) -> dict[str, tuple[str, str]]:
    return {m.group(1): (m.group(2), m.group(3)) for ln in stdout.splitlines()
            if (m := LINE.match(ln))}


def test_status_names_every_damaged_run_and_run_repairs_them(fakes: Fakes) -> None:
    n = len(DAMAGE) + 2  # two runs stay intact
    seeds = [s for s in range(1, n + 4) if s not in (13, 14, 15)]  # 13-15: fake failures
    spec = fakes.spec("damage", axes=attn(seed=seeds))
    args = (str(spec), "--results", str(fakes.results))
    r = fakes.cli("run", *args, "-j", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    by_seed = _seeds(fakes, "damage")
    ids = {i + 1: by_seed[s] for i, s in enumerate(seeds)}  # 1..n
    runs = fakes.results / "damage" / "runs"
    case_of = {ids[i + 1]: case for i, (case, *_) in enumerate(DAMAGE)}
    for i, (_, damage, _, _) in enumerate(DAMAGE):
        damage(runs / ids[i + 1])
    kept = {ids[s]: (runs / ids[s] / "status.json").stat().st_mtime_ns for s in (n - 1, n)}

    r = fakes.cli("status", *args)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    listed = _listed(r.stdout)
    assert set(listed) == set(case_of)  # every damaged run, nothing else
    expect = {c: (k, d) for c, _, k, d in DAMAGE}
    wrong = [(case_of[rid], kind, detail) for rid, (kind, detail) in listed.items()
             if kind != expect[case_of[rid]][0] or expect[case_of[rid]][1] not in detail]
    assert not wrong, wrong
    kinds = [k for _, _, k, _ in DAMAGE]
    head = (f"ok 2 of {n}, {kinds.count('missing')} missing, {kinds.count('corrupt')} "
            f"corrupt, 1 unknown status: {ids[kinds.index('unknown status') + 1]}")
    assert head in r.stdout.splitlines(), r.stdout
    for kind in ("missing", "corrupt", "unknown status"):
        assert re.search(rf"^{kind} +{kinds.count(kind)}$", r.stdout, re.M), r.stdout

    calls = len(fakes.calls())
    r = fakes.cli("run", *args, "-j", "2")  # reruns missing and corrupt runs, nothing else
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(fakes.calls()) - calls == kinds.count("missing") + kinds.count("corrupt")
    assert {ids[s]: (runs / ids[s] / "status.json").stat().st_mtime_ns
            for s in (n - 1, n)} == kept  # finished runs untouched
    assert f"ok {n - 1} of {n}, 1 unknown status" in r.stdout
    r = fakes.cli("run", *args, "--retry-failed")
    assert r.returncode == 0 and f"ok {n} of {n}" in r.stdout, r.stdout + r.stderr
    # a damaged status.json is kept beside the new verdict
    prev = runs / ids[[c for c, *_ in DAMAGE].index("status-cut") + 1] / "status.prev.json"
    assert prev.read_bytes() == b'{"status": "o'


def test_a_file_where_a_run_folder_belongs_is_one_line(fakes: Fakes) -> None:
    spec = fakes.spec("filed", axes=attn(seed=[1, 2]))
    args = (str(spec), "--results", str(fakes.results))
    assert fakes.cli("run", *args).returncode == 0
    rid = _seeds(fakes, "filed")[1]
    d = fakes.results / "filed" / "runs" / rid
    shutil.rmtree(d)
    d.write_text("not a folder")
    r = fakes.cli("status", *args)
    assert f"  {rid}  missing: no run folder" in r.stdout
    r = fakes.cli("run", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"vecscale: {d}: a file where the run's folder belongs (remove it to run the run)"]
