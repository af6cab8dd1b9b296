"""Attention in fp16 (--precision fp16) under QEMU >= 10 with Zvfh: ggml-scalar, ggml-vec
and fa-v (its rows, blocked, heads and dot regimes; packed refused) on every model and
GQA ratio, both phases, from the all-in-one binary and from their own family binaries;
numpy checks of fp16 dumps; the checker's sensitivity (perturbed output, references of a
wrong head, a wrong key, a missed rescale); arguments; instruction content."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT, VLENS, llvm_objdump, qemu_run, require_zvfh_qemu
from test_attention_check import functions, numpy_attention

from workloads.kernels import kernel

MODELS = sorted(yaml.safe_load((ROOT / "workloads" / "models.yaml").read_text()))
SHAPES_YAML = yaml.safe_load((ROOT / "workloads" / "models.yaml").read_text())
PHASES = {"prefill": ["--n", "12"], "decode": ["--l", "40"]}
KERNELS = ("ggml-scalar", "ggml-vec")
ALL16 = (*KERNELS, "fa-v")  # every kernel with an fp16 binary
FAMILY = {k: kernel(k).binary_for("fp16") for k in ALL16}  # the sweeps' fp16 binaries
FAV16 = FAMILY["fa-v"]
FAV16_REGIMES = ("rows", "blocked", "heads", "dot")  # fa-v's fp16 regimes (packed: refused)
# the fp16 tolerance (src/attention/main.c ATOL_F16 / RTOL_F16; workloads/README.md)
ATOL16, RTOL16 = 2e-3, 1e-3
FP16 = ["--precision", "fp16"]


@pytest.fixture(scope="module", autouse=True)
def qemu_with_zvfh() -> None:
    require_zvfh_qemu("fp16 kernels")


def run16(kernel: str, args: list[str], vlen: int = 512, binary: str = "attention"):
    return qemu_run(binary, ["--kernel", kernel, *FP16, *args], vlen=vlen, zvfh=True)


def check16(kernel: str, args: list[str], vlen: int = 512, binary: str = "attention") -> dict:
    res = run16(kernel, args, vlen, binary)
    assert res.rc == 0, f"rc={res.rc} stdout={res.stdout!r} stderr={res.stderr!r}"
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0 and rec["precision"] == "fp16"
    assert (rec["atol"], rec["rtol"]) == (ATOL16, RTOL16)
    return rec


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_fp16_models(kernel: str, model: str, phase: str, vlen: int) -> None:
    rec = check16(kernel, ["--model", model, "--phase", phase, *PHASES[phase]], vlen)
    assert rec["model"] == model and rec["kernel"] == kernel and rec["phase"] == phase
    assert rec["regime"] == "row" and rec["vlen"] == vlen
    assert rec["lmul"] == (1 if kernel == "ggml-vec" else rec["lmul"])  # ggml's e16 m1 dot
    assert 0 < rec["max_abs_err"]  # fp16 arithmetic does round


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_fp16_family_binaries(kernel: str, model: str, phase: str) -> None:
    """The sweeps' fp16 binaries compute exactly what the all-in-one binary does (the same
    kernel source; the scalar one built for rv64gc)."""
    args = ["--model", model, "--phase", phase, *PHASES[phase]]
    fam = check16(kernel, args, 512, FAMILY[kernel])
    assert fam["vlen"] == (0 if kernel == "ggml-scalar" else 512)
    assert fam["max_abs_err"] == check16(kernel, args, 512)["max_abs_err"]


# (heads, kv_heads, head_dim): GQA 8:1 4:1 3:1 7:1 6:1, MHA, MQA; D not a multiple of any
# VLMAX (20, 40), longer than VLMAX at e16 m1 and VLEN 128 (D = 256)
SHAPES = [(16, 2, 16), (16, 4, 32), (12, 4, 16), (14, 2, 32), (12, 2, 16), (10, 10, 16),
          (5, 1, 8), (6, 3, 20), (4, 2, 40), (4, 1, 256)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "h{}kv{}d{}".format(*s))
@pytest.mark.parametrize("kernel,vlen", [("ggml-scalar", 512), ("ggml-vec", 128),
                                         ("ggml-vec", 512), ("ggml-vec", 1024)])
def test_fp16_gqa_shapes(kernel: str, vlen: int, shape: tuple[int, int, int]) -> None:
    heads, kv_heads, head_dim = shape
    base = ["--heads", str(heads), "--kv-heads", str(kv_heads), "--head-dim", str(head_dim)]
    for extra in (["--n", "11"], ["--phase", "decode", "--l", "37"]):
        check16(kernel, [*base, *extra], vlen)


@pytest.mark.parametrize("kernel", KERNELS)
def test_fp16_longer_sequences(kernel: str) -> None:
    """Many keys per row: the fp16 accumulator takes hundreds to thousands of updates."""
    check16(kernel, ["--model", "tinyllama-1.1b", "--n", "150"], 128)
    check16(kernel, ["--model", "qwen2.5-0.5b", "--phase", "decode", "--l", "2000"], 1024)


@pytest.mark.parametrize("kernel", KERNELS)
def test_fp16_seeds(kernel: str) -> None:
    a = check16(kernel, ["--model", "pythia-410m", "--n", "8", "--seed", "1"])
    b = check16(kernel, ["--model", "pythia-410m", "--n", "8", "--seed", "7"])
    assert a["max_abs_err"] != b["max_abs_err"]


# ---- numpy checks from fp16 dumps ----

def load_dump(d: Path) -> tuple[dict, dict[str, np.ndarray]]:
    meta = json.loads((d / "meta.json").read_text())
    dtype = {"float16": "<f2", "float32": "<f4"}[meta["dtype"]]
    arrays = {}
    for name in "qkvo":
        a = np.fromfile(d / f"{name}.bin", dtype=dtype)
        assert a.size == int(np.prod(meta["shapes"][name])), name
        arrays[name] = a.reshape(meta["shapes"][name])
    return meta, arrays


DUMP_CASES = [
    ("ggml-scalar", ["--model", "qwen2.5-0.5b", "--n", "9"], 512),
    ("ggml-scalar", ["--model", "llama-3.2-3b", "--phase", "decode", "--l", "33"], 512),
    ("ggml-scalar", ["--heads", "14", "--kv-heads", "2", "--head-dim", "20", "--n", "30"], 512),
    ("ggml-vec", ["--model", "tinyllama-1.1b", "--n", "10"], 128),
    ("ggml-vec", ["--model", "qwen2.5-3b", "--phase", "decode", "--l", "300"], 1024),
    ("ggml-vec", ["--heads", "6", "--kv-heads", "3", "--head-dim", "20", "--n", "7"], 512),
    ("ggml-vec", ["--model", "pythia-410m", "--n", "70"], 256),
    ("fa-v", ["--model", "tinyllama-1.1b", "--n", "40"], 512),
    ("fa-v", ["--model", "qwen2.5-3b", "--phase", "decode", "--l", "300"], 1024),
    ("fa-v", ["--model", "pythia-410m", "--phase", "decode", "--l", "130"], 1024),
    ("fa-v", ["--heads", "6", "--kv-heads", "3", "--head-dim", "20", "--n", "7",
              "--regime", "blocked"], 512),
]


@pytest.mark.parametrize("kernel,args,vlen", DUMP_CASES)
def test_fp16_dump_numpy(tmp_path: Path, kernel: str, args: list[str], vlen: int) -> None:
    """Dumps are raw binary16; numpy (float64, written independently of the C reference)
    agrees within the fp16 tolerance, and with the binary's own error statistics; the inputs
    are the fp32 run's inputs (same seed) rounded to fp16."""
    res = run16(kernel, [*args, "--dump", str(tmp_path / "h")], vlen)
    assert res.rc == 0, res.stderr
    rec = res.record
    meta, a = load_dump(tmp_path / "h")
    assert meta["dtype"] == "float16" and meta["kernel"] == kernel
    q, k, v, o = (a[x].astype(np.float64) for x in "qkvo")
    assert q.shape == (meta["n_q"], rec["heads"], rec["head_dim"])
    assert meta["causal"] == (rec["phase"] == "prefill")
    ref = numpy_attention(q, k, v, meta["causal"])
    err = np.abs(o - ref)
    assert np.all(err <= ATOL16 + RTOL16 * np.abs(ref)), float(err.max())
    assert abs(float(err.max()) - rec["max_abs_err"]) <= 1e-7
    f32 = qemu_run("attention", ["--kernel", kernel, *args, "--dump", str(tmp_path / "s")],
                   vlen=vlen)
    assert f32.rc == 0, f32.stderr
    meta32, a32 = load_dump(tmp_path / "s")
    assert meta32["dtype"] == "float32"
    for x in "qkv":  # numpy's float16 cast rounds to nearest even, as the harness must
        assert np.array_equal(a32[x].astype(np.float16).view(np.uint16), a[x].view(np.uint16))


# ---- the checker's sensitivity ----

@pytest.mark.parametrize("kernel,regime", [(k, None) for k in KERNELS] +
                         [("fa-v", r) for r in ("auto", *FAV16_REGIMES)])
@pytest.mark.parametrize("binary", ["attention", "family"])
def test_fp16_perturb_fails(kernel: str, regime: str | None, binary: str) -> None:
    b = FAMILY[kernel] if binary == "family" else "attention"
    extra = ["--regime", regime] if regime else []
    res = run16(kernel, ["--model", "pythia-410m", "--n", "8", "--test-perturb", *extra], 512, b)
    assert res.rc == 1, res.stdout + res.stderr
    rec = res.record
    assert rec["pass"] is False and rec["n_bad"] >= 1 and rec["max_abs_err"] > 0.1


def online_softmax_no_rescale(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                              causal: bool) -> np.ndarray:
    """ggml's row algorithm in float64 with one bug: a new maximum rescales the sum S but
    not the accumulator."""
    n_q, heads, d = q.shape
    n_kv, kv_heads, _ = k.shape
    group = heads // kv_heads
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("ihd,jhd->ihj", q, kk) / np.sqrt(d)
    m = np.full((n_q, heads), -np.inf)
    tot = np.zeros((n_q, heads))
    acc = np.zeros((n_q, heads, d))
    for j in range(n_kv):
        visible = (np.arange(n_q) + n_kv - n_q >= j) if causal else np.ones(n_q, bool)
        sj = np.where(visible[:, None], s[:, :, j], -np.inf)
        new = sj > m
        ms = np.where(new, np.exp(np.where(new, m - sj, 0.0)), 1.0)
        vs = np.where(new, 1.0, np.exp(np.where(visible[:, None], sj - m, -np.inf)))
        m = np.where(new, sj, m)
        acc += vs[..., None] * vv[j][None]  # the bug: acc is not multiplied by ms
        tot = tot * ms + vs
    return acc / tot[..., None]


def bugged(kind: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    if kind == "wrong-kv-head":  # every query head reads the next kv head's K and V
        return numpy_attention(q, np.roll(k, -1, axis=1), np.roll(v, -1, axis=1), causal)
    if kind == "wrong-q-head":  # head h's output computed from head h+1's query
        return numpy_attention(np.roll(q, -1, axis=1), k, v, causal)
    if kind == "dropped-key":  # each row misses its last visible key (causal off by one)
        n_q, n_kv = q.shape[0], k.shape[0]
        ref = np.empty_like(q)
        for i in range(n_q):
            end = i + 1 + n_kv - n_q if causal else n_kv
            end = max(end - 1, 1)
            ref[i] = numpy_attention(q[i:i + 1], k[:end], v[:end], False)[0]
        return ref
    if kind == "no-rescale":
        return online_softmax_no_rescale(q, k, v, causal)
    raise ValueError(kind)


BUG_CASES = [  # (kernel, args, vlen): bugs must be caught at these lengths
    ("ggml-scalar", ["--model", "tinyllama-1.1b", "--n", "12"], 512),
    ("ggml-scalar", ["--model", "pythia-410m", "--phase", "decode", "--l", "40"], 512),
    ("ggml-vec", ["--model", "qwen2.5-3b", "--n", "64"], 512),
    ("ggml-vec", ["--model", "llama-3.2-1b", "--phase", "decode", "--l", "256"], 1024),
    ("ggml-vec", ["--heads", "5", "--kv-heads", "1", "--head-dim", "8", "--n", "20"], 128),
    ("fa-v", ["--model", "tinyllama-1.1b", "--n", "64"], 512),  # rows
    ("fa-v", ["--model", "llama-3.2-1b", "--phase", "decode", "--l", "256"], 1024),  # blocked
    ("fa-v", ["--model", "pythia-410m", "--phase", "decode", "--l", "256"], 1024),  # heads
    ("fa-v", ["--model", "qwen2.5-3b", "--phase", "decode", "--l", "256", "--regime", "dot"],
     256),
]


@pytest.mark.parametrize("bug", ["wrong-kv-head", "wrong-q-head", "dropped-key", "no-rescale"])
@pytest.mark.parametrize("kernel,args,vlen", BUG_CASES)
def test_fp16_tolerance_catches_bugs(tmp_path: Path, kernel: str, args: list[str], vlen: int,
                                     bug: str) -> None:
    """The fp16 check, fed the reference of a wrong computation (--ref), fails a correct
    kernel: what a kernel with that bug would see against the right reference. The bugged
    output must also differ from the right one by more than twice the tolerance."""
    res = run16(kernel, [*args, "--dump", str(tmp_path / "d")], vlen)
    assert res.rc == 0, res.stderr
    meta, a = load_dump(tmp_path / "d")
    q, k, v = (a[x].astype(np.float64) for x in "qkv")
    if bug == "wrong-kv-head" and k.shape[1] == 1:
        pytest.skip("MQA: a single kv head")
    ref = numpy_attention(q, k, v, meta["causal"])
    bad = bugged(bug, q, k, v, meta["causal"])
    assert float(np.max(np.abs(bad - ref) - RTOL16 * np.abs(ref))) > 2 * ATOL16
    good = tmp_path / "good.ref"
    made = qemu_run(FAMILY["ggml-scalar"], ["--kernel", "ggml-scalar", *FP16, *args,
                                            "--make-ref", str(good)])
    assert made.rc == 0, made.stderr
    header = good.read_bytes()[:56]
    assert np.allclose(np.frombuffer(good.read_bytes()[56:], "<f8"), ref.ravel(), atol=1e-12)
    bad_ref = tmp_path / "bad.ref"
    bad_ref.write_bytes(header + bad.astype("<f8").tobytes())
    assert run16(kernel, [*args, "--ref", str(good)], vlen).rc == 0
    res = run16(kernel, [*args, "--ref", str(bad_ref)], vlen)
    assert res.rc == 1 and res.record["pass"] is False and res.record["n_bad"] > 0


def test_fp16_reference_files(tmp_path: Path) -> None:
    """Sweeps make fp16 references with attention-scalar-fp16 --make-ref; an fp32 reference
    of the same problem and seed is refused (its inputs are not the fp16-rounded ones)."""
    base = ["--model", "qwen2.5-0.5b", "--n", "9"]
    r16, r32 = tmp_path / "a16.ref", tmp_path / "a32.ref"
    made = qemu_run("attention-scalar-fp16", ["--kernel", "ggml-scalar", *FP16, *base,
                                              "--make-ref", str(r16)])
    assert made.rc == 0 and made.record["count"] == 9 * 14 * 64, made.stderr
    assert qemu_run("attention-scalar", ["--kernel", "ggml-scalar", *base, "--make-ref",
                                         str(r32)]).rc == 0
    assert check16("ggml-vec", [*base, "--ref", str(r16)], 512, FAMILY["ggml-vec"])
    res = run16("ggml-vec", [*base, "--ref", str(r32)])
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.rc == 2 and len(lines) == 1 and "another problem or inputs" in lines[0]


# ---- arguments ----

BASE = ["--model", "tinyllama-1.1b", "--n", "4"]
BAD_ARGS = [
    # fa-v's regime without an fp16 version is refused, never run as another regime
    ("attention", ["--kernel", "fa-v", *BASE, *FP16, "--regime", "packed"], "--regime",
     "packed is not implemented for fa-v in fp16"),
    ("attention-fa-v-fp16", ["--kernel", "fa-v", *BASE, "--regime", "packed"], "--regime",
     "packed is not implemented for fa-v in fp16"),
    ("attention-fa-v-fp16", ["--kernel", "fa-v", *BASE, "--lmul", "4"], "--lmul",
     "only auto, 1 or 2"),
    # e16 m2 is the rows regime's only: refused where auto (decode) or the user picks another
    ("attention-fa-v-fp16", ["--kernel", "fa-v", "--model", "tinyllama-1.1b", "--phase",
                             "decode", "--l", "20", "--lmul", "2"], "--lmul",
     "the blocked regime runs e16 m1"),
    ("attention-fa-v-fp16", ["--kernel", "fa-v", *BASE, "--regime", "dot", "--lmul", "2"],
     "--lmul", "the dot regime runs e16 m1"),
    ("attention-fa-v-fp16", ["--kernel", "fa-v", *BASE, "--precision", "fp32"],
     "--precision", "fp32 is not in this binary"),
    ("attention-fa-v-fp16", ["--kernel", "ggml-vec", *BASE], "--kernel", "not in this binary"),
    ("attention-ggml-vec-fp16", ["--kernel", "ggml-vec", *BASE, "--precision", "fp32"],
     "--precision", "fp32 is not in this binary"),
    ("attention-scalar-fp16", ["--kernel", "ggml-scalar", *BASE, "--precision", "fp32"],
     "--precision", "fp32 is not in this binary"),
    ("attention-ggml-vec-fp16", ["--kernel", "fa-v", *BASE], "--kernel", "not in this binary"),
    ("attention-ggml-vec-fp16", ["--kernel", "ggml-scalar", *BASE], "--kernel",
     "not in this binary"),
    ("attention-scalar-fp16", ["--kernel", "ggml-vec", *BASE], "--kernel", "not in this binary"),
    ("attention", ["--kernel", "ggml-vec", *BASE, *FP16, "--lmul", "2"], "--lmul", "only auto"),
    ("attention", ["--kernel", "ggml-vec", *BASE, "--precision", "fp8"], "--precision",
     "unknown value"),
    # the fp32 family binaries hold no fp16 code
    ("attention-scalar", ["--kernel", "ggml-scalar", *BASE, *FP16], "--precision",
     "not supported in this build"),
    ("attention-ggml-vec", ["--kernel", "ggml-vec", *BASE, *FP16], "--precision",
     "not supported in this build"),
    ("attention-fa-v", ["--kernel", "fa-v", *BASE, *FP16], "--precision",
     "not supported in this build"),
]


@pytest.mark.parametrize("binary,args,name,needle", BAD_ARGS)
def test_fp16_bad_arguments(binary: str, args: list[str], name: str, needle: str) -> None:
    res = qemu_run(binary, args, vlen=512, zvfh=True)
    assert res.rc == 2, res.stdout + res.stderr
    assert res.stdout == ""
    lines = [ln for ln in res.stderr.strip().splitlines() if not ln.startswith("vector version")]
    assert len(lines) == 1 and lines[0].startswith(f"error: {name}") and needle in lines[0], lines


def test_fp16_family_default_precision() -> None:
    """An fp16 family binary runs fp16 when --precision is not given."""
    for name, binary in FAMILY.items():
        res = qemu_run(binary, ["--kernel", name, *BASE], vlen=512, zvfh=True)
        assert res.rc == 0 and res.record["precision"] == "fp16", res.stderr


# ---- instruction content ----

ZFH_INSN = re.compile(r"^(flh|fsh|fcvt\.[a-z]+\.h|fcvt\.h\.|fmv\.x\.h|fmv\.h\.x|f[a-z]+\.h)\b")
VECTOR_INSN = re.compile(r"^(vset|v[a-z0-9]+\.[vxfwims]|vl[0-9]|vs[0-9])")


def test_fp16_vector_kernel_needs_zvfh() -> None:
    """The ggml-vec fp16 kernel really runs half-precision vector instructions: without
    zvfh=true QEMU stops it with an illegal instruction."""
    args = ["--kernel", "ggml-vec", *BASE]
    assert qemu_run("attention-ggml-vec-fp16", args, vlen=512, zvfh=True).rc == 0
    assert qemu_run("attention-ggml-vec-fp16", args, vlen=512).rc == -4  # SIGILL


def test_fp16_scalar_binary_is_scalar() -> None:
    """attention-scalar-fp16 (rv64gc): no vector and no half-precision instruction at all;
    the kernel reads fp16 through its conversion table and rounds with fp32 adds."""
    funcs = functions(llvm_objdump("attention-scalar-fp16", "--mattr=+zfh"))
    insns = [i for body in funcs.values() for i in body]
    assert len(insns) > 1000 and "attn_ggml_scalar_f16" in funcs
    assert not [i for i in insns if VECTOR_INSN.match(i) or ZFH_INSN.match(i)]
    kernel = funcs["attn_ggml_scalar_f16"]
    assert any(i.startswith("fadd.d") for i in kernel)  # the dot sums in double, as ggml's


def test_fp16_vector_kernel_instructions() -> None:
    """ggml-vec fp16 uses what ggml's Zvfh helpers use (widening fp16 multiply-add into
    fp32, fp16 multiply and multiply-add by a scalar, fp32 -> fp16 narrowing, a scalar
    fp16 -> fp32 conversion), and nothing gem5 24.0 is known to handle badly."""
    funcs = functions(llvm_objdump("attention-ggml-vec-fp16", "--mattr=+zvfh"))
    kernel = funcs["attn_ggml_vec_f16"]
    for needed in ("vfwmacc.vv", "vfncvt.f.f.w", "vfmul.vf", "vfredusum.vs", "fcvt.h.s",
                   "fcvt.s.h"):
        assert any(i.startswith(needed) for i in kernel), needed
    assert any(re.match(r"vf(macc|madd)\.vf", i) for i in kernel)
    assert any(re.search(r"e16, m4", i) for i in kernel) and any("e16, m1" in i for i in kernel)
    bad = re.compile(r"^(vsetivli|vlseg|vsseg|vlsseg|vssseg|vluxseg|vloxseg|vsuxseg|vsoxseg"
                     r"|vcompress|vlse|vsse|vlux|vlox|vsux|vsox)|\bm8\b")
    assert not [i for i in kernel if bad.search(i)]


FP16_FUNCS = ("attn_ggml_vec_f16", "attn_ggml_scalar_f16", "attn_fa_v_f16")


@pytest.mark.parametrize("binary", ["attention-fa-v", "attention-ggml-vec", "attention-scalar"])
def test_fp32_families_hold_no_fp16(binary: str) -> None:
    """A change to fp16 code must not change an fp32 family binary (its runs' ids): none of
    the fp16 kernels, and no half-precision instruction, is in them."""
    funcs = functions(llvm_objdump(binary, "--mattr=+zvfh"))
    assert not [f for f in funcs if f in FP16_FUNCS]
    insns = [i for body in funcs.values() for i in body]
    assert not [i for i in insns if ZFH_INSN.match(i) or re.search(r"vfwmacc|vfncvt", i)]


@pytest.mark.parametrize("binary,own", [("attention-ggml-vec-fp16", "attn_ggml_vec_f16"),
                                        ("attention-scalar-fp16", "attn_ggml_scalar_f16"),
                                        ("attention-fa-v-fp16", "attn_fa_v_f16")])
def test_fp16_families_hold_one_kernel(binary: str, own: str) -> None:
    funcs = functions(llvm_objdump(binary, "--mattr=+zvfh"))
    assert own in funcs
    others = ("attn_fa_v", "fav_", "attn_ggml_vec", "attn_ggml_scalar")
    assert not [f for f in funcs if f.startswith(others) and f != own]
