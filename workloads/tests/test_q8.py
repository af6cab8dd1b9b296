"""Q8_0 GEMV workload (workloads/src/q8): self-check across kernels, models and VLENs,
an independent numpy recomputation from --dump, kernel agreement, error paths and the
instruction mix of the binaries."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT, VLENS, llvm_objdump, qemu_run

VECTOR_KERNELS = ("q8-ggml", "q8-packed", "q8-split")
KERNELS = ("q8-scalar", *VECTOR_KERNELS)
PROJS = ("q", "k", "v", "o", "gate", "up", "down")
MODELS: dict[str, dict[str, int]] = yaml.safe_load(
    (ROOT / "workloads" / "models.yaml").read_text()
)
BLOCK = np.dtype([("d", "<u2"), ("qs", "i1", (32,))])  # ggml's block_q8_0, 34 bytes


def proj_shape(model: str, proj: str) -> tuple[int, int]:
    m = MODELS[model]
    qd, kvd = m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
    h, inter = m["hidden"], m["intermediate"]
    return {
        "q": (qd, h), "k": (kvd, h), "v": (kvd, h), "o": (h, qd),
        "gate": (inter, h), "up": (inter, h), "down": (h, inter),
    }[proj]


def run_ok(binary: str, args: list[str], vlen: int) -> dict:
    res = qemu_run(binary, args, vlen=vlen)
    assert res.rc == 0, f"rc={res.rc} {res.stdout} {res.stderr}"
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0, rec
    return rec


def check_tunables(rec: dict, vlen: int) -> None:
    assert rec["vlen"] == vlen
    if rec["kernel"] == "q8-packed":
        assert rec["blocks_per_reg"] == vlen // 4 // 32  # VLMAX(e8m2) / 32
    if rec["kernel"] == "q8-split":
        assert rec["tile_rows"] == vlen // 8  # VLMAX(e8m1)
    if rec["kernel"] == "q8-ggml":
        assert rec["block_vl"] == 32


# Each model gets a different projection (all seven are covered) and a row cap that is
# not a multiple of the split tile at most VLENs.
MODEL_CASES = [
    (model, PROJS[i % len(PROJS)], (17, 40, 64, 23, 50, 33, 61)[i % 7])
    for i, model in enumerate(sorted(MODELS))
]


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("kernel", VECTOR_KERNELS)
@pytest.mark.parametrize(("model", "proj", "max_rows"), MODEL_CASES)
def test_models_vector(kernel: str, vlen: int, model: str, proj: str, max_rows: int) -> None:
    rows, cols = proj_shape(model, proj)
    rec = run_ok("q8", ["--kernel", kernel, "--model", model, "--proj", proj,
                        "--max-rows", str(max_rows)], vlen)
    assert (rec["kernel"], rec["model"], rec["proj"]) == (kernel, model, proj)
    assert rec["rows"] == min(rows, max_rows) and rec["cols"] == cols
    assert rec["workload"] == "q8" and rec["seed"] == 1
    check_tunables(rec, vlen)


@pytest.mark.parametrize(("model", "proj", "max_rows"), MODEL_CASES)
def test_models_scalar_binary(model: str, proj: str, max_rows: int) -> None:
    rows, cols = proj_shape(model, proj)
    rec = run_ok("q8-scalar", ["--kernel", "q8-scalar", "--model", model, "--proj", proj,
                               "--max-rows", str(max_rows)], 128)
    assert rec["vlen"] == 0  # rv64gc build: no vector unit used
    assert rec["rows"] == min(rows, max_rows) and rec["cols"] == cols


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("kernel", KERNELS)
def test_full_projection(kernel: str, vlen: int) -> None:
    rec = run_ok("q8", ["--kernel", kernel, "--model", "qwen2.5-0.5b", "--proj", "k"], vlen)
    assert (rec["rows"], rec["cols"]) == (128, 896)
    check_tunables(rec, vlen)


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(("rows", "cols"), [(1, 32), (5, 32), (300, 96), (129, 288)])
def test_odd_shapes(kernel: str, vlen: int, rows: int, cols: int) -> None:
    """One block, rows below / above / not a multiple of the split tile, and block counts
    that are not a multiple of the packed kernel's blocks per register."""
    rec = run_ok("q8", ["--kernel", kernel, "--rows", str(rows), "--cols", str(cols)], vlen)
    assert (rec["rows"], rec["cols"]) == (rows, cols)
    assert (rec["model"], rec["proj"]) == ("custom", "custom")
    check_tunables(rec, vlen)


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("kernel", KERNELS)
def test_fp16_table(kernel: str, vlen: int, tmp_path: Path) -> None:
    """--fp16 table (ggml's lookup-table decode) gives bit-identical y to the default
    bit-manipulation decode."""
    args = ["--kernel", kernel, "--model", "llama-3.2-3b", "--proj", "gate",
            "--max-rows", "37"]
    rec = run_ok("q8", [*args, "--fp16", "table", "--dump", str(tmp_path / "t")], vlen)
    assert rec["fp16"] == "table"
    rec = run_ok("q8", [*args, "--dump", str(tmp_path / "b")], vlen)
    assert rec["fp16"] == "bits"
    yt = np.fromfile(tmp_path / "t" / "y.bin", dtype="<f4")
    yb = np.fromfile(tmp_path / "b" / "y.bin", dtype="<f4")
    np.testing.assert_array_equal(yt, yb)


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize(("rows", "cols"), [(300, 96), (61, 2048), (1, 32)])
def test_split_mac_sext(vlen: int, rows: int, cols: int, tmp_path: Path) -> None:
    """--split-mac sext forms the same int32 sums, so y is bit-identical to pair."""
    args = ["--kernel", "q8-split", "--rows", str(rows), "--cols", str(cols), "--seed", "5"]
    rec = run_ok("q8", [*args, "--split-mac", "sext", "--dump", str(tmp_path / "s")], vlen)
    assert rec["split_mac"] == "sext" and rec["tile_rows"] == vlen // 8
    rec = run_ok("q8", [*args, "--dump", str(tmp_path / "p")], vlen)
    assert rec["split_mac"] == "pair"
    ys = np.fromfile(tmp_path / "s" / "y.bin", dtype="<f4")
    yp = np.fromfile(tmp_path / "p" / "y.bin", dtype="<f4")
    np.testing.assert_array_equal(ys, yp)


@pytest.mark.parametrize("vlen", VLENS)
def test_packed_pack_x_once(vlen: int) -> None:
    rec = run_ok("q8", ["--kernel", "q8-packed", "--pack-x", "once", "--model",
                        "tinyllama-1.1b", "--proj", "down", "--max-rows", "9"], vlen)
    assert rec["pack_x"] == "once"


# ---------------------------------------------------------------- independent check

def load_dump(d: Path) -> dict:
    meta = json.loads((d / "meta.json").read_text())
    rows, cols = meta["rows"], meta["cols"]
    nb = cols // 32
    assert meta["block_bytes"] == BLOCK.itemsize == 34
    x = np.fromfile(d / "x.bin", dtype="<f4")
    xq = np.fromfile(d / "xq.bin", dtype=BLOCK)
    w = np.fromfile(d / "w.bin", dtype=BLOCK)
    y = np.fromfile(d / "y.bin", dtype="<f4")
    assert x.shape == (cols,) and xq.shape == (nb,) and w.shape == (rows * nb,)
    assert y.shape == (rows,)
    return {"meta": meta, "x": x, "xq": xq, "w": w.reshape(rows, nb), "y": y}


def numpy_quantize_q8_0(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ggml's quantize_row_q8_0 reference in numpy: d = amax/127 (fp32), q = roundf(x/d)
    computed as x * (1/d) in fp32, round half away from zero; d stored as fp16 bits."""
    xb = x.reshape(-1, 32).astype(np.float32)
    amax = np.abs(xb).max(axis=1)
    d = amax / np.float32(127.0)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    x0 = (xb * inv[:, None]).astype(np.float32)
    x64 = x0.astype(np.float64)  # exact; + 0.5 stays exact in float64
    q = (np.sign(x64) * np.floor(np.abs(x64) + 0.5)).astype(np.int8)
    return d.astype(np.float16).view(np.uint16), q


def numpy_gemv(w: np.ndarray, xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y = sum_b fp32(d_w)*fp32(d_x) * (int32 block dot), accumulated in float64.
    Returns y and the per-row sum of |terms| (the scale of fp32 rounding)."""
    dw = w["d"].view(np.float16).astype(np.float32)
    dx = xq["d"].view(np.float16).astype(np.float32)
    prod = (dw * dx[None, :]).astype(np.float32)
    sumi = np.einsum("rbj,bj->rb", w["qs"].astype(np.int64), xq["qs"].astype(np.int64))
    terms = sumi.astype(np.float64) * prod.astype(np.float64)
    return terms.sum(axis=1), np.abs(terms).sum(axis=1)


def tolerance(abssum: np.ndarray, nb: int) -> np.ndarray:
    return 2.0 * (nb + 2) * 2.0**-24 * abssum + 1e-30


@pytest.mark.parametrize(("kernel", "vlen"), [("q8-scalar", 128), ("q8-ggml", 256),
                                              ("q8-packed", 512), ("q8-split", 1024),
                                              ("q8-split", 128)])
def test_dump_numpy(kernel: str, vlen: int, tmp_path: Path) -> None:
    rec = run_ok("q8", ["--kernel", kernel, "--model", "llama-3.2-1b", "--proj", "o",
                        "--max-rows", "45", "--seed", "7", "--dump", str(tmp_path)], vlen)
    dump = load_dump(tmp_path)
    assert dump["meta"]["rows"] == rec["rows"] == 45
    assert dump["meta"]["cols"] == rec["cols"] == 2048

    # the dumped activations are quantised exactly as ggml does
    d_bits, q = numpy_quantize_q8_0(dump["x"])
    np.testing.assert_array_equal(dump["xq"]["d"], d_bits)
    np.testing.assert_array_equal(dump["xq"]["qs"], q)
    assert (d_bits == 0).any() and (d_bits != 0).any()  # zero blocks are exercised too
    assert ((d_bits & 0x7C00) == 0).sum() > (d_bits == 0).sum()  # and fp16 subnormals

    # weights: int8 in ggml's range, plausible positive fp16 scales
    w = dump["w"]
    assert w["qs"].min() >= -127 and w["qs"].max() <= 127
    dw = w["d"].view(np.float16).astype(np.float32)
    assert (dw >= 9e-5).all() and (dw <= 5.1e-3).all()

    yref, abssum = numpy_gemv(w, dump["xq"])
    nb = 2048 // 32
    err = np.abs(dump["y"].astype(np.float64) - yref)
    assert (err <= tolerance(abssum, nb)).all(), err.max()
    assert np.abs(yref).max() > 1e-3  # a non-trivial result

    # and the quantised GEMV is close to the exact product of dequantised W with fp32 x
    wdeq = w["qs"].astype(np.float64) * dw.astype(np.float64)[..., None]
    yexact = wdeq.reshape(45, -1) @ dump["x"].astype(np.float64)
    assert np.abs(yexact - yref).max() < 0.02 * np.abs(yexact).max()


Q8_MODEL_PROJ = [("tinyllama-1.1b", "k"), ("llama-3.2-1b", "o"), ("llama-3.2-3b", "q"),
                 ("qwen2.5-0.5b", "gate"), ("qwen2.5-1.5b", "v"), ("qwen2.5-3b", "up"),
                 ("pythia-410m", "down")]


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
@pytest.mark.parametrize(("model", "proj"), Q8_MODEL_PROJ)
@pytest.mark.parametrize("kernel", KERNELS)
def test_every_model_vlen_against_numpy(kernel: str, model: str, proj: str, vlen: int,
                                        tmp_path: Path) -> None:
    binary = "q8-scalar" if kernel == "q8-scalar" else "q8"
    rec = run_ok(binary, ["--kernel", kernel, "--model", model, "--proj", proj,
                          "--max-rows", "19", "--dump", str(tmp_path)], vlen)
    dump = load_dump(tmp_path)
    d_bits, q = numpy_quantize_q8_0(dump["x"])
    np.testing.assert_array_equal(dump["xq"]["d"], d_bits)
    np.testing.assert_array_equal(dump["xq"]["qs"], q)
    yref, abssum = numpy_gemv(dump["w"], dump["xq"])
    err = np.abs(dump["y"].astype(np.float64) - yref)
    assert (err <= tolerance(abssum, rec["cols"] // 32)).all(), err.max()


@pytest.mark.parametrize("vlen", (256, 1024))
def test_kernels_agree(vlen: int, tmp_path: Path) -> None:
    ys = {}
    for kernel in KERNELS:
        d = tmp_path / kernel
        run_ok("q8", ["--kernel", kernel, "--rows", "70", "--cols", "1536", "--seed", "3",
                      "--dump", str(d)], vlen)
        ys[kernel] = load_dump(d)
    base = ys["q8-scalar"]
    _, abssum = numpy_gemv(base["w"], base["xq"])
    tol = tolerance(abssum, 1536 // 32)
    for kernel, dump in ys.items():
        # same inputs whatever the kernel
        np.testing.assert_array_equal(dump["w"], base["w"])
        np.testing.assert_array_equal(dump["xq"], base["xq"])
        diff = np.abs(dump["y"].astype(np.float64) - base["y"].astype(np.float64))
        assert (diff <= 2 * tol).all(), (kernel, diff.max())
    assert np.abs(base["y"]).max() > 1e-3


def test_seed_changes_inputs_and_rows_are_a_prefix(tmp_path: Path) -> None:
    run_ok("q8", ["--kernel", "q8-split", "--rows", "40", "--cols", "64", "--seed", "1",
                  "--dump", str(tmp_path / "a")], 256)
    run_ok("q8", ["--kernel", "q8-split", "--rows", "40", "--cols", "64", "--seed", "2",
                  "--dump", str(tmp_path / "b")], 256)
    run_ok("q8", ["--kernel", "q8-ggml", "--rows", "40", "--cols", "64", "--seed", "1",
                  "--max-rows", "10", "--dump", str(tmp_path / "c")], 128)
    a, b, c = (load_dump(tmp_path / n) for n in "abc")
    assert not np.array_equal(a["x"], b["x"])
    np.testing.assert_array_equal(c["w"], a["w"][:10])
    np.testing.assert_array_equal(c["x"], a["x"])


# ------------------------------------------------------------------- failure paths

@pytest.mark.parametrize("kernel", KERNELS)
def test_perturb_is_caught(kernel: str) -> None:
    res = qemu_run("q8", ["--kernel", kernel, "--model", "pythia-410m", "--proj", "k",
                          "--max-rows", "20", "--test-perturb"], vlen=512)
    assert res.rc == 1, res.stderr
    rec = res.record
    assert rec["pass"] is False and rec["n_bad"] >= 1


def test_perturb_is_caught_scalar_binary() -> None:
    res = qemu_run("q8-scalar", ["--kernel", "q8-scalar", "--rows", "3", "--cols", "32",
                                 "--test-perturb"])
    assert res.rc == 1 and res.record["pass"] is False


BAD_ARGS = [
    ("q8", ["--kernel", "q8-nope", "--rows", "4", "--cols", "32"], "--kernel"),
    ("q8", ["--rows", "4", "--cols", "32"], "--kernel"),
    ("q8", ["--kernel", "q8-ggml", "--model", "gpt-9", "--proj", "q"], "--model"),
    ("q8", ["--kernel", "q8-ggml", "--model", "llama-3.2-1b", "--proj", "qkv"], "--proj"),
    ("q8", ["--kernel", "q8-ggml", "--model", "llama-3.2-1b"], "--proj"),
    ("q8", ["--kernel", "q8-ggml", "--rows", "4", "--cols", "33"], "--cols"),
    ("q8", ["--kernel", "q8-ggml", "--rows", "0", "--cols", "32"], "--rows"),
    ("q8", ["--kernel", "q8-ggml", "--rows", "x", "--cols", "32"], "--rows"),
    ("q8", ["--kernel", "q8-ggml"], "--model"),
    ("q8", ["--kernel", "q8-ggml", "--rows", "4", "--cols", "32", "--bogus"], "--bogus"),
    ("q8", ["--kernel", "q8-ggml", "--rows", "4", "--cols", "32", "--max-rows", "0"],
     "--max-rows"),
    ("q8", ["--kernel", "q8-split", "--rows", "4", "--cols", "32", "--pack-x", "once"],
     "--pack-x"),
    ("q8", ["--kernel", "q8-packed", "--rows", "4", "--cols", "32", "--pack-x", "twice"],
     "--pack-x"),
    ("q8", ["--kernel", "q8-split", "--rows", "4", "--cols", "32", "--roi", "gem5"], "--roi"),
    ("q8", ["--kernel", "q8-split", "--rows", "4", "--cols", "32", "--fp16", "zfh"], "--fp16"),
    ("q8", ["--kernel", "q8-ggml", "--rows", "4", "--cols", "32", "--split-mac", "sext"],
     "--split-mac"),
    ("q8", ["--kernel", "q8-split", "--rows", "4", "--cols", "32", "--split-mac", "quad"],
     "--split-mac"),
    ("q8", ["--kernel", "q8-split", "--model", "llama-3.2-1b", "--proj", "q", "--rows", "4"],
     "--rows"),
    ("q8", ["--kernel", "q8-split", "--rows", "4", "--cols", "32", "--proj", "q"], "--proj"),
    ("q8-scalar", ["--kernel", "q8-split", "--rows", "4", "--cols", "32"], "--kernel"),
    ("q8-scalar", ["--kernel", "q8-ggml", "--rows", "4", "--cols", "32"], "--kernel"),
]


@pytest.mark.parametrize(("binary", "args", "name"), BAD_ARGS)
def test_bad_arguments(binary: str, args: list[str], name: str) -> None:
    res = qemu_run(binary, args, vlen=256)
    assert res.rc == 2, (res.rc, res.stdout, res.stderr)
    assert res.stdout == ""
    lines = [ln for ln in res.stderr.splitlines() if not ln.startswith("vector version")]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ") and name in lines[0], lines[0]


# ------------------------------------------------------------------ instruction mix

INSN = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$")
FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")


def disassemble(binary: str) -> dict[str, list[tuple[str, str]]]:
    out = llvm_objdump(binary, "--no-show-raw-insn")
    funcs: dict[str, list[tuple[str, str]]] = {}
    cur: list[tuple[str, str]] | None = None
    for line in out.splitlines():
        if m := FUNC.match(line):
            cur = funcs.setdefault(m.group(1), [])
        elif cur is not None and (m := INSN.match(line)):
            cur.append((m.group(1), m.group(2)))
    return funcs


def is_vector(mnemonic: str, operands: str) -> bool:
    # every RVV instruction's mnemonic starts with 'v' (no scalar RV64GC one does);
    # reading the vector CSRs also counts
    return mnemonic.startswith("v") or bool(re.search(r"\bvl(enb)?\b|\bvtype\b", operands))


def test_scalar_binary_has_no_vector_instruction() -> None:
    funcs = disassemble("q8-scalar")
    assert "q8_scalar" in funcs and "main" in funcs
    found = [(f, m, o) for f, insns in funcs.items() for m, o in insns if is_vector(m, o)]
    assert found == []


KERNEL_FUNCS = ("q8_scalar", "q8_ggml", "q8_packed", "q8_split")
FORBIDDEN = re.compile(r"^(vsetivli|vlseg|vsseg|vlsseg|vssseg|vluxseg|vloxseg|vcompress|"
                       r"vlse\d|vsse\d|vluxei|vloxei|vsuxei|vsoxei)")


def test_vector_kernels_avoid_gem5_trouble() -> None:
    """Inside the measured kernels: no vsetivli, segment, compress, strided or indexed
    memory ops, and no widening op whose destination group would exceed LMUL 4."""
    funcs = disassemble("q8")
    assert all(f in funcs for f in KERNEL_FUNCS)
    for f in KERNEL_FUNCS[1:]:
        insns = funcs[f]
        assert any(is_vector(m, o) for m, o in insns), f  # the detector sees vector code
        lmul = 1
        for m, o in insns:
            assert not FORBIDDEN.match(m), (f, m, o)
            if m == "vsetvli":
                lm = re.search(r"\bm(f?)(\d)\b", o)
                assert lm, o
                lmul = 1 if lm.group(1) else int(lm.group(2))
            widening = m.startswith(("vw", "vfw")) and not m.startswith(("vwred", "vfwred"))
            if widening:
                assert lmul <= 2, (f, m, o, lmul)
    assert not any(is_vector(m, o) for m, o in funcs["q8_scalar"])


@pytest.mark.parametrize("binary", ("q8", "q8-scalar"))
def test_roi_m5_emits_m5ops(binary: str) -> None:
    """--roi m5 executes the m5op words, which QEMU rejects as illegal instructions;
    --roi none (the default) does not."""
    args = ["--kernel", "q8-scalar", "--rows", "2", "--cols", "32"]
    res = qemu_run(binary, [*args, "--roi", "m5"])
    assert res.rc == -4, (res.rc, res.stdout, res.stderr)  # SIGILL
    assert res.stdout == ""
    run_ok(binary, [*args, "--roi", "none"], 256)


def test_fp16_helpers_exhaustive(tmp_path: Path) -> None:
    """fp16_to_fp32 on all 65536 halves and fp32_to_fp16 on ~1.1M floats (every
    4093rd bit pattern, plus rounding ties, subnormal and overflow edges), on the target
    under qemu, against numpy's conversions."""
    cc = shutil.which("clang-19")
    if cc is None:
        pytest.skip("clang-19 not found")
    exe = tmp_path / "fp16_check"
    src = ROOT / "workloads" / "src"
    subprocess.run([cc, "--target=riscv64-linux-gnu", "-static", "-fuse-ld=lld", "-O2",
                    "-march=rv64gc", f"-I{src}", str(src / "q8" / "check" / "fp16_check.c"),
                    str(src / "q8" / "q8_data.c"), "-o", str(exe), "-lm"], check=True)
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    # halfway points between consecutive halves (ties) and just either side of them
    lo = halves.view(np.float16).astype(np.float32)
    hi = (halves + 1).astype(np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(invalid="ignore"):
        mid = ((lo.astype(np.float64) + hi.astype(np.float64)) / 2).astype(np.float32)
    ok = np.isfinite(lo) & np.isfinite(hi) & (np.sign(lo) == np.sign(hi))
    mid = mid[ok].view(np.uint32)
    pats = np.concatenate([
        np.arange(0, 2**32, 4093, dtype=np.uint64).astype(np.uint32),
        mid, mid + 1, mid - 1,
        np.array([0x477FF000, 0x477FEFFF, 0x47800000, 0x33000000, 0x33000001, 0x32FFFFFF,
                  0x387FC000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x80000000],
                 dtype=np.uint32),
    ])
    (tmp_path / "in.bin").write_bytes(pats.astype("<u4").tobytes())
    cpu = "rv64,v=true,vlen=128,elen=64,vext_spec=v1.0"
    subprocess.run(["qemu-riscv64", "-cpu", cpu, str(exe), str(tmp_path / "in.bin"),
                    str(tmp_path / "o16.bin"), str(tmp_path / "o32.bin")], check=True,
                   timeout=300)

    got32 = np.fromfile(tmp_path / "o32.bin", dtype="<u4")
    want32 = halves.view(np.float16).astype(np.float32)
    nan = np.isnan(want32)
    assert np.isnan(got32.view(np.float32)[nan]).all()
    np.testing.assert_array_equal(got32[~nan], want32.view(np.uint32)[~nan])

    got16 = np.fromfile(tmp_path / "o16.bin", dtype="<u2")
    f = pats.view(np.float32)
    with np.errstate(over="ignore"):
        want16 = f.astype(np.float16).view(np.uint16)
    nan = np.isnan(f)
    assert np.isnan(got16.view(np.float16)[nan]).all()
    bad = np.flatnonzero(got16[~nan] != want16[~nan])
    assert bad.size == 0, [(hex(pats[~nan][i]), hex(got16[~nan][i]), hex(want16[~nan][i]))
                           for i in bad[:5]]
