"""Attention: independent numpy check of dumped outputs, the self-check's sensitivity
(--test-perturb), argument errors, and the instruction content of the binaries."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import llvm_objdump, qemu_run


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """Softmax attention in float64, written independently of the C reference."""
    n_q, heads, d = q.shape
    n_kv, kv_heads, _ = k.shape
    group = heads // kv_heads
    kk = np.repeat(k, group, axis=1)  # [pos][head][D]
    vv = np.repeat(v, group, axis=1)
    s = np.einsum("ihd,jhd->hij", q, kk) / np.sqrt(d)
    if causal:
        offset = n_kv - n_q
        mask = np.arange(n_kv)[None, :] > (np.arange(n_q)[:, None] + offset)
        s = np.where(mask[None], -np.inf, s)
    s -= s.max(axis=2, keepdims=True)
    w = np.exp(s)
    w /= w.sum(axis=2, keepdims=True)
    return np.einsum("hij,jhd->ihd", w, vv)


DUMP_CASES = [
    ("ggml-scalar", ["--model", "qwen2.5-0.5b", "--n", "9"], 256),
    ("ggml-scalar", ["--model", "llama-3.2-3b", "--phase", "decode", "--l", "33"], 256),
    ("ggml-vec", ["--model", "tinyllama-1.1b", "--n", "10"], 128),
    ("ggml-vec", ["--heads", "6", "--kv-heads", "3", "--head-dim", "20", "--n", "7"], 512),
    ("fa-v", ["--model", "qwen2.5-1.5b", "--n", "11", "--block-r", "4", "--block-c", "3"], 256),
    ("fa-v", ["--model", "tinyllama-1.1b", "--n", "10", "--lmul", "4"], 1024),  # blocked
    ("fa-v", ["--model", "tinyllama-1.1b", "--n", "10", "--lmul", "4", "--regime", "packed"],
     1024),
    ("fa-v", ["--heads", "14", "--kv-heads", "2", "--head-dim", "32", "--phase", "decode",
              "--l", "45", "--lmul", "2", "--regime", "packed"], 1024),  # spanning kv heads
    ("fa-v", ["--heads", "12", "--kv-heads", "2", "--head-dim", "16", "--n", "8",
              "--lmul", "4", "--r", "2", "--regime", "packed"], 512),
    ("fa-v", ["--model", "tinyllama-1.1b", "--n", "40", "--lmul", "4", "--regime", "rows",
              "--block-c", "7"], 1024),  # strips of 16 tokens x 8 heads, partial key blocks
    ("fa-v", ["--heads", "14", "--kv-heads", "2", "--head-dim", "20", "--phase", "decode",
              "--l", "45", "--lmul", "2", "--regime", "rows"], 512),  # D not a multiple of RD
    ("fa-v", ["--model", "pythia-410m", "--n", "70", "--lmul", "1", "--regime", "rows"], 512),
    ("fa-v", ["--model", "pythia-410m", "--phase", "decode", "--l", "300", "--regime", "dot",
              "--block-c", "37"], 512),
    ("fa-v", ["--model", "qwen2.5-3b", "--n", "30", "--regime", "dot"], 128),  # D > VLMAX
    ("fa-v", ["--heads", "14", "--kv-heads", "2", "--head-dim", "64", "--phase", "decode",
              "--l", "130", "--regime", "dot", "--block-c", "29"], 512),  # block-major, 7:1
    ("fa-v", ["--model", "tinyllama-1.1b", "--n", "37", "--regime", "rows", "--transpose",
              "tile", "--strip", "29"], 1024),  # tiles of 4 rows, a partial last tile
    ("fa-v", ["--model", "qwen2.5-3b", "--n", "21", "--regime", "blocked", "--transpose",
              "tile", "--block-c", "13"], 512),  # K^T by tiles of one row (D = 128)
    ("fa-v", ["--model", "pythia-410m", "--phase", "decode", "--l", "90", "--regime",
              "blocked", "--transpose", "tile"], 1024),
    ("fa-v", ["--model", "tinyllama-1.1b", "--phase", "decode", "--l", "200", "--regime",
              "heads"], 512),  # a head spans 4 registers
    ("fa-v", ["--heads", "14", "--kv-heads", "2", "--head-dim", "16", "--phase", "decode",
              "--l", "70", "--regime", "heads"], 1024),  # 2 heads per register, GQA 7:1
    ("fa-v", ["--heads", "10", "--kv-heads", "10", "--head-dim", "8", "--n", "9",
              "--regime", "heads"], 1024),  # 4 heads per register, padded to 12, prefill
    ("fa-v", ["--heads", "14", "--kv-heads", "2", "--head-dim", "32", "--phase", "decode",
              "--l", "301", "--k-cache", "transposed"], 1024),  # K^T kept: 3 blocks of 128
    ("fa-v", ["--model", "pythia-410m", "--n", "19", "--k-cache", "transposed",
              "--block-c", "7"], 512),  # prefill: every key appended in the ROI
]


@pytest.mark.parametrize("kernel,args,vlen", DUMP_CASES)
def test_dump_numpy(tmp_path: Path, kernel: str, args: list[str], vlen: int) -> None:
    check_against_numpy(tmp_path, kernel, args, vlen)


MODELS = ["tinyllama-1.1b", "llama-3.2-1b", "llama-3.2-3b", "qwen2.5-0.5b", "qwen2.5-1.5b",
          "qwen2.5-3b", "pythia-410m"]


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
@pytest.mark.parametrize("phase", [["--n", "6"], ["--phase", "decode", "--l", "21"]],
                         ids=["prefill", "decode"])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kernel", ["ggml-scalar", "ggml-vec", "fa-v"])
def test_every_model_phase_vlen_against_numpy(tmp_path: Path, kernel: str, model: str,
                                              phase: list[str], vlen: int) -> None:
    check_against_numpy(tmp_path, kernel, ["--model", model, *phase], vlen)


def check_against_numpy(tmp_path: Path, kernel: str, args: list[str], vlen: int) -> None:
    res = qemu_run("attention", ["--kernel", kernel, *args, "--dump", str(tmp_path)], vlen=vlen)
    assert res.rc == 0, res.stderr
    rec = res.record
    meta = json.loads((tmp_path / "meta.json").read_text())
    sh = meta["shapes"]

    def load(name: str) -> np.ndarray:
        a = np.fromfile(tmp_path / f"{name}.bin", dtype="<f4")
        assert a.size == int(np.prod(sh[name])), name
        return a.reshape(sh[name]).astype(np.float64)

    q, k, v, o = (load(x) for x in "qkvo")
    assert q.shape == (meta["n_q"], rec["heads"], rec["head_dim"])
    assert meta["causal"] == (rec["phase"] == "prefill")
    assert np.all(np.abs(q) <= 1) and q.std() > 0.3  # uniform in [-1, 1]
    ref = numpy_attention(q, k, v, meta["causal"])
    err = np.abs(o - ref)
    assert np.all(err <= 1e-5 + 1e-4 * np.abs(ref)), float(err.max())
    # the binary's own statistics agree with ours
    assert abs(float(err.max()) - rec["max_abs_err"]) <= 1e-7


@pytest.mark.parametrize("kernel,vlen,extra", [
    ("ggml-scalar", 256, []), ("ggml-vec", 256, []), ("fa-v", 256, []),
    ("fa-v", 1024, ["--lmul", "4", "--regime", "packed"]),
    ("fa-v", 1024, ["--lmul", "4", "--regime", "rows"]),
    ("fa-v", 512, ["--regime", "dot"]),
    ("fa-v", 1024, ["--regime", "rows", "--transpose", "tile"]),
    ("fa-v", 1024, ["--regime", "blocked", "--transpose", "tile"]),
    ("fa-v", 512, ["--regime", "heads"]),
    ("fa-v", 512, ["--k-cache", "transposed"]),
])
def test_perturb_fails(kernel: str, vlen: int, extra: list[str]) -> None:
    res = qemu_run("attention", ["--kernel", kernel, "--model", "pythia-410m", "--n", "8",
                                 "--test-perturb", *extra], vlen=vlen)
    assert res.rc == 1, res.stdout + res.stderr
    rec = res.record
    assert rec["pass"] is False and rec["n_bad"] >= 1 and rec["max_abs_err"] > 1e-2


def test_perturb_scalar_binary() -> None:
    res = qemu_run("attention-scalar", ["--kernel", "ggml-scalar", "--model", "pythia-410m",
                                        "--phase", "decode", "--l", "9", "--test-perturb"])
    assert res.rc == 1 and res.record["pass"] is False


BASE = ["--model", "tinyllama-1.1b", "--n", "4"]
BAD_ARGS = [
    ("attention", ["--kernel", "flash", *BASE], "--kernel"),
    ("attention", ["--kernel", "fa-v", "--model", "gpt-5", "--n", "4"], "--model"),
    ("attention", ["--kernel", "fa-v", "--heads", "6", "--kv-heads", "4", "--head-dim", "16"],
     "--kv-heads"),
    ("attention", ["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--n", "0"], "--n"),
    ("attention", ["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--phase", "decode",
                   "--n", "4"], "--n"),
    ("attention", ["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--l", "4"], "--l"),
    ("attention", ["--kernel", "fa-v", "--model"], "--model"),
    ("attention", ["--kernel", "fa-v", *BASE, "--bogus", "1"], "--bogus"),
    ("attention", ["--kernel", "fa-v", *BASE, "--precision", "fp16", "--regime", "packed"],
     "--regime"),
    ("attention", ["--kernel", "fa-v", *BASE, "--precision", "bf16"], "--precision"),
    ("attention", ["--kernel", "fa-v", *BASE, "--lmul", "3"], "--lmul"),
    ("attention", ["--kernel", "fa-v", *BASE, "--lmul", "8"], "--lmul"),
    ("attention", ["--kernel", "fa-v", *BASE, "--lmul", "4x"], "--lmul"),
    ("attention", ["--kernel", "fa-v", *BASE, "--regime", "tiled"], "--regime"),
    ("attention", ["--kernel", "fa-v", *BASE, "--unroll", "0"], "--unroll"),
    ("attention", ["--kernel", "fa-v", *BASE, "--block-r", "x"], "--block-r"),
    ("attention", ["--kernel", "fa-v", *BASE, "--roi", "gem5"], "--roi"),
    ("attention", ["--kernel", "fa-v", *BASE, "--heads", "4"], "--model"),
    ("attention", ["--kernel", "fa-v", "--heads", "4", "--n", "4"], "--model"),
    ("attention", ["--kernel", "fa-v", *BASE, "--k-cache", "transposed", "--regime", "rows"],
     "--k-cache"),
    ("attention", ["--kernel", "fa-v", *BASE, "--k-cache", "t"], "--k-cache"),
    ("attention-ggml-vec", ["--kernel", "ggml-vec", *BASE, "--k-cache", "transposed"],
     "--k-cache"),
    ("attention", [*BASE], "--kernel"),
    ("attention-scalar", ["--kernel", "fa-v", *BASE], "--kernel"),
    ("attention-scalar", ["--kernel", "ggml-vec", *BASE], "--kernel"),
    ("attention-scalar", ["--kernel", "ggml-scalar", *BASE, "--precision", "fp16"],
     "--precision"),
]


@pytest.mark.parametrize("binary,args,name", BAD_ARGS)
def test_bad_arguments(binary: str, args: list[str], name: str) -> None:
    res = qemu_run(binary, args)
    assert res.rc == 2, res.stdout + res.stderr
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    lines = [ln for ln in lines if not ln.startswith("vector version")]  # qemu's own notice
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], lines


def test_fp16_message_is_clear() -> None:
    """The fp32 family binaries hold no fp16 code (fp16 runs from attention-*-fp16)."""
    res = qemu_run("attention-fa-v", ["--kernel", "fa-v", *BASE, "--precision", "fp16"])
    assert "not supported in this build" in res.stderr


def functions(dis: str) -> dict[str, list[str]]:
    funcs: dict[str, list[str]] = {}
    cur: list[str] = []
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
        elif "\t" in line:
            parts = line.split("\t")  # "addr: bytes", mnemonic, operands
            if len(parts) >= 2:
                cur.append(" ".join(parts[1:]).strip())
    return funcs


VECTOR_INSN = re.compile(r"^(vset|v[a-z0-9]+\.[vxfwims]|vl[0-9]|vs[0-9])")


def test_scalar_binary_has_no_vector_instructions() -> None:
    dis = llvm_objdump("attention-scalar")
    insns = [i for body in functions(dis).values() for i in body]
    assert len(insns) > 1000  # the disassembly really is there
    bad = [i for i in insns if VECTOR_INSN.match(i)]
    assert not bad, bad[:10]
    # and the detector does find them in the vector build
    vec = [i for body in functions(llvm_objdump("attention")).values() for i in body]
    assert any(VECTOR_INSN.match(i) for i in vec)


def test_kernels_avoid_gem5_trouble() -> None:
    """No vsetivli, segment loads/stores, vcompress, indexed or strided access or LMUL=8 in
    the kernel code, but for fa-v's strided-store K^T copy."""
    funcs = functions(llvm_objdump("attention"))
    # what runs inside the ROI: the entry points and the (noinline) fa-v block functions;
    # fav_prepare/fav_release run outside it
    kernels = [f for f in funcs if f in ("attn_fa_v", "attn_ggml_vec", "attn_ggml_scalar",
                                         "fav_transpose_k", "fav_kcache_append")
               or f.startswith(("fav_blk_", "fav_pk_", "fav_rows_", "fav_dot_", "fav_tile_",
                                                                   "fav_heads_"))]
    assert "attn_fa_v" in kernels and "attn_ggml_vec" in kernels
    assert sum(f.startswith("fav_pk_") for f in kernels) == 9  # 3 LMUL x R in {1, 2, 4}
    assert sum(f.startswith("fav_blk_") for f in kernels) == 12  # 3 LMUL x U in {1, 2, 4, 8}
    bad_re = re.compile(r"^(vsetivli|vlseg|vsseg|vlsseg|vssseg|vluxseg|vloxseg|vsuxseg|vsoxseg"
                        r"|vcompress|vlse|vsse|vlux|vlox|vsux|vsox)|\bm8\b")
    # the one exception: fa-v's strided K^T copy (fav_transpose_k, where tiles do not pay;
    # fav_kcache_append, a step's keys into a kept K^T cache) writes key rows into K^T
    # columns with an e32 m8 strided store (no widening op at m8)
    kt_copy = re.compile(r"^vsse32\.v\b|^vsetvli\s+\w+, \w+, e32, m8, ta, ma$")
    # and the rows regime's strip transposes: Q rows into Q^T columns (strided stores),
    # O^T columns back into O rows (strided loads), outside its key loop
    rows_in, rows_out = re.compile(r"^vsse32\.v\b"), re.compile(r"^vlse32\.v\b")
    for f in kernels:
        bad = [i for i in funcs[f] if bad_re.search(i)
               and not (f in ("fav_transpose_k", "fav_kcache_append") and kt_copy.search(i))
               and not (f.startswith("fav_rows_in_") and rows_in.search(i))
               and not (f.startswith("fav_rows_out_") and rows_out.search(i))]
        assert not bad, (f, bad[:5])
    assert sum(f.startswith("fav_rows_blk_") for f in kernels) == 3  # one per LMUL
    assert sum(f.startswith("fav_dot_row_") for f in kernels) == 3
    assert {"fav_tile_fwd", "fav_tile_bwd"} <= set(kernels)  # the tile transposes
    assert {"fav_heads_scores", "fav_heads_softmax", "fav_heads_pv"} <= set(kernels)
    assert sum(i.startswith("vsse32.v") for i in funcs["fav_transpose_k"]) == 1
    assert sum(i.startswith("vsse32.v") for i in funcs["fav_kcache_append"]) == 1
    fav = [i for f in kernels if f.startswith("fav_") for i in funcs[f]]
    for needed in ("vfredusum", "vslideup", "vslidedown", "vrgather", "vfmerge"):
        assert any(i.startswith(needed) for i in fav), needed


def main_listing(binary: str) -> list[tuple[int, str]]:
    """main's instructions as (address, 'mnemonic operands')."""
    out, inside = [], False
    for line in llvm_objdump(binary).splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            inside = m.group(1) == "main"
            continue
        parts = line.split("\t")
        addr = re.match(r"^\s*([0-9a-f]+):", parts[0])
        if inside and addr and len(parts) >= 2:
            out.append((int(addr.group(1), 16), " ".join(parts[1:]).strip()))
    return out


def calls_inside_roi(listing: list[tuple[int, str]]) -> set[str]:
    """Walk main's control flow from each roi_begin call to roi_end; collect the callees."""
    index = {addr: k for k, (addr, _) in enumerate(listing)}
    found: set[str] = set()
    starts = [k + 1 for k, (_, ins) in enumerate(listing) if ins.endswith("<roi_begin>")]
    seen: set[int] = set()
    todo = list(starts)
    while todo:
        k = todo.pop()
        if k in seen or k >= len(listing):
            continue
        seen.add(k)
        ins = listing[k][1]
        mnem = ins.split()[0]
        target = re.search(r"0x([0-9a-f]+) <", ins)
        if ins.endswith("<roi_end>"):
            continue
        if mnem in ("jal", "call") and not re.search(r"<main\+", ins):
            found.add(ins.rsplit("<", 1)[1].rstrip(">"))
            todo.append(k + 1)
        elif mnem in ("j", "jal") and target:
            todo.append(index[int(target.group(1), 16)])
        elif mnem.startswith("b") and target:  # conditional branch
            todo += [index[int(target.group(1), 16)], k + 1]
        elif mnem in ("ret", "jr", "jalr"):
            continue
        else:
            todo.append(k + 1)
    return found


@pytest.mark.parametrize("binary", ["attention", "attention-scalar", "attention-fa-v",
                                    "attention-ggml-vec", "attention-ggml-vec-fp16",
                                    "attention-scalar-fp16", "attention-fa-v-fp16"])
def test_roi_wraps_only_the_kernel(binary: str) -> None:
    """Every path from roi_begin to roi_end in main calls nothing but a kernel."""
    inside = calls_inside_roi(main_listing(binary))
    kernels = {"attn_fa_v", "attn_ggml_vec", "attn_ggml_scalar", "attn_ggml_vec_f16",
               "attn_ggml_scalar_f16", "attn_fa_v_f16"}
    assert inside and inside <= kernels, inside
    assert ("attn_fa_v" in inside) == (binary in ("attention", "attention-fa-v"))
    assert ("attn_fa_v_f16" in inside) == (binary in ("attention", "attention-fa-v-fp16"))
    fp16 = {"attn_ggml_vec_f16", "attn_ggml_scalar_f16", "attn_fa_v_f16"} & inside
    assert bool(fp16) == (binary == "attention" or binary.endswith("-fp16")), inside


def test_roi_m5_emits_m5ops() -> None:
    """m5ops trap outside gem5: --roi m5 must reach one (SIGILL), --roi none must not."""
    args = ["--kernel", "fa-v", "--model", "pythia-410m", "--n", "4"]
    assert qemu_run("attention", [*args, "--roi", "none"]).rc == 0
    assert qemu_run("attention", [*args, "--roi", "m5"]).rc == -4  # SIGILL


def test_reference_file_round_trip_and_refusals(tmp_path: Path) -> None:
    """--make-ref writes the double reference (no kernel run); --ref checks against it, so a
    changed value is caught, and a file for another problem or seed is refused."""
    base = ["--model", "qwen2.5-0.5b", "--n", "9"]
    ref = tmp_path / "a.ref"
    made = qemu_run("attention-scalar", ["--kernel", "ggml-scalar", *base, "--make-ref",
                                         str(ref)])
    assert made.rc == 0 and ref.stat().st_size > 56, made.stderr
    assert made.record["make_ref"] == str(ref) and made.record["count"] == 9 * 14 * 64
    for kernel in ("fa-v", "ggml-vec"):
        res = qemu_run("attention", ["--kernel", kernel, *base, "--ref", str(ref)], 512)
        assert res.rc == 0 and res.record["pass"] is True, res.stderr
    data = bytearray(ref.read_bytes())
    data[56 + 8 * 100 + 7] ^= 0x40  # flip a high bit of one reference value
    bad = tmp_path / "bad.ref"
    bad.write_bytes(bytes(data))
    res = qemu_run("attention", ["--kernel", "fa-v", *base, "--ref", str(bad)], 512)
    assert res.rc == 1 and res.record["pass"] is False
    for args, needle in (([*base, "--seed", "2", "--ref", str(ref)], "another problem"),
                         (["--model", "qwen2.5-0.5b", "--n", "8", "--ref", str(ref)],
                          "another problem"),
                         ([*base, "--ref", str(tmp_path / "none.ref")], "cannot read"),
                         ([*base, "--ref", str(ref), "--make-ref", str(bad)], "one of them")):
        res = qemu_run("attention", ["--kernel", "fa-v", *args], 512)
        lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert res.rc == 2 and len(lines) == 1 and needle in lines[0], res.stderr


# binary, its kernel, its entry point, prefixes of every other family's functions
FAMILIES = [
    ("attention-fa-v", "fa-v", "attn_fa_v", ("attn_ggml_", "ggml_vec_")),
    ("attention-ggml-vec", "ggml-vec", "attn_ggml_vec", ("attn_fa_v", "fav_", "attn_ggml_scalar")),
    ("attention-scalar", "ggml-scalar", "attn_ggml_scalar", ("attn_fa_v", "fav_", "attn_ggml_vec",
                                                             "ggml_vec_")),
]


@pytest.mark.parametrize("binary,kernel,own,foreign", FAMILIES)
def test_family_binaries_hold_one_kernel(binary: str, kernel: str, own: str,
                                         foreign: tuple[str, ...]) -> None:
    """A sweep runs each kernel from its family's binary, whose bytes (and run ids) must not
    depend on another family's code: none of its functions is linked in, and the binary
    refuses the other kernels in one line."""
    funcs = functions(llvm_objdump(binary))
    assert own in funcs
    assert not [f for f in funcs if f.startswith(foreign)]
    ok = qemu_run(binary, ["--kernel", kernel, "--model", "tinyllama-1.1b", "--n", "5"], vlen=512)
    assert ok.rc == 0 and ok.record["pass"] is True
    for other in {"fa-v", "ggml-vec", "ggml-scalar"} - {kernel}:
        r = qemu_run(binary, ["--kernel", other, "--model", "tinyllama-1.1b", "--n", "5"],
                     vlen=512)
        assert r.rc == 2 and f"--kernel: '{other}' is not in this binary ({binary}" in r.stderr
