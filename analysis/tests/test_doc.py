"""Tables inside Markdown documents are regenerated from results and checked for staleness."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.doc import DocError, refresh_file
from vecscale.vocab import RUNS_ARCHIVE

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "results" / "reference"

DOC = """# notes

Speedups at 1024 bits:

<!-- table:speedup vlen=1024 kernel=fa-v cols=id,lanes,speedup_vs_ggml-scalar -->
stale text
<!-- /table -->

Prose after the block stays.
"""


def test_blocks_are_rewritten_and_checked(sweep: Path) -> None:
    doc = sweep / "README.md"
    doc.write_text(DOC)
    assert refresh_file(sweep, check=True) == (doc, False)
    assert doc.read_text() == DOC  # --check writes nothing
    assert refresh_file(sweep) == (doc, False)
    text = doc.read_text()
    assert "stale text" not in text and text.endswith("Prose after the block stays.\n")
    assert "| id | lanes | speedup_vs_ggml-scalar |" in text
    assert "| fav-1024-16 | 16 | 40 |" in text  # the synthetic sweep's hand-made speedup
    assert "fav-512" not in text  # filtered by vlen
    assert refresh_file(sweep, check=True) == (doc, True)


@pytest.mark.parametrize("block, header, row, cell, value", [
    # regex filter, one row column: fav-1024-16's speedup under the vlen 1024 column
    ('kernel~="^fa-" pivot=lanes:vlen:speedup_vs_ggml-scalar',
     "| lanes | vlen 512 | vlen 1024 |", "| 16 |", 3, "40"),
    # two row columns joined by '+': the same run's cycles
    ("kernel=fa-v pivot=kernel+lanes:vlen:cycles",
     "| kernel | lanes | vlen 512 | vlen 1024 |", "| fa-v | 16 |", 4, "2500000"),
])
def test_filters_and_pivot(sweep: Path, block: str, header: str, row: str, cell: int,
                           value: str) -> None:
    doc = sweep / "README.md"
    doc.write_text(f"<!-- table:speedup {block} -->\n<!-- /table -->\n")
    refresh_file(sweep)
    lines = doc.read_text().splitlines()
    assert lines[1].startswith(header)
    assert next(r for r in lines if r.startswith(row)).split("|")[cell].strip() == value


@pytest.mark.parametrize("block, msg", [
    ("<!-- table:nosuch -->\n<!-- /table -->", "unknown table 'nosuch'"),
    ("<!-- table:speedup colour=red -->\n<!-- /table -->", "has no column 'colour'"),
    ("<!-- table:speedup vlen -->\n<!-- /table -->", "expected key=value"),
    ("<!-- table:speedup cols=id,nope -->\n<!-- /table -->", "has no column 'nope'"),
    ("<!-- table:speedup pivot=a:b -->\n<!-- /table -->", "expected pivot=ROW:COLUMN:VALUE"),
    ("<!-- table:speedup kernel~=( -->\n<!-- /table -->", "bad regular expression"),
    ("<!-- table:speedup kernel~=\"x -->\n<!-- /table -->", "No closing quotation"),
])
def test_bad_blocks_are_one_line_errors(sweep: Path, block: str, msg: str) -> None:
    (sweep / "README.md").write_text("# x\n\n" + block + "\n")
    with pytest.raises(DocError, match=msg):
        refresh_file(sweep)
    r = subprocess.run([sys.executable, "-m", "analysis", "doc", str(sweep)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2 and msg in r.stderr and "README.md:3" in r.stderr
    assert "Traceback" not in r.stderr


KEPT = sorted(d for d in (ROOT / "results").glob("reference*") if (d / "README.md").is_file())


def test_reference_archive_is_kept() -> None:
    assert REFERENCE in KEPT, "results/reference/README.md is missing"


#: a kept folder whose sweep has not run yet says so on a line of its README; its tables
#: are placeholders until runs.tar.xz is added (and the line removed)
AWAITING = "<!-- awaiting-runs"


@pytest.mark.parametrize("kept", KEPT, ids=[d.name for d in KEPT])
def test_reference_results_document_is_current(tmp_path: Path, kept: Path) -> None:
    """A kept archive's README.md quotes the committed runs: its tables must be what the
    archive gives today (run `python -m analysis doc results/NAME` after a change)."""
    awaiting = AWAITING in (kept / "README.md").read_text()
    if awaiting and not (kept / RUNS_ARCHIVE).exists():
        pytest.skip(f"results/{kept.name}: sweep not run yet (README marked awaiting-runs)")
    assert not awaiting, (f"results/{kept.name}: {RUNS_ARCHIVE} is here: remove the "
                          "awaiting-runs line from its README.md")
    ref = tmp_path / kept.name
    ref.mkdir()
    for name in ("README.md", RUNS_ARCHIVE, "provenance.json", "sweep.yaml"):
        if (kept / name).exists():
            shutil.copy(kept / name, ref / name)
    assert (ref / RUNS_ARCHIVE).is_file(), f"results/{kept.name}: no {RUNS_ARCHIVE}"
    doc, current = refresh_file(ref, check=True)
    assert current, f"results/{kept.name}/README.md tables are out of date"
