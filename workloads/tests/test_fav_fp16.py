"""fa-v in fp16 under QEMU >= 10 with Zvfh: every model, phase and VLEN in each of its fp16
regimes (rows, blocked, heads, dot) and auto, its family binary, GQA shapes, options, long
sequences, and its instruction content. The fp16 kernels' shared checks (dumps, the
checker's sensitivity, arguments): test_attention_fp16.py."""

from __future__ import annotations

import re

import pytest
from conftest import VLENS, llvm_objdump, qemu_run
from test_attention_check import functions
from test_attention_fp16 import (  # noqa: F401 (qemu_with_zvfh: the module's autouse fixture)
    ATOL16,
    BASE,
    FAV16,
    FAV16_REGIMES,
    MODELS,
    SHAPES,
    SHAPES_YAML,
    check16,
    load_dump,
    qemu_with_zvfh,
    run16,
)

# ---- fa-v in fp16 ----

# lengths with several key blocks in every regime but dot (rows: 32 keys, blocked: 16..128
# keys, heads: 64 keys per block; dot: 256 keys, several blocks in test_fav16_options)
FAV_PHASES = {"prefill": ["--n", "40"], "decode": ["--l", "100"]}


def fav16_auto(model: str, phase: str, vlen: int) -> str:
    """--regime auto in fp16 (fa_v_f16.c): rows when a kv head has >= 64 query rows, heads
    for MHA once an e16 register (VLEN / 16 elements) holds a head, else blocked."""
    m = SHAPES_YAML[model]
    group, n_q = m["heads"] // m["kv_heads"], 40 if phase == "prefill" else 1
    if n_q * group >= 64:
        return "rows"
    return "heads" if group == 1 and vlen // 16 >= m["head_dim"] else "blocked"


def fav16_auto_lmul(model: str, phase: str, vlen: int) -> int:
    """--lmul auto in fp16's rows regime (fa_v_f16.c): e16 m1 when its register holds the
    strip auto wants (256 rows when D <= 64, else 128, at most a kv head's rows), else m2."""
    m = SHAPES_YAML[model]
    rows = (40 if phase == "prefill" else 1) * (m["heads"] // m["kv_heads"])
    want = min(rows, 256 if m["head_dim"] <= 64 else 128)
    return 1 if vlen // 16 >= want else 2


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("regime", ["auto", *FAV16_REGIMES])
@pytest.mark.parametrize("phase", FAV_PHASES)
@pytest.mark.parametrize("model", MODELS)
def test_fav16_models(model: str, phase: str, regime: str, vlen: int) -> None:
    args = ["--model", model, "--phase", phase, *FAV_PHASES[phase], "--regime", regime]
    rec = check16("fa-v", args, vlen, FAV16)
    want = fav16_auto(model, phase, vlen) if regime == "auto" else regime
    assert rec["regime"] == want and rec["regime_asked"] == regime and rec["vlen"] == vlen
    lmul = fav16_auto_lmul(model, phase, vlen) if want == "rows" else 1
    assert rec["lmul"] == lmul and rec["vlmax"] == vlen // 16 * lmul
    # tiles from an e16 register of 128 elements (2048 bit): strided at every QEMU VLEN
    assert rec["transpose"] == ("none" if want in ("heads", "dot") else "strided")
    assert 0 < rec["max_abs_err"]


@pytest.mark.parametrize("regime", ["auto", *FAV16_REGIMES])
def test_fav16_family_binary(regime: str) -> None:
    """attention-fa-v-fp16 computes exactly what the all-in-one binary does."""
    for args in (["--model", "qwen2.5-0.5b", "--n", "20"],
                 ["--model", "pythia-410m", "--phase", "decode", "--l", "90"]):
        a = check16("fa-v", [*args, "--regime", regime], 1024, FAV16)
        b = check16("fa-v", [*args, "--regime", regime], 1024)
        assert (a["max_abs_err"], a["regime"]) == (b["max_abs_err"], b["regime"])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "h{}kv{}d{}".format(*s))
@pytest.mark.parametrize("vlen", [128, 512, 1024])
@pytest.mark.parametrize("regime", FAV16_REGIMES)
def test_fav16_gqa_shapes(regime: str, vlen: int, shape: tuple[int, int, int]) -> None:
    """Every GQA ratio, MHA and MQA; D not a power of two (heads then runs blocked, as in
    fp32) and D longer than an e16 register (heads' E < D path at VLEN 128 and D = 256)."""
    heads, kv_heads, head_dim = shape
    base = ["--heads", str(heads), "--kv-heads", str(kv_heads), "--head-dim", str(head_dim)]
    pow2 = not head_dim & (head_dim - 1)
    for extra in (["--n", "11"], ["--phase", "decode", "--l", "37"]):
        rec = check16("fa-v", [*base, *extra, "--regime", regime, "--block-c", "16"], vlen,
                      FAV16)
        assert rec["regime"] == (regime if regime != "heads" or pow2 else "blocked")


FAV16_OPTIONS = [  # tunables the fp16 regimes take
    ["--regime", "rows", "--strip", "7"], ["--regime", "rows", "--strip", "1"],
    ["--regime", "rows", "--block-c", "5"], ["--regime", "blocked", "--unroll", "1"],
    ["--regime", "blocked", "--unroll", "2"], ["--regime", "blocked", "--unroll", "8"],
    ["--regime", "blocked", "--block-r", "3", "--block-c", "7"],
    ["--regime", "heads", "--block-c", "3"], ["--regime", "blocked", "--lmul", "1"],
    ["--regime", "dot", "--block-c", "5"], ["--regime", "dot", "--block-c", "16"],
    ["--regime", "rows", "--lmul", "1"], ["--regime", "rows", "--lmul", "1", "--strip", "5"],
    ["--regime", "rows", "--lmul", "2", "--strip", "50"],
    ["--regime", "rows", "--lmul", "2", "--block-c", "3"],
]


@pytest.mark.parametrize("opts", FAV16_OPTIONS, ids=" ".join)
def test_fav16_options(opts: list[str]) -> None:
    for args in (["--model", "llama-3.2-1b", "--n", "30"],
                 ["--model", "qwen2.5-3b", "--phase", "decode", "--l", "50"]):
        rec = check16("fa-v", [*args, *opts], 256, FAV16)
        assert rec["regime"] == opts[1]


TILE_CASES = [  # (model or shape, N, VLEN): rows of one tile 1 (VLEN 128) .. 8 (1024, D 64)
    (["--model", "tinyllama-1.1b"], 37, 1024), (["--model", "qwen2.5-3b"], 23, 512),
    (["--model", "llama-3.2-1b"], 9, 128), (["--model", "pythia-410m"], 70, 1024),
    (["--heads", "14", "--kv-heads", "2", "--head-dim", "32"], 13, 256),
    (["--heads", "6", "--kv-heads", "6", "--head-dim", "8"], 50, 512),
]


@pytest.mark.parametrize(("shape", "n", "vlen"), TILE_CASES, ids=lambda x: str(x))
def test_fav16_tile_transposes(tmp_path, shape: list[str], n: int, vlen: int) -> None:
    """The rows regime's Q^T / O^T by tiles in registers (fa_v_tile.h) move the same bits
    as the strided copies: bit-identical output for strips and tiles that do not divide the
    rows (N x G), D from 8 to 128, and strips shorter than a tile."""
    outs = []
    for tr, strip in (("tile", []), ("strided", []), ("tile", ["--strip", "5"])):
        d = tmp_path / f"{tr}{len(strip)}"
        args = [*shape, "--n", str(n), "--regime", "rows", "--transpose", tr, *strip]
        res = run16("fa-v", [*args, "--dump", str(d)], vlen, FAV16)
        assert res.rc == 0 and res.record["pass"] is True, (res.rc, res.stderr)
        assert res.record["transpose"] == tr and (res.record["tile_rows"] > 0) == (tr == "tile")
        outs.append(load_dump(d)[1]["o"])
    assert (outs[0] == outs[1]).all()
    assert (outs[2] != 0).any()


def test_fav16_longer_sequences() -> None:
    """Thousands of keys: the fp16 part of the O accumulator spans one key block only."""
    for args, vlen in ((["--model", "tinyllama-1.1b", "--n", "150"], 128),
                       (["--model", "qwen2.5-0.5b", "--phase", "decode", "--l", "2000"], 1024),
                       (["--model", "pythia-410m", "--phase", "decode", "--l", "2000"], 1024),
                       (["--model", "llama-3.2-3b", "--phase", "decode", "--l", "3000",
                         "--regime", "heads"], 512),
                       (["--model", "qwen2.5-1.5b", "--phase", "decode", "--l", "3000",
                         "--regime", "dot"], 128)):
        rec = check16("fa-v", args, vlen, FAV16)
        assert rec["max_abs_err"] < ATOL16 / 2, rec



def test_fav16_kernel_instructions() -> None:
    """fa-v fp16 computes in half precision where it says it does: fp16 products widened into
    fp32 sums for the scores (vfwmacc.vf, vfwmul.vv), fp16 multiply-adds for P V at e16
    (vfmacc.vf, vfmacc.vv), widened into the fp32 accumulator (vfwadd.wv, vfwcvt), fp32 ->
    fp16 narrowing (vfncvt), fp32 reductions (dot: vfredusum); no LMUL 8 and no segment or
    indexed access; and it needs Zvfh."""
    funcs = functions(llvm_objdump(FAV16, "--mattr=+zvfh"))
    insns = [i for name, body in funcs.items() for i in body
             if name.startswith(("attn_fa_v_f16", "rows_", "blk16_", "heads_", "dot_",
                                 "fav16_"))]
    for needed in ("vfwmacc.vf", "vfwmul.vv", "vfmacc.vf", "vfmacc.vv", "vfwadd.wv",
                   "vfwcvt.f.f.v", "vfncvt.f.f.w", "vrgather.vv", "vfredusum.vs"):
        assert any(i.startswith(needed) for i in insns), needed
    assert any("e16, m1" in i for i in insns) and any("e32, m2" in i for i in insns)
    bad = re.compile(r"^(vlseg|vsseg|vlsseg|vssseg|vluxseg|vloxseg|vsuxseg|vsoxseg|vlux|vlox"
                     r"|vsux|vsox)|\bm8\b")
    assert not [i for i in insns if bad.search(i)]
    args = ["--kernel", "fa-v", *BASE]
    assert qemu_run(FAV16, args, vlen=512, zvfh=True).rc == 0
    assert qemu_run(FAV16, args, vlen=512).rc == -4  # SIGILL without Zvfh


# ---- fa-v in fp16 with the K cache kept transposed (--k-cache transposed) ----


@pytest.mark.parametrize("vlen", (128, 512, 1024))
@pytest.mark.parametrize("model", MODELS)
def test_fav16_kept_k_cache(model: str, vlen: int) -> None:
    """fp16 K^T pages read by the blocked regime, both phases, every model; the auto page
    is one e16 score vector of VLMAX keys, at least 64 (QEMU's pages stay under 512 KiB)."""
    for phase in (["--phase", "decode", "--l", "77"], ["--n", "13"]):
        rec = check16("fa-v", ["--model", model, "--k-cache", "transposed", *phase], vlen,
                      FAV16)
        assert (rec["regime"], rec["regime_asked"], rec["k_cache"]) == (
            "blocked", "auto", "transposed")
        assert rec["block_c"] == max(64, rec["vlmax"]) and rec["vlmax"] == vlen // 16


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "h{}kv{}d{}".format(*s))
def test_fav16_kept_k_cache_shapes(shape: tuple[int, int, int]) -> None:
    """Every GQA ratio, MHA and MQA; N and L not multiples of the page; unrolls of 1..8."""
    heads, kv_heads, head_dim = shape
    base = ["--heads", str(heads), "--kv-heads", str(kv_heads), "--head-dim", str(head_dim),
            "--k-cache", "transposed", "--regime", "blocked"]
    for extra in (["--n", "11", "--block-r", "4", "--block-c", "5", "--unroll", "3"],
                  ["--phase", "decode", "--l", "37", "--block-c", "16", "--unroll", "8"],
                  ["--phase", "decode", "--l", "130", "--unroll", "1"]):
        rec = check16("fa-v", [*base, *extra], 256, FAV16)
        assert rec["regime"] == "blocked" and rec["k_cache"] == "transposed"


def test_fav16_kept_k_cache_same_output() -> None:
    """Keeping K^T changes where the scores read keys, not what they compute: with the same
    block size the output is the copied block's to the last bit; a perturbed result fails."""
    args = ["--model", "qwen2.5-0.5b", "--phase", "decode", "--l", "150", "--regime",
            "blocked", "--block-c", "32"]
    a = check16("fa-v", args, 512, FAV16)
    b = check16("fa-v", [*args, "--k-cache", "transposed"], 512, FAV16)
    assert a["max_abs_err"] == b["max_abs_err"] and b["k_cache"] == "transposed"
    bad = run16("fa-v", [*args, "--k-cache", "transposed", "--test-perturb"], 512, FAV16)
    assert bad.rc == 1 and bad.record["pass"] is False

