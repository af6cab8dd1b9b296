"""fa-v with a kept transposed K cache (--k-cache transposed, the blocked regime without a
per-block K^T copy) on QEMU: every model and GQA ratio, both phases, N and L not multiples
of the key block, explicit and auto block sizes. Each run must pass its own self-check."""

from __future__ import annotations

import pytest
from conftest import qemu_run
from test_attention import MODELS, SHAPES, check


@pytest.mark.parametrize("vlen", (128, 512, 1024))
@pytest.mark.parametrize("lmul", ("auto", "1", "4"))
@pytest.mark.parametrize("model", MODELS)
def test_models(model: str, lmul: str, vlen: int) -> None:
    for phase in (["--phase", "decode", "--l", "77"], ["--n", "13"]):
        rec = check(["--kernel", "fa-v", "--model", model, "--k-cache", "transposed",
                     "--lmul", lmul, *phase], vlen)
        assert (rec["regime"], rec["regime_asked"], rec["k_cache"]) == (
            "blocked", "auto", "transposed")
        # auto key block (page): one score vector of VLMAX keys, at least 64, at most
        # 512 KiB of all kv heads (QEMU's VLMAX <= 128 stays under it for every model)
        assert rec["block_c"] == max(64, rec["vlmax"])


@pytest.mark.parametrize("vlen", (256, 1024))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "h{}kv{}d{}".format(*s))
def test_custom_shapes(shape: tuple[int, int, int], vlen: int) -> None:
    heads, kv_heads, head_dim = shape
    base = ["--kernel", "fa-v", "--heads", str(heads), "--kv-heads", str(kv_heads),
            "--head-dim", str(head_dim), "--k-cache", "transposed", "--regime", "blocked"]
    for extra in (["--n", "11", "--block-r", "4", "--block-c", "5", "--unroll", "3"],
                  ["--phase", "decode", "--l", "37", "--block-c", "16"],
                  ["--phase", "decode", "--l", "130", "--lmul", "2"]):
        rec = check(base + extra, vlen)
        assert rec["regime"] == "blocked" and rec["k_cache"] == "transposed"


def test_default_is_ggml_layout() -> None:
    rec = check(["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--phase", "decode",
                 "--l", "40"], 512, binary="attention-fa-v")
    assert rec["k_cache"] == "ggml" and rec["block_c"] == 64


def test_same_output_as_the_copied_block() -> None:
    """Keeping K^T changes where the scores read keys, not what they compute: with the same
    block size the outputs agree to the last bit (the same additions in the same order)."""
    args = ["--kernel", "fa-v", "--model", "qwen2.5-0.5b", "--phase", "decode", "--l", "150",
            "--regime", "blocked", "--block-c", "32"]
    a = qemu_run("attention-fa-v", args, vlen=512).record
    b = qemu_run("attention-fa-v", [*args, "--k-cache", "transposed"], vlen=512).record
    assert a["pass"] and b["pass"] and a["max_abs_err"] == b["max_abs_err"]


@pytest.mark.parametrize("model, page", [("pythia-410m", 64), ("tinyllama-1.1b", 512)])
def test_page_stays_within_half_the_l2(model: str, page: int) -> None:
    """A page of all kv heads holds at most 512 KiB (halved down to 64 keys). QEMU's VLMAX
    stops at 128, which no paper model's page exceeds, so a wide custom shape (16 kv heads
    x D = 256: 16 KiB a key) stands in for Pythia at 8192 bit."""
    heads, kv, d = (16, 16, 256) if model == "pythia-410m" else (32, 4, 64)
    rec = check(["--kernel", "fa-v", "--heads", str(heads), "--kv-heads", str(kv),
                 "--head-dim", str(d), "--phase", "decode", "--l", "200", "--lmul", "4",
                 "--k-cache", "transposed"], 1024)
    assert rec["vlmax"] == 128
    assert rec["block_c"] == min(128, page)
