"""Q8_0 GEMV workload (workloads/src/q8): self-check across kernels, models and VLENs,
an independent numpy recomputation from --dump, kernel agreement, error paths and the
instruction mix of the binaries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import VLENS, qemu_run

from workloads.kernels import Q8, own
from workloads.kernels import kernel as registry_kernel
from workloads.models import load_models

KERNELS = own(Q8)  # ggml's own kernels: test_ggml_lib.py
VECTOR_KERNELS = tuple(k for k in KERNELS if registry_kernel(k).vector)
PROJS = ("q", "k", "v", "o", "gate", "up", "down")
MODELS: dict[str, dict[str, int]] = load_models()
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
    binary = registry_kernel(kernel).binary
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
