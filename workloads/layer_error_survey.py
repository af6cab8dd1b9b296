"""Measure the layer workload's per-sublayer errors under QEMU (what its tolerances in
src/layer/layer_main.c are derived from; workloads/README.md, "layer: check").

    python3 -m workloads.layer_error_survey [--jobs 2] [--out FILE.jsonl] [--model M ...]

Runs every model of models.yaml (or those given with --model) in decode (L = 1, 64, 512,
2048) and prefill (N = 1, 5, 17), with two pairs of linear layout and attention kernel at
VLEN 128 and two at 1024 (and layer-scalar once per point), and prints per sublayer the
largest error seen and the largest error per position (the rope angles' error grows with
the position). A sublayer is keyed by its slot: a GPT-NeoX block's ffn_up is the
ffn_up_gate slot's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from workloads.models import load_models

BUILD = Path(__file__).resolve().parent / "build"
#: (VLEN, linear layout, attention kernel)
VARIANTS = [(128, "q8-ggml", "ggml-vec"), (128, "q8-split", "fa-v"),
            (1024, "q8-packed", "fa-v"), (1024, "q8-split", "ggml-vec")]
#: the nine sublayer slots, in order (a run's stage_err keys are its own names for them)
SLOTS = ["attn_norm", "qkv", "rope", "attention", "o_proj", "ffn_norm", "ffn_up_gate",
         "ffn_act", "ffn_down"]
SIZES = [("decode", 1), ("decode", 64), ("decode", 512), ("decode", 2048),
         ("prefill", 1), ("prefill", 5), ("prefill", 17)]


def cases(models: list[str] | None = None) -> list[list[str]]:
    out = []
    for model in models or load_models():
        for phase, size in SIZES:
            problem = ["--model", model, "--phase", phase, "--l" if phase == "decode" else "--n",
                       str(size)]
            out.append(["qemu-riscv64", str(BUILD / "layer-scalar"), *problem])
            for vlen, lin, att in VARIANTS:
                out.append(["qemu-riscv64", "-cpu", f"rv64,v=true,vlen={vlen}",
                            str(BUILD / "layer"), *problem, "--linear", lin, "--attn", att])
    return out


def run(cmd: list[str]) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--model", action="append", choices=list(load_models()),
                    help="only this model (repeatable; default: every model)")
    args = ap.parse_args()
    records = []
    with ThreadPoolExecutor(args.jobs) as ex:
        for r in ex.map(run, cases(args.model)):
            records.append(r)
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(r) + "\n")
    worst: dict[str, float] = {}
    per_pos: dict[str, float] = {}
    for r in records:
        pos = r["l"] if r["phase"] == "decode" else r["n"]
        for stage, err in zip(SLOTS, r["stage_err"].values(), strict=True):
            worst[stage] = max(worst.get(stage, 0.0), err)
            per_pos[stage] = max(per_pos.get(stage, 0.0), err / pos)
    print(f"{len(records)} runs, {sum(not r['pass'] for r in records)} failed")
    for stage in worst:
        print(f"{stage:12s} max {worst[stage]:.3g}   max per position {per_pos[stage]:.3g}")


if __name__ == "__main__":
    main()
