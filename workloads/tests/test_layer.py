"""The layer workload (src/layer) under QEMU: every model (llama, qwen2 and GPT-NeoX
blocks) in both phases with both vector attention kernels, every linear layout at short and
long vectors, the scalar binary, the per-sublayer check (a planted error fails), one region
of interest per sublayer, and bad arguments (one line, exit 2). Real layer dimensions
throughout; short sequences keep the whole file to a couple of minutes. Pythia's block in
detail: test_layer_neox.py."""

from __future__ import annotations

import re

import pytest
from conftest import llvm_objdump, qemu_run

from workloads.kernels import KERNELS, LAYER, TUNABLES
from workloads.models import load_models

SUBLAYERS = ["attn_norm", "qkv", "rope", "attention", "o_proj", "ffn_norm", "ffn_up_gate",
             "ffn_act", "ffn_down"]
#: a GPT-NeoX block's: the same regions, its FFN has no gate
NEOX_SUBLAYERS = [("ffn_up" if s == "ffn_up_gate" else s) for s in SUBLAYERS]
BUILT = list(load_models())
#: what the JSON says of each block (norm, qkv, residual, ffn)
BLOCK = {"llama": ("rmsnorm", "separate", "sequential", "swiglu"),
         "qwen2": ("rmsnorm", "separate", "sequential", "swiglu"),
         "gptneox": ("layernorm", "fused", "parallel", "gelu")}
#: decode over 70 keys (past one fa-v key block of 64), prefill of 3 tokens
SIZE = {"decode": ["--l", "70"], "prefill": ["--n", "3"]}


def run_ok(binary: str, args: list[str], vlen: int = 512) -> dict:
    res = qemu_run(binary, args, vlen=vlen, timeout=600)
    assert res.rc == 0, (args, res.rc, res.stdout[-600:], res.stderr)
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0
    names = NEOX_SUBLAYERS if rec["arch"] == "gptneox" else SUBLAYERS
    assert rec["sublayers"] == names
    assert list(rec["stage_err"]) == names and list(rec["stage_tol"]) == names
    assert all(rec["stage_err"][s] <= rec["stage_tol"][s] for s in names)
    return rec


def matrix(attns: tuple[str, ...] = ("ggml-vec", "fa-v")) -> list:
    """every built model x phase x attention kernel of `attns`; the VLEN cycles through 128,
    512 and 1024 and the layout between q8-split and q8-ggml (the others: test_layouts)"""
    out = []
    for i, model in enumerate(BUILT):
        for j, phase in enumerate(("decode", "prefill")):
            for k, attn in enumerate(attns):
                vlen = (128, 512, 1024)[(i + j + k) % 3]
                linear = ("q8-split", "q8-ggml")[(i + k) % 2]
                out.append(pytest.param(model, phase, attn, linear, vlen,
                                        id=f"{model}-{phase}-{attn}-{linear}-{vlen}"))
    return out


@pytest.mark.parametrize(("model", "phase", "attn", "linear", "vlen"), matrix())
def test_model_phase_attention(model: str, phase: str, attn: str, linear: str,
                               vlen: int) -> None:
    rec = run_ok("layer", ["--model", model, "--phase", phase, *SIZE[phase], "--attn", attn,
                           "--linear", linear], vlen)
    shape = load_models()[model]
    assert (rec["model"], rec["attn"], rec["linear"], rec["vlen"]) == (model, attn, linear, vlen)
    assert (rec["hidden"], rec["intermediate"]) == (shape["hidden"], shape["intermediate"])
    assert rec["rope"] == shape["rope"] and rec["rope_dims"] == shape["rope_dims"]
    assert rec["arch"] == shape["arch"]
    assert (rec["norm"], rec["qkv"], rec["residual"], rec["ffn"]) == BLOCK[shape["arch"]]
    assert rec["rope_freq_factors"] == bool(shape["rope_scaling"])
    assert rec["attn_regime"] == "row" if attn == "ggml-vec" else rec["attn_regime"] != "row"
    if phase == "prefill":
        assert rec["n"] == 3 and rec["gemm"].startswith("gemv per token")
    else:
        assert rec["l"] == 70 and rec["gemm"] == "gemv"


LAYOUTS = TUNABLES["linear"].choices


@pytest.mark.parametrize("vlen", [128, 1024])
@pytest.mark.parametrize("linear", LAYOUTS)
def test_layouts(linear: str, vlen: int) -> None:
    """Every linear layout at the shortest and longest QEMU vectors, on the smallest
    model, in a prefill of 17 tokens (past one 16-token block of the GEMM, and rows that
    fill no whole q8-split tile at 1024 bit: 128 k/v rows)"""
    rec = run_ok("layer", ["--model", "qwen2.5-0.5b", "--phase", "prefill", "--n", "17",
                           "--linear", linear, "--attn", "fa-v"], vlen)
    assert rec["linear"] == linear
    if linear == "q8-split":
        assert rec["tile_rows"] == vlen // 8 and rec["row_block"] == vlen // 8
    else:
        assert rec["row_block"] == 16


def test_layouts_agree() -> None:
    """The linear layouts differ only in fp32 summation order: the layer's errors stay of
    the same size whatever the layout (a layout reading the wrong rows would not)"""
    errs = [run_ok("layer", ["--model", "qwen2.5-0.5b", "--l", "5", "--linear", lin],
                   256)["stage_err"]["ffn_down"] for lin in LAYOUTS]
    assert max(errs) < 1e-5


@pytest.mark.parametrize("model", ["qwen2.5-0.5b", "llama-3.2-1b"])
def test_scalar_binary(model: str) -> None:
    rec = run_ok("layer-scalar", ["--model", model, "--phase", "prefill", "--n", "2"])
    assert (rec["kernel"], rec["vlen"], rec["linear"], rec["attn"]) == \
        ("layer-scalar", 0, "q8-scalar", "ggml-scalar")


def test_decode_of_one_key_and_defaults() -> None:
    """L = 1 (the token attends to itself only); the defaults are llama.cpp's own kernels"""
    rec = run_ok("layer", ["--model", "qwen2.5-0.5b", "--l", "1"])
    assert (rec["phase"], rec["l"], rec["attn"], rec["linear"]) == \
        ("decode", 1, "ggml-vec", "q8-ggml")


@pytest.mark.parametrize("binary", ["layer", "layer-scalar"])
def test_perturb_fails(binary: str) -> None:
    res = qemu_run(binary, ["--model", "qwen2.5-0.5b", "--l", "5", "--test-perturb"])
    assert res.rc == 1, res.stderr
    rec = res.record
    assert rec["pass"] is False and rec["n_bad"] >= 1
    assert rec["stage_err"]["ffn_down"] > 100 * rec["stage_tol"]["ffn_down"]


def test_seed_changes_inputs_not_the_check() -> None:
    a = run_ok("layer", ["--model", "qwen2.5-0.5b", "--l", "5", "--seed", "7"])
    b = run_ok("layer", ["--model", "qwen2.5-0.5b", "--l", "5", "--seed", "8"])
    assert a["stage_err"] != b["stage_err"]


KEPT = [pytest.param(m, ph, v, id=f"{m}-{ph}-{v}") for i, m in enumerate(BUILT)
        for j, ph in enumerate(("decode", "prefill")) for v in [(128, 1024)[(i + j) % 2]]]


@pytest.mark.parametrize(("model", "phase", "vlen"), KEPT)
def test_kept_transposed_k_cache(model: str, phase: str, vlen: int) -> None:
    """fa-v reading the K cache kept transposed (--k-cache transposed): every model in both
    phases passes every sublayer's check, in the blocked regime. Every sublayer is checked
    on its own inputs, so only attention's error may differ from the run with ggml's cache
    (its key blocks are the cache's pages, VLMAX keys, not the copy's L1D-sized blocks:
    another summation order)"""
    args = ["--model", model, "--phase", phase, *SIZE[phase], "--attn", "fa-v",
            "--linear", "q8-split"]
    kept = run_ok("layer", [*args, "--k-cache", "transposed"], vlen)
    assert (kept["k_cache"], kept["attn_regime"]) == ("transposed", "blocked")
    ggml = run_ok("layer", args, vlen)
    assert ggml["k_cache"] == "ggml"
    others = [sub for sub in kept["stage_err"] if sub != "attention"]
    assert [kept["stage_err"][sub] for sub in others] == [ggml["stage_err"][sub] for sub in others]


def test_inputs_do_not_depend_on_the_build() -> None:
    """The weights and the KV cache are drawn in batches (vectors in `layer`, a scalar loop
    in `layer-scalar`) to the values of one rng_u64 call per draw: the two builds, at two
    VLENs, check the same reference. ggml-scalar attention and the scalar Q8_0 dot run in
    both, so their results, and with them every error, agree exactly only when every input
    does."""
    args = ["--model", "pythia-410m", "--l", "70", "--attn", "ggml-scalar"]
    errs = [run_ok("layer", [*args, "--linear", "q8-scalar"], v)["stage_err"] for v in (128, 1024)]
    errs.append(run_ok("layer-scalar", args)["stage_err"])
    assert errs[0] == errs[1] == errs[2]


BAD_ARGS = [
    ("layer", [], "--model"),
    ("layer", ["--model", "gpt-9"], "--model"),
    ("layer", ["--model", "pythia-410m", "--phase", "prefill", "--n", "0"], "--n"),
    ("layer", ["--model", "pythia-410m", "--l", "70", "--attn", "fa-v2"], "--attn"),
    ("layer", ["--model", "tinyllama-1.1b", "--phase", "decode", "--n", "4"], "--n"),
    ("layer", ["--model", "tinyllama-1.1b", "--phase", "prefill", "--l", "4"], "--l"),
    ("layer", ["--model", "tinyllama-1.1b", "--phase", "train"], "--phase"),
    ("layer", ["--model", "tinyllama-1.1b", "--l", "0"], "--l"),
    ("layer", ["--model", "tinyllama-1.1b", "--phase", "prefill", "--n", "65537"], "--n"),
    ("layer", ["--model", "tinyllama-1.1b", "--linear", "q4-k"], "--linear"),
    ("layer", ["--model", "tinyllama-1.1b", "--attn", "flash"], "--attn"),
    ("layer", ["--model", "tinyllama-1.1b", "--seed", "-1"], "--seed"),
    ("layer", ["--model", "tinyllama-1.1b", "--roi", "gem5"], "--roi"),
    ("layer", ["--model", "tinyllama-1.1b", "--bogus"], "--bogus"),
    ("layer", ["--model", "tinyllama-1.1b", "--kernel", "layer-scalar"], "--kernel"),
    ("layer", ["--model", "tinyllama-1.1b", "--kernel", "fa-v"], "--kernel"),
    ("layer", ["--model", "tinyllama-1.1b", "--k-cache", "transposed"], "--k-cache"),
    ("layer", ["--model", "tinyllama-1.1b", "--attn", "fa-v", "--k-cache", "rows"], "--k-cache"),
    ("layer-scalar", ["--model", "tinyllama-1.1b", "--linear", "q8-split"], "--linear"),
    ("layer-scalar", ["--model", "tinyllama-1.1b", "--attn", "fa-v"], "--attn"),
    ("layer-scalar", ["--model", "tinyllama-1.1b", "--kernel", "layer"], "--kernel"),
    ("layer-scalar", ["--model", "pythia-410m", "--linear", "q8-ggml"], "--linear"),
    ("layer-scalar", ["--model", "pythia-410m", "--attn", "ggml-vec"], "--attn"),
]


@pytest.mark.parametrize(("binary", "args", "flag"), BAD_ARGS,
                         ids=[f"{b}-{'_'.join(a[2:]) or 'none'}" for b, a, _ in BAD_ARGS])
def test_bad_arguments_give_one_line(binary: str, args: list[str], flag: str) -> None:
    res = qemu_run(binary, args)
    assert res.rc == 2 and res.stdout == "", (res.rc, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag in lines[0], res.stderr


def test_roi_m5_reaches_an_m5op() -> None:
    """--roi m5 emits m5ops (illegal under QEMU: the run dies on the first one)"""
    res = qemu_run("layer", ["--model", "qwen2.5-0.5b", "--l", "5", "--roi", "m5"])
    assert res.rc != 0 and res.stdout == ""


M5_DUMP = re.compile(r"\b8200007b\b")  # dump_stats
M5_RESET = re.compile(r"\b8000007b\b")  # reset_stats


@pytest.mark.parametrize("binary", ["layer", "layer-scalar"])
def test_one_stats_dump_per_sublayer(binary: str) -> None:
    """main dumps stats between sublayers (roi_next, dump then reset, eight of them) and
    roi_end dumps the last one: nine dumps in all, one per sublayer"""
    main = llvm_objdump(binary, "--disassemble-symbols=main")
    assert len(M5_DUMP.findall(main)) == len(SUBLAYERS) - 1
    assert len(M5_RESET.findall(main)) == len(SUBLAYERS) - 1
    roi_end = llvm_objdump(binary, "--disassemble-symbols=roi_end")
    assert len(M5_DUMP.findall(roi_end)) == 1


def test_registry_entries() -> None:
    layer, scalar = KERNELS["layer"], KERNELS["layer-scalar"]
    assert layer.family is LAYER and scalar.family is LAYER
    assert layer.vector and not scalar.vector
    assert set(layer.tunables) == {"attn", "linear", "k_cache"} and not scalar.tunables
    # the planner drops what the binary refuses (test_bad_arguments_give_one_line)
    tiny = load_models()["tinyllama-1.1b"]
    assert layer.cannot_run({"attn": "ggml-vec", "k_cache": "transposed"}, tiny)
    assert layer.cannot_run({"attn": "fa-v", "k_cache": "transposed"}, tiny) is None
    # every model's block is built, Pythia's GPT-NeoX block included
    for k in (layer, scalar):
        assert all(k.cannot_run({}, load_models()[m]) is None for m in BUILT)
    assert "pythia-410m" in BUILT
