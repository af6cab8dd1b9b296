"""The fault-injection figures of sweeps/README.md ("Faults tried"), counted from the tests'
own cases, so the table cannot say more than the tests do (test_faults_table.py compares).

    python -m sweeps.tests.faults           # print the table
    python -m sweeps.tests.faults --write   # rewrite it in sweeps/README.md
"""

from __future__ import annotations

import inspect
import re
import sys
from collections import Counter
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"(<!-- faults -->\n)(.*?)(<!-- /faults -->)", re.S)


def rows() -> list[tuple[str, str, int, str]]:
    """(kind: kill, race, damage, input or edge; the fault and the issue items it replays; cases
    tried; how each is answered)."""
    from analysis.tests import test_damage as report_damage
    from sweeps.tests import test_damage as run_damage
    from sweeps.tests import test_inputs, test_interrupts, test_ranges, test_specs
    from system.tests import test_uarch_errors
    from tools.tests import test_one

    tests = {n for n, f in inspect.getmembers(test_interrupts, inspect.isfunction)
             if n.startswith("test_")}
    if tests != set(test_interrupts.KILLS_BY_TEST):
        raise RuntimeError("test_interrupts.KILLS_BY_TEST does not list exactly its tests: "
                           f"{sorted(tests ^ set(test_interrupts.KILLS_BY_TEST))}")
    kills: Counter[str] = Counter()
    for what, n in test_interrupts.KILLS_BY_TEST.values():
        kills[what] += n
    spec_cases = len(test_specs.BAD) + len(test_ranges.SPEC_CASES) + \
        len(test_ranges.Q8_SPEC_CASES) + 1  # + the duplicate key of test_inputs
    return [
        ("kill", "kill -9 of the driver mid-sweep (items 4, 5)", kills["kill -9 of the driver"],
         "runs in flight die with it and are recorded `killed`; a plain `run` resumes; "
         "finished runs lost: 0, run again: 0"),
        ("kill", "kill -9 of a runner", kills["kill -9 of a runner"],
         "its workload dies with it; the run is recorded `crashed`"),
        ("kill", "Ctrl-C or SIGTERM of the driver (item 4)",
         kills["Ctrl-C or SIGTERM of the driver"],
         "running runs recorded `killed`, resumed by a plain `run`; finished runs kept"),
        ("race", "a second driver on the same sweep", kills["a second driver on the same sweep"],
         "refused in one line naming the lock and its holder"),
        ("damage", "damaged run folder, `vecscale status` / `run` (item 3)", len(run_damage.DAMAGE),
         "named by id in one line (missing, corrupt, unknown status) and counted; `run` "
         "runs missing and corrupt runs again"),
        ("damage", "damaged run folder, the report (items 1-3)", len(report_damage.DAMAGE),
         "named by id and file in one line, counted against points.json; the report is "
         "written (a failed one replaced by a page saying so)"),
        ("input", "bad sweep spec (items 6, 7)", spec_cases,
         "one line `<file>: <key>: <expected>`, exit 2"),
        ("edge", "workload argument at a range edge (item 6)", len(test_ranges.EDGES),
         "the planner answers as the workload does under QEMU"),
        ("input", "bad uarch file (item 6)",
         len(test_uarch_errors.MALFORMED) + len(test_uarch_errors.MALFORMED_TEXT),
         "one line `<file>: <key>: <problem>`, exit 2"),
        ("input", "bad command-line option (items 6, 7)",
         len(test_inputs.OPTIONS) + len(test_one.CASES) + 1,  # + the closed pipe
         "one line naming the option, exit 2 (a closed pipe: quiet, 141)"),
        ("input", "bad path given to a CLI (item 7)", len(test_inputs.PATHS),
         "one line naming the path, exit 2, no traceback"),
    ]


def table() -> str:
    r = rows()
    out = ["| fault | tried | answer |", "|---|---|---|"]
    out += [f"| {what} | {n} | {answer} |" for _, what, n, answer in r]
    total: Counter[str] = Counter()
    for kind, _, n, _ in r:
        total[kind] += n
    out += ["", f"In all: {total['kill']} kills and stops of a running sweep, "
            f"{total['race']} second driver, {total['damage']} damaged run folders, "
            f"{total['input']} bad inputs and {total['edge']} range edges; each answer above "
            "is what its test checks."]
    return "\n".join(out) + "\n"


def refresh(text: str) -> str:
    if not BLOCK.search(text):
        raise ValueError(f"{README}: no <!-- faults --> ... <!-- /faults --> block")
    return BLOCK.sub(lambda m: m.group(1) + table() + m.group(3), text)


def main(argv: list[str]) -> int:
    if "--write" in argv:
        README.write_text(refresh(README.read_text()))
        print(f"wrote the fault table into {README}")
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
