"""The table catalogue: every table the analysis writes (tables/<name>.{csv,md,tex}) and the
report shows, in report order, with its title. A table is computed by its module (speedup,
cycles, studies, runs, compare) and formatted by format.py; this list is the one place that
names them, so a table cannot be computed without being shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import compare, cycles, fidelity, hardware, layer, runs, speedup, studies
from .formatting import write_table

#: a builder gets the collected runs and a getter for tables it builds on
Builder = Callable[[pd.DataFrame, Callable[[str], pd.DataFrame]], pd.DataFrame]


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    build: Builder
    before_figures: bool = False  # the report shows it above the figures
    omit_when_empty: bool = False  # only some sweeps have it: no empty section in the report


CATALOGUE: tuple[Table, ...] = (
    Table("status", "Run status", lambda df, _: runs.status_table(df), before_figures=True),
    Table("failed", "Failed or unusable runs", lambda df, _: runs.failed_runs(df),
          before_figures=True),
    Table("speedup_summary", "Speedup vs ggml-scalar per kernel",
          lambda _, get: speedup.speedup_summary(get("speedup"))),
    Table("speedup", "Speedup vs ggml-scalar, ggml-vec and current ggml (ggml-lib-vec; "
          "cycles ratio)", lambda df, _: speedup.speedup_table(df)),
    Table("vs_ggml", "FA-V vs ggml: the paper's baselines and current ggml (ggml's own "
          "kernel, the path it picks; cycles ratio)", lambda df, _: fidelity.vs_ggml_table(df)),
    Table("vl_scaling", f"VL scaling vs the {speedup.REF_VLEN}-bit point",
          lambda df, _: speedup.vl_scaling_table(df)),
    Table("q8_breakdown", "Q8_0 cycle breakdown (shares of ROI cycles)",
          lambda df, _: cycles.q8_breakdown_table(df)),
    Table("paper_comparison", "The paper's headlines beside ours (closest point)",
          lambda df, _: compare.paper_comparison(df)),
    Table("targets", "Reproduction targets: measured, met or not",
          lambda _, get: compare.targets_table(get("paper_comparison"))),
    Table("hardware_comparison", "The paper's BPI-F3 (VLEN 256) ratios beside ours",
          lambda _, get: hardware.hardware_comparison(get("speedup")), omit_when_empty=True),
    Table("fidelity", "Our ports vs ggml's own kernels: cycles and instruction mix "
          "(ratio ggml / port; reason for differences over 10%)",
          lambda df, _: fidelity.fidelity_table(df)),
    Table("cycle_accounting", "Where the cycles go (instruction mix, vector unit busy share)",
          lambda df, _: cycles.cycle_accounting_table(df)),
    Table("vl_fill", "Vector fill: active bits per arithmetic micro-op against VLEN "
          "(elements per micro-op against VLMAX)", lambda df, _: cycles.vl_fill_table(df)),
    Table("regimes", "fa-v's regimes side by side (ROI cycles; the fastest)",
          lambda df, _: studies.regime_table(df), omit_when_empty=True),
    Table("layer_summary", "One decoder layer: cycles, attention and linear shares, the whole "
          "model's tokens/s on one core, speedup over llama.cpp's choice",
          lambda df, _: layer.summary_table(df), omit_when_empty=True),
    Table("layer_sublayers", "One decoder layer: ROI cycles per sublayer",
          lambda df, _: layer.sublayer_table(df), omit_when_empty=True),
    Table("layout_spread", "Memory-layout spread (the same runs under several stack positions)",
          lambda df, _: studies.layout_spread_table(df), omit_when_empty=True),
    Table("host_cost", "Host cost per run (medians; to size sweeps)",
          lambda df, _: runs.host_cost_table(df)),
    Table("validation", "Workload self-checks (pass, max errors)",
          lambda df, _: runs.validation_table(df)),
)


def all_tables(df: pd.DataFrame, problems: list[str] | None = None
               ) -> dict[str, pd.DataFrame]:
    """Every table of the catalogue, by name, in catalogue order. With a `problems` list, a
    table whose builder fails is left empty and the failure appended there (one line), so
    that one odd run cannot stop the report; without one, the failure is raised."""
    by_name = {t.name: t for t in CATALOGUE}
    built: dict[str, pd.DataFrame] = {}

    def get(name: str) -> pd.DataFrame:
        if name not in built:
            try:
                built[name] = by_name[name].build(df, get)
            except Exception as exc:  # noqa: BLE001 - named in the report, see above
                if problems is None:
                    raise
                why = " ".join(str(exc).split())[:200]
                problems.append(f"table {name} not computed: {type(exc).__name__}: {why}")
                built[name] = pd.DataFrame()
        return built[name]

    return {t.name: get(t.name) for t in CATALOGUE}


def write_all(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    paths: list[Path] = []
    for name, t in all_tables(df).items():
        paths += write_table(t, out_dir, name)
    return paths
