"""Attention workload on QEMU: every kernel x phase x model x VLEN, both fa-v regimes,
custom GQA shapes and non-default tunables. Each run must pass its own self-check."""

from __future__ import annotations

import pytest
from conftest import VLENS, qemu_run

from workloads.kernels import ATTENTION, own
from workloads.models import load_models

MODELS = sorted(load_models())
KERNELS = own(ATTENTION)  # ggml's own kernels: test_ggml_lib.py
PHASES = {"prefill": ["--n", "12"], "decode": ["--l", "40"]}  # n = 12: rows for G >= 6


def check(args: list[str], vlen: int = 256, binary: str = "attention") -> dict:
    res = qemu_run(binary, args, vlen=vlen)
    assert res.rc == 0, f"rc={res.rc} stdout={res.stdout!r} stderr={res.stderr!r}"
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0
    assert rec["max_abs_err"] <= 1e-5
    return rec


def auto_choice(model: str, phase: str, n_q: int, vlen: int) -> tuple[str, int, int]:
    """What --regime auto and --lmul auto must pick (workloads/README.md): rows when a kv
    head has >= 64 query rows, with the smallest LMUL whose VLMAX holds a 128-row strip
    (strips of 128 rows, 64 when D > 64 at LMUL > 1, never more than a kv head's rows;
    QEMU's VLEN never reaches the 4096 bit where tiles and 256-row strips start);
    else dot for MHA when a head's row fits one register group at that LMUL; else blocked;
    outside rows the smallest LMUL whose VLMAX holds D (else 4). Returns (regime, lmul,
    strip)."""
    m = load_models()[model]
    d, group = m["head_dim"], m["heads"] // m["kv_heads"]
    if n_q * group >= 64:
        lmul = next((x for x in (1, 2, 4) if vlen * x // 32 >= 128), 4)
        strip = min(64 if d > 64 and lmul > 1 else 128, n_q * group)
        return "rows", lmul, min(strip, vlen * lmul // 32)
    lmul = next((x for x in (1, 2, 4) if vlen * x // 32 >= d), 4)
    if group == 1 and vlen * lmul // 32 >= d:
        return "dot", lmul, 0
    return "blocked", lmul, 0


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_models(kernel: str, model: str, phase: str, vlen: int) -> None:
    rec = check(["--kernel", kernel, "--model", model, "--phase", phase, *PHASES[phase]], vlen)
    assert rec["model"] == model and rec["kernel"] == kernel and rec["phase"] == phase
    assert rec["vlen"] == vlen
    n_q = int(PHASES[phase][1]) if phase == "prefill" else 1
    regime, lmul, strip = auto_choice(model, phase, n_q, vlen)
    if kernel == "fa-v":
        assert (rec["regime"], rec["lmul"], rec["strip"]) == (regime, lmul, strip)
        assert rec["regime_asked"] == "auto" and rec["vlmax"] == vlen * lmul // 32
    else:
        head_dim = load_models()[model]["head_dim"]
        assert rec["lmul"] == next((m for m in (1, 2, 4) if vlen * m // 32 >= head_dim), 4)
        assert rec["regime"] == "row"


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("n", (12, 40))
@pytest.mark.parametrize("model", MODELS)
def test_fav_auto_prefill(model: str, n: int, vlen: int) -> None:
    """Prefill sizes on both sides of the rows threshold (n x G >= 64 rows per kv head)."""
    rec = check(["--kernel", "fa-v", "--model", model, "--n", str(n)], vlen)
    assert (rec["regime"], rec["lmul"], rec["strip"]) == auto_choice(model, "prefill", n, vlen)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
def test_scalar_binary(model: str, phase: str) -> None:
    rec = check(["--kernel", "ggml-scalar", "--model", model, "--phase", phase,
                 *PHASES[phase]], binary="attention-scalar")
    assert rec["vlen"] == 0  # rv64gc build: no vector unit used


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
def test_fav_packed_models(model: str, phase: str) -> None:
    """VLEN 1024 with LMUL 4, packed regime asked for: VLMAX = 128, so D = 64 packs 2 heads
    per register and D = 128 (VLMAX == D) stays blocked."""
    rec = check(["--kernel", "fa-v", "--model", model, "--phase", phase, *PHASES[phase],
                 "--lmul", "4", "--regime", "packed"], vlen=1024)
    head_dim = load_models()[model]["head_dim"]
    if head_dim == 64:
        assert rec["regime"] == "packed" and rec["pack"] == 2
        heads = load_models()[model]["heads"]
        regs = -(-heads // 2)  # registers for all heads of a token
        # R * LMUL <= 4 (register file): LMUL 4 leaves R = 1
        assert rec["r"] == min(1, regs) and rec["heads_per_step"] == 2 * rec["r"]
    else:
        assert rec["regime"] == "blocked"


# (heads, kv_heads, head_dim): GQA ratios 8:1 4:1 3:1 7:1 6:1 1:1, packed widths larger and
# smaller than the group, heads not divisible by the packed width, registers spanning kv heads.
SHAPES = [
    (16, 2, 16),  # 8:1
    (16, 4, 32),  # 4:1
    (12, 4, 16),  # 3:1
    (14, 2, 32),  # 7:1
    (12, 2, 16),  # 6:1
    (10, 10, 16),  # 1:1 (MHA)
    (5, 1, 8),  # MQA, odd heads
    (3, 3, 64),  # fewer heads than fit in one register at some widths
]


@pytest.mark.parametrize("regime", ("blocked", "packed", "rows", "dot"))
@pytest.mark.parametrize("lmul", (1, 2, 4))
@pytest.mark.parametrize("vlen", (512, 1024))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "h{}kv{}d{}".format(*s))
def test_fav_custom_shapes(shape: tuple[int, int, int], vlen: int, lmul: int,
                           regime: str) -> None:
    heads, kv_heads, head_dim = shape
    args = ["--kernel", "fa-v", "--heads", str(heads), "--kv-heads", str(kv_heads),
            "--head-dim", str(head_dim), "--lmul", str(lmul), "--regime", regime]
    vlmax = vlen * lmul // 32
    for extra in (["--n", "11", "--block-r", "4", "--block-c", "5", "--r", "3"],
                  ["--phase", "decode", "--l", "37"]):
        rec = check(args + extra, vlen)
        packed = regime == "packed" and vlmax > head_dim and vlmax % head_dim == 0
        assert rec["regime"] == (regime if regime in ("rows", "dot") else
                                 "packed" if packed else "blocked")
        assert rec["pack"] == (vlmax // head_dim if packed else 1)


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize(
    "tun",
    [
        ["--block-r", "5", "--block-c", "7", "--unroll", "1"],
        ["--block-r", "3", "--block-c", "64", "--unroll", "2"],
        ["--block-r", "64", "--block-c", "3", "--unroll", "8"],
        ["--block-r", "1", "--block-c", "1", "--unroll", "3"],
        ["--block-r", "4", "--block-c", "6", "--unroll", "5", "--lmul", "2"],
        ["--block-r", "7", "--block-c", "9", "--r", "1", "--lmul", "4", "--regime", "packed"],
        ["--block-r", "7", "--block-c", "9", "--r", "2", "--lmul", "4", "--regime", "packed"],
        ["--block-r", "64", "--block-c", "5", "--lmul", "1", "--regime", "rows"],
        ["--block-r", "64", "--block-c", "33", "--lmul", "2", "--regime", "rows"],
        ["--block-r", "64", "--block-c", "3", "--lmul", "1", "--regime", "dot"],
        ["--block-r", "64", "--block-c", "300", "--lmul", "4", "--regime", "dot"],
    ],
    ids=lambda t: "_".join(x.lstrip("-") for x in t),
)
@pytest.mark.parametrize("model", ["qwen2.5-0.5b", "llama-3.2-3b", "pythia-410m"])
def test_fav_tunables(model: str, tun: list[str], vlen: int) -> None:
    rec = check(["--kernel", "fa-v", "--model", model, "--n", "13", *tun], vlen)
    assert rec["block_r"] == int(tun[1]) and rec["block_c"] == int(tun[3])


@pytest.mark.parametrize("model, decode_bc, prefill_bc", [
    ("tinyllama-1.1b", 64, 128),  # K^T per key: 4 kv heads x 64 x 4 B = 1 KiB
    ("qwen2.5-3b", 64, 128),      # 2 x 128 x 4 B = 1 KiB
    ("llama-3.2-1b", 32, 128),    # 2 KiB: 64 keys would be 128 KiB, twice the L1D
    ("pythia-410m", 16, 64),      # 4 KiB: 16 keys is the floor; 128 keys = 512 KiB
])
def test_fav_block_c_auto(model: str, decode_bc: int, prefill_bc: int) -> None:
    """--block-c auto (the default), blocked regime: the K^T block fits the 64 KiB L1D in
    decode, 128 keys in prefill unless that block exceeds four L1Ds
    (results/reference-block-c)."""
    base = ["--kernel", "fa-v", "--model", model, "--regime", "blocked"]
    assert check([*base, "--phase", "decode", "--l", "40"], 512)["block_c"] == decode_bc
    assert check([*base, "--n", "20", "--block-c", "auto"], 512)["block_c"] == prefill_bc


@pytest.mark.parametrize("strip", ["1", "7", "48", "65536"])
@pytest.mark.parametrize("model", ["llama-3.2-3b", "pythia-410m"])
def test_fav_rows_strip(model: str, strip: str) -> None:
    """--strip N: rows per strip below VLMAX (odd, not dividing the rows), or capped at it."""
    rec = check(["--kernel", "fa-v", "--model", model, "--n", "21", "--lmul", "4",
                 "--regime", "rows", "--strip", strip], vlen=1024)
    assert rec["strip"] == min(int(strip), rec["vlmax"])


@pytest.mark.parametrize("bad", ["0", "x7", "65537", ""])
def test_fav_strip_rejects(bad: str) -> None:
    r = qemu_run("attention", ["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--n", "4",
                               "--regime", "rows", "--strip", bad], vlen=512)
    assert r.rc == 2 and "--strip: expected auto or an integer" in r.stderr


@pytest.mark.parametrize("bad", ["0", "x7", "65537", ""])
def test_fav_block_c_rejects(bad: str) -> None:
    r = qemu_run("attention", ["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--n", "4",
                               "--block-c", bad], vlen=512)
    assert r.rc == 2 and "--block-c: expected auto or an integer" in r.stderr


@pytest.mark.parametrize("lmul", (1, 2, 4))
@pytest.mark.parametrize("vlen", (128, 1024))
def test_ggml_vec_lmul(vlen: int, lmul: int) -> None:
    check(["--kernel", "ggml-vec", "--heads", "6", "--kv-heads", "2", "--head-dim", "40",
           "--n", "9", "--lmul", str(lmul)], vlen)


def test_longer_sequences() -> None:
    """Several key blocks with the default 64x64 blocking, both regimes."""
    for extra, vlen in ((["--lmul", "1"], 512), (["--lmul", "4", "--regime", "packed"], 1024)):
        check(["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--n", "150", *extra], vlen)
    check(["--kernel", "fa-v", "--model", "llama-3.2-1b", "--n", "150", "--regime", "rows",
           "--lmul", "4"], 1024)  # strips of 128 rows = 16 tokens, several key blocks
    for regime in ("blocked", "packed", "rows", "dot"):
        check(["--kernel", "fa-v", "--model", "qwen2.5-0.5b", "--phase", "decode", "--l", "700",
               "--lmul", "4", "--regime", regime], 1024)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
def test_fav_rows_models(model: str, phase: str) -> None:
    """Rows regime on every model at the longest QEMU vectors (VLMAX 128 at LMUL 4, what 4096
    bit gives at LMUL 1): strips of query rows, several strips per kv head in prefill."""
    rec = check(["--kernel", "fa-v", "--model", model, "--phase", phase, *PHASES[phase],
                 "--lmul", "4", "--regime", "rows"], vlen=1024)
    assert rec["regime"] == "rows" and rec["vlmax"] == 128 and rec["block_c"] == 32
    m = load_models()[model]
    assert rec["heads_per_step"] == m["heads"] // m["kv_heads"]


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
def test_fav_dot_models(model: str, phase: str, vlen: int) -> None:
    """Dot regime on every model; at VLEN 128 D exceeds VLMAX (strips of D, one reduction
    per key), at 1024 one register holds a head's D."""
    rec = check(["--kernel", "fa-v", "--model", model, "--phase", phase, *PHASES[phase],
                 "--regime", "dot"], vlen=vlen)
    assert rec["regime"] == "dot" and rec["block_c"] == 64 and rec["heads_per_step"] == 1


@pytest.mark.parametrize("heads,kv_heads,phase,length,block_c", [
    (11, 11, "decode", 150, 16),  # MHA, heads not a multiple of the 8 reduced at once
    (14, 2, "decode", 97, 64),    # GQA 7:1, L not a multiple of the block
    (6, 1, "prefill", 37, 5),     # MQA, causal rows ending inside a block
    (12, 4, "prefill", 70, 64),   # 3:1, tokens beyond one block
])
def test_fav_dot_token_order_shapes(heads: int, kv_heads: int, phase: str, length: int,
                                    block_c: int) -> None:
    """The dot regime's block-major order (all heads' scores of a key block, then each
    head's softmax and output) on shapes where its loops have remainders."""
    flag = "--l" if phase == "decode" else "--n"
    rec = check(["--kernel", "fa-v", "--heads", str(heads), "--kv-heads", str(kv_heads),
                 "--head-dim", "64", "--phase", phase, flag, str(length), "--regime", "dot",
                 "--block-c", str(block_c)], vlen=512)
    assert (rec["regime"], rec["lmul"], rec["block_c"]) == ("dot", 4, block_c)


def test_seed_changes_inputs_not_correctness() -> None:
    a = check(["--kernel", "fa-v", "--model", "pythia-410m", "--n", "8", "--seed", "1"])
    b = check(["--kernel", "fa-v", "--model", "pythia-410m", "--n", "8", "--seed", "7"])
    assert a["max_abs_err"] != b["max_abs_err"]


def test_fav_r_capped_by_heads() -> None:
    """4 heads of D = 32 fill one 128-element register: R = 4 is capped to 1."""
    rec = check(["--kernel", "fa-v", "--heads", "4", "--kv-heads", "1", "--head-dim", "32",
                 "--n", "5", "--lmul", "4", "--regime", "packed"], 1024)
    assert rec["regime"] == "packed" and rec["pack"] == 4 and rec["r"] == 1


@pytest.mark.parametrize("lmul,r,unroll", [(1, 4, 8), (2, 2, 8), (4, 1, 4)])
def test_fav_register_file_caps(lmul: int, r: int, unroll: int) -> None:
    """Requests beyond the register file are capped and reported capped."""
    packed = check(["--kernel", "fa-v", "--heads", "32", "--kv-heads", "4", "--head-dim", "8",
                    "--n", "6", "--lmul", str(lmul), "--r", "4", "--regime", "packed"], 1024)
    assert packed["regime"] == "packed" and packed["r"] == r
    blocked = check(["--kernel", "fa-v", "--model", "llama-3.2-3b", "--n", "6",
                     "--lmul", str(lmul), "--unroll", "8"], 128)
    assert blocked["regime"] == "blocked" and blocked["unroll"] == unroll
    assert blocked["heads_per_step"] == unroll


# Tile transposes (fa_v_tile.h): D a power of two, >= 8; rows per tile = 8 x VLEN/32 / D.
TILE_SHAPES = SHAPES + [(8, 8, 128), (6, 1, 64), (4, 4, 48)]  # D = 48: no tile possible


def tile_rows(head_dim: int, vlen: int) -> int:
    ok = head_dim >= 8 and head_dim & (head_dim - 1) == 0
    return 8 * (vlen // 32) // head_dim if ok else 0


@pytest.mark.parametrize("vlen", (128, 512, 1024))
@pytest.mark.parametrize("shape", TILE_SHAPES, ids=lambda s: "h{}kv{}d{}".format(*s))
def test_fav_tile_transposes(shape: tuple[int, int, int], vlen: int) -> None:
    """--transpose tile: the rows regime's Q^T / O^T and the blocked regime's K^T by tiles
    in registers wherever D allows (any rows per tile), with strips, key blocks and N not
    multiples of a tile; D = 48 falls back to strided transposes and says so."""
    heads, kv_heads, head_dim = shape
    base = ["--kernel", "fa-v", "--heads", str(heads), "--kv-heads", str(kv_heads),
            "--head-dim", str(head_dim), "--transpose", "tile"]
    tr = tile_rows(head_dim, vlen)
    for extra in (["--regime", "rows", "--n", "23", "--strip", "13", "--block-c", "9"],
                  ["--regime", "rows", "--n", "19", "--lmul", "4"],
                  ["--regime", "blocked", "--n", "21", "--block-c", "11"],
                  ["--regime", "blocked", "--phase", "decode", "--l", "75"]):
        rec = check(base + extra, vlen)
        assert (rec["transpose"], rec["tile_rows"]) == (("tile", tr) if tr else ("strided", 0))


@pytest.mark.parametrize("vlen,transpose,tiles", [
    (512, "auto", False),    # tiles pay from 4096 bit (gem5): never under QEMU
    (1024, "auto", False),
    (1024, "strided", False),
    (512, "tile", True),
])
def test_fav_transpose_auto(vlen: int, transpose: str, tiles: bool) -> None:
    """--transpose auto takes tiles only from VLEN 4096 (FAV_TILE_MIN_E); the packed and dot
    regimes make no transposed copy at all."""
    for regime in ("rows", "blocked"):
        rec = check(["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--n", "20",
                     "--regime", regime, "--transpose", transpose], vlen)
        assert rec["transpose"] == ("tile" if tiles else "strided")
        assert rec["tile_rows"] == (tile_rows(64, vlen) if tiles else 0)
    for regime in ("dot", "packed"):
        rec = check(["--kernel", "fa-v", "--model", "pythia-410m", "--phase", "decode",
                     "--l", "20", "--regime", regime, "--lmul", "4", "--transpose", "tile"], 1024)
        assert rec["transpose"] == "none"


def heads_layout(heads: int, head_dim: int, vlen: int) -> tuple[int, int]:
    """The heads regime's registers: (heads per register, keys-per-block unit). E = VLEN/32
    elements at LMUL 1; heads padded to whole registers; a key block's scores fill whole
    registers (workloads/README.md)."""
    import math
    e = vlen // 32
    pack = e // head_dim if e >= head_dim else 1
    padded = -(-heads // pack) * pack
    return pack, e // math.gcd(e, padded)


@pytest.mark.parametrize("vlen", (128, 256, 512, 1024))
@pytest.mark.parametrize("shape", SHAPES + [(14, 2, 8), (6, 3, 4), (24, 8, 128), (7, 7, 32)],
                         ids=lambda s: "h{}kv{}d{}".format(*s))
def test_fav_heads_shapes(shape: tuple[int, int, int], vlen: int) -> None:
    """Heads regime on every GQA ratio, D from 4 to 128 (several heads per register, a head
    over several registers), heads padded to whole registers, prefill (several tokens, a
    causal limit each) and decode over several key blocks, block sizes rounded up."""
    heads, kv_heads, head_dim = shape
    base = ["--kernel", "fa-v", "--heads", str(heads), "--kv-heads", str(kv_heads),
            "--head-dim", str(head_dim), "--regime", "heads"]
    pack, unit = heads_layout(heads, head_dim, vlen)
    for extra, bc in ((["--n", "13"], 64), (["--phase", "decode", "--l", "300"], 64),
                      (["--phase", "decode", "--l", "45", "--block-c", "5"], 5)):
        rec = check(base + extra, vlen)
        assert (rec["regime"], rec["pack"], rec["lmul"]) == ("heads", pack, 1)
        assert rec["block_c"] == -(-bc // unit) * unit and rec["transpose"] == "none"
        assert rec["heads_per_step"] == heads


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
def test_fav_heads_models(model: str, phase: str) -> None:
    check(["--kernel", "fa-v", "--model", model, "--phase", phase, *PHASES[phase],
           "--regime", "heads"], vlen=1024)


def test_fav_heads_needs_power_of_two_d() -> None:
    """D = 48 cannot be reduced by halving: the heads regime runs blocked and says so."""
    rec = check(["--kernel", "fa-v", "--heads", "4", "--kv-heads", "2", "--head-dim", "48",
                 "--phase", "decode", "--l", "30", "--regime", "heads"], vlen=512)
    assert rec["regime"] == "blocked" and rec["regime_asked"] == "heads"
