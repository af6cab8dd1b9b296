"""The layer workload's GPT-NeoX block (Pythia-410M) under QEMU: prefill past one 16-token
GEMM block with both vector attention kernels and every layout, VLEN 128..1024, the
scalar binary, the GELU's own tolerance, a planted error failing, and the partial rotary:
builds of the layer whose RoPE pairs NEOX dims over the whole head (writing dims 32..39),
or leaves the 48 dims it should pass through unwritten, fail the rope check on Pythia
(dims 16..63 are checked to be the projection's, untouched). Decode L = 70 and prefill
N = 3: test_layer.py's matrix."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, Result, qemu_run
from test_layer import NEOX_SUBLAYERS, SUBLAYERS, run_ok

from workloads.models import load_models

MODEL = "pythia-410m"
SRC = ROOT / "workloads" / "src"
BUILD = ROOT / "workloads" / "build"


def pythia(binary: str, args: list[str], vlen: int = 512) -> dict:
    rec = run_ok(binary, ["--model", MODEL, *args], vlen)
    shape = load_models()[MODEL]
    assert rec["sublayers"] == NEOX_SUBLAYERS and rec["arch"] == "gptneox"
    assert (rec["norm"], rec["qkv"], rec["residual"], rec["ffn"], rec["gelu"]) == \
        ("layernorm", "fused", "parallel", "gelu", "fp16 table")
    assert (rec["hidden"], rec["intermediate"], rec["heads"], rec["kv_heads"]) == \
        (shape["hidden"], shape["intermediate"], shape["heads"], shape["kv_heads"])
    assert (rec["rope"], rec["rope_dims"], rec["head_dim"]) == ("neox", 16, 64)
    # the fp16 GELU table has its own tolerance; every other sublayer keeps llama's
    tol = rec["stage_tol"]
    assert tol["ffn_act"] == 1e-2 and tol["ffn_up"] == tol["ffn_down"] == 1e-5
    assert rec["stage_err"]["ffn_act"] > 1e-4  # fp16-stored outputs: the table is used
    return rec


#: (attn, linear, VLEN) of the prefill runs of 17 tokens
PREFILL_17 = [("ggml-vec", "q8-ggml", 128), ("fa-v", "q8-split", 1024),
              ("fa-v", "q8-packed", 256), ("ggml-vec", "q8-split", 512)]


@pytest.mark.parametrize(("attn", "linear", "vlen"), PREFILL_17,
                         ids=[f"{a}-{li}-{v}" for a, li, v in PREFILL_17])
def test_prefill_17(attn: str, linear: str, vlen: int) -> None:
    """past one 16-token block of the GEMM; the fused qkv's 3072 rows in q8-split tiles"""
    rec = pythia("layer", ["--phase", "prefill", "--n", "17", "--attn", attn,
                           "--linear", linear], vlen)
    assert (rec["n"], rec["attn"], rec["linear"], rec["vlen"]) == (17, attn, linear, vlen)
    if linear == "q8-split":
        assert rec["tile_rows"] == vlen // 8 and rec["row_block"] == vlen // 8
    else:
        assert rec["row_block"] == 16


def test_decode_long_rope() -> None:
    """RoPE's tolerance grows with the position; Pythia's errors stay far under it"""
    rec = pythia("layer", ["--l", "600", "--attn", "fa-v", "--linear", "q8-split"], 1024)
    assert rec["stage_err"]["rope"] < rec["stage_tol"]["rope"] / 10


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_scalar_binary(phase: str) -> None:
    size = ["--l", "70"] if phase == "decode" else ["--n", "3"]
    rec = pythia("layer-scalar", ["--phase", phase, *size])
    assert (rec["kernel"], rec["vlen"], rec["linear"], rec["attn"]) == \
        ("layer-scalar", 0, "q8-scalar", "ggml-scalar")


def test_scalar_and_vector_agree() -> None:
    """The same inputs (from the seed) give errors of the same size in both binaries; the
    sublayers before attention and the GELU run the same scalar code in both"""
    a = pythia("layer-scalar", ["--l", "9"])["stage_err"]
    b = pythia("layer", ["--l", "9", "--attn", "ggml-scalar", "--linear", "q8-scalar"])
    assert a == b["stage_err"]


@pytest.mark.parametrize("binary", ["layer", "layer-scalar"])
def test_perturb_fails(binary: str) -> None:
    res = qemu_run(binary, ["--model", MODEL, "--l", "5", "--test-perturb"])
    assert res.rc == 1, res.stderr
    rec = res.record
    assert rec["pass"] is False and rec["n_bad"] >= 1
    assert rec["stage_err"]["ffn_down"] > 100 * rec["stage_tol"]["ffn_down"]
    assert all(rec["stage_err"][s] <= rec["stage_tol"][s] for s in NEOX_SUBLAYERS[:-1])


NEOX_PAIR = "i1 = s->lp->rope_neox ? i + half :"
PASS_THROUGH = "for (int i = nr; i < D; i++) b[i] = a[i];"
#: mutations of layer_ops.c's rope_heads: name -> (text, replacement). NEOX pairs offset by
#: half the head instead of half the rotated dims (rotates dims 0..7 with 32..39 on Pythia:
#: writes 32..39, leaves 8..15 as they were); the dims past n_rot left unwritten.
MUTANTS = {
    "neox-pairs-over-head": (NEOX_PAIR, "i1 = s->lp->rope_neox ? i + D / 2 :"),
    "no-pass-through": (PASS_THROUGH, ""),
}


def build_mutant(tmp: Path, name: str) -> Path:
    """layer-scalar with one change to the RoPE kernel (not to the reference)"""
    cc = shutil.which("clang-19")
    if cc is None:
        pytest.fail("clang-19 not found: run `make setup`")
    text, repl = MUTANTS[name]
    ops = (SRC / "layer" / "layer_ops.c").read_text()
    assert ops.count(text) == 1, f"layer_ops.c no longer has {text!r}: update the mutant"
    mutant = tmp / "layer_ops.c"
    mutant.write_text(ops.replace(text, repl))
    exe = tmp / f"layer-scalar-{name}"
    srcs = [mutant, SRC / "layer" / "layer_main.c", SRC / "layer" / "layer_ref.c",
            SRC / "q8" / "q8_kernels.c", SRC / "q8" / "q8_data.c",
            SRC / "attention" / "ggml_scalar.c", SRC / "common" / "harness.c"]
    subprocess.run([cc, "--target=riscv64-linux-gnu", "-static", "-fuse-ld=lld", "-O1",
                    "-std=c11", "-march=rv64gc", "-DVLSCALE_VECTOR=0", f"-I{SRC}", f"-I{BUILD}",
                    *map(str, srcs), "-o", str(exe), "-lm"], check=True)
    return exe


def run_exe(exe: Path, args: list[str]) -> tuple[int, dict]:
    proc = subprocess.run(["qemu-riscv64", str(exe), *args], capture_output=True, text=True,
                          timeout=300)
    return proc.returncode, Result(proc.returncode, proc.stdout, proc.stderr).record


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_partial_rotary_is_checked(mutant: str, tmp_path: Path) -> None:
    """A RoPE that touches dims 16..63 of a Pythia head fails the rope check (by O(1) of
    the RMS), and nothing else; the same build passes a model that rotates whole heads
    (Qwen2.5 0.5B, NEOX mode too), where the mutation changes nothing"""
    exe = build_mutant(tmp_path, mutant)
    rc, rec = run_exe(exe, ["--model", MODEL, "--phase", "prefill", "--n", "3"])
    assert rc == 1 and rec["pass"] is False
    assert rec["stage_err"]["rope"] > 0.1, rec["stage_err"]
    assert all(rec["stage_err"][s] <= rec["stage_tol"][s] for s in NEOX_SUBLAYERS
               if s != "rope")
    rc, rec = run_exe(exe, ["--model", "qwen2.5-0.5b", "--phase", "prefill", "--n", "3"])
    assert rc == 0 and rec["pass"] is True and rec["sublayers"] == SUBLAYERS
