"""The layer with an F16 KV cache (binary layer-fp16, -DLAYER_FP16=1) under QEMU >= 10 with
Zvfh: every model in both phases with each fp16 attention kernel, fa-v's kept K^T pages,
the per-sublayer check (a planted error fails), the refusals, and that the fp32 binaries
hold no fp16 code. Real layer dimensions, short sequences."""

from __future__ import annotations

import pytest
from conftest import llvm_objdump, qemu_run, require_zvfh_qemu
from test_layer import NEOX_SUBLAYERS, SIZE, SUBLAYERS, matrix

from workloads.kernels import kernel, workload_args

BINARY = kernel("layer").binary_for("fp16")
FP16 = ["--precision", "fp16"]
ATTNS = ("ggml-vec", "fa-v", "ggml-scalar")


@pytest.fixture(scope="module", autouse=True)
def qemu_with_zvfh() -> None:
    require_zvfh_qemu("layer-fp16 runs")


def run16(args: list[str], vlen: int = 512, zvfh: bool = True):
    return qemu_run(BINARY, args, vlen=vlen, timeout=600, zvfh=zvfh)


def check16(args: list[str], vlen: int = 512) -> dict:
    res = run16(args, vlen)
    assert res.rc == 0, (args, res.rc, res.stdout[-600:], res.stderr)
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0 and rec["precision"] == "fp16"
    names = NEOX_SUBLAYERS if rec["arch"] == "gptneox" else SUBLAYERS
    assert rec["sublayers"] == names
    assert all(rec["stage_err"][s] <= rec["stage_tol"][s] for s in names)
    # attention's error is in units of its fp16 bound
    assert rec["stage_tol"]["attention"] == 1.0
    assert rec["attention_bound"].startswith("|o - ref| <= 2e-3 max(1, max |V|)")
    return rec


@pytest.mark.parametrize(("model", "phase", "attn", "linear", "vlen"), matrix(ATTNS))
def test_model_phase_attention(model: str, phase: str, attn: str, linear: str,
                               vlen: int) -> None:
    rec = check16(["--model", model, "--phase", phase, *SIZE[phase], "--attn", attn,
                   "--linear", linear, *FP16], vlen)
    assert (rec["model"], rec["attn"], rec["linear"], rec["vlen"]) == (model, attn, linear, vlen)
    assert rec["attn_regime"] == "row" if attn != "fa-v" else rec["attn_regime"] != "row"
    # ggml's fp16 dot is e16 m1; ggml-scalar has no vector code
    assert rec["attn_lmul"] == {"ggml-vec": 1, "ggml-scalar": 0}.get(attn, rec["attn_lmul"])


@pytest.mark.parametrize("vlen", [128, 1024])
@pytest.mark.parametrize("model", ["tinyllama-1.1b", "pythia-410m"])
def test_kept_k_transposed(model: str, vlen: int) -> None:
    """fa-v over fp16 K^T pages (decode past a page; prefill appends every token's key)"""
    for phase in ("decode", "prefill"):
        rec = check16(["--model", model, "--phase", phase, *SIZE[phase], "--attn", "fa-v",
                       "--k-cache", "transposed", "--linear", "q8-split"], vlen)
        assert rec["k_cache"] == "transposed" and rec["attn_regime"] == "blocked"


def test_longer_sequences() -> None:
    """decode over 2048 keys and a prefill of 40 tokens, where the fp16 accumulator's error
    is largest relative to its bound (workloads/README.md, "layer: fp16")"""
    for attn in ("ggml-vec", "fa-v"):
        check16(["--model", "llama-3.2-1b", "--l", "2048", "--attn", attn], 1024)
        check16(["--model", "qwen2.5-3b", "--phase", "prefill", "--n", "40", "--attn", attn],
                256)


def test_perturb_fails() -> None:
    res = run16(["--model", "tinyllama-1.1b", "--l", "70", "--attn", "fa-v", "--test-perturb"])
    assert res.rc == 1 and res.record["pass"] is False


def test_default_precision_is_fp16() -> None:
    rec = check16(["--model", "pythia-410m", "--l", "70"])
    assert rec["attn"] == "ggml-vec" and rec["linear"] == "q8-ggml"


@pytest.mark.parametrize(("binary", "args", "flag"), [
    (BINARY, ["--precision", "fp32"], "--precision"),
    (BINARY, ["--precision", "bf16"], "--precision"),
    (BINARY, ["--attn", "ggml-vec", "--k-cache", "transposed"], "--k-cache"),
    (BINARY, ["--attn", "fa-v-fp16"], "--attn"),
    ("layer", FP16, "unknown argument '--precision'"),
])
def test_bad_arguments_give_one_line(binary: str, args: list[str], flag: str) -> None:
    res = qemu_run(binary, ["--model", "tinyllama-1.1b", *args], vlen=512, zvfh=True)
    assert res.rc == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag in lines[0], res.stderr


def test_sigill_without_zvfh() -> None:
    """the F16 cache is written by Zvfh conversions: a core without them cannot run it"""
    res = run16(["--model", "pythia-410m", "--l", "70"], zvfh=False)
    assert res.rc != 0 and res.stdout == ""


def test_fp32_binaries_hold_no_fp16_code() -> None:
    """fp16 code lives in layer-fp16 alone, so it never changes an fp32 layer run's id"""
    fp16_functions = ("<attn_fa_v_f16>", "<attn_ggml_vec_f16>", "<attn_ggml_scalar_f16>")
    for b in ("layer", "layer-scalar"):
        text = llvm_objdump(b)
        assert not any(f in text for f in fp16_functions), b
    text = llvm_objdump(BINARY)
    assert all(f in text for f in fp16_functions)


def test_sweep_command_lines() -> None:
    """the planner's command line: fp32 layer runs as before (no --precision), fp16 ones
    through layer-fp16 with --precision fp16"""
    axes = {"kernel": "layer", "model": "tinyllama-1.1b", "phase": "decode", "l": 512,
            "attn": "fa-v", "linear": "q8-split", "seed": 1}
    fp32 = workload_args({**axes, "precision": "fp32"}, "m5")
    fp16 = workload_args({**axes, "precision": "fp16"}, "m5")
    assert "--precision" not in fp32
    assert fp16[fp16.index("--precision") + 1] == "fp16"
    assert kernel("layer").binary_for("fp16") == "layer-fp16"
    with pytest.raises(KeyError):
        kernel("layer-scalar").binary_for("fp16")
