"""q8 with half-precision hardware (`--fp16 zvfh`, src/q8/q8_zvfh.c) under QEMU with Zvfh:
every vector kernel on every model and VLEN against numpy, bit-identity with the software
decode where the summation order is the same, odd shapes, planted errors, refusals, and
the instructions the kernels use."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import VLENS, qemu_run
from test_q8 import Q8_MODEL_PROJ, VECTOR_KERNELS, load_dump, numpy_gemv, tolerance
from test_q8_binary import FORBIDDEN, disassemble, is_vector


def run_zvfh(args: list[str], vlen: int, binary: str = "q8") -> dict:
    res = qemu_run(binary, [*args, "--fp16", "zvfh"], vlen=vlen, zvfh=True)
    assert res.rc == 0, f"rc={res.rc} {res.stdout} {res.stderr}"
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0 and rec["fp16"] == "zvfh", rec
    return rec


def numpy_ok(dump: dict, cols: int) -> None:
    yref, abssum = numpy_gemv(dump["w"], dump["xq"])
    err = np.abs(dump["y"].astype(np.float64) - yref)
    assert (err <= tolerance(abssum, cols // 32)).all(), err.max()
    assert np.abs(yref).max() > 1e-3


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize(("model", "proj"), Q8_MODEL_PROJ)
@pytest.mark.parametrize("kernel", VECTOR_KERNELS)
def test_every_model_vlen(kernel: str, model: str, proj: str, vlen: int,
                          tmp_path: Path) -> None:
    """Passes its self-check and numpy's; q8-ggml and q8-split give the very y of the
    software decode (same scales, same order), q8-packed sums its blocks in another order."""
    args = ["--kernel", kernel, "--model", model, "--proj", proj, "--max-rows", "19"]
    rec = run_zvfh([*args, "--dump", str(tmp_path / "z")], vlen)
    hw = load_dump(tmp_path / "z")
    numpy_ok(hw, rec["cols"])
    res = qemu_run("q8", [*args, "--dump", str(tmp_path / "b")], vlen=vlen)
    assert res.rc == 0, res.stderr
    sw = load_dump(tmp_path / "b")
    if kernel != "q8-packed":
        np.testing.assert_array_equal(hw["y"], sw["y"])


SHAPES = [(1, 32), (5, 32), (129, 288), (300, 96), (3, 2048), (61, 1056)]


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize(("rows", "cols"), SHAPES)
@pytest.mark.parametrize("variant", [["--kernel", "q8-packed"],
                                     ["--kernel", "q8-packed", "--pack-x", "once"],
                                     ["--kernel", "q8-split", "--split-mac", "sext"]],
                         ids=["packed-row", "packed-once", "split-sext"])
def test_odd_shapes(variant: list[str], rows: int, cols: int, vlen: int,
                    tmp_path: Path) -> None:
    """Block counts that are not a multiple of a register's blocks, a single block, row
    counts that are not a multiple of the split tile."""
    run_zvfh([*variant, "--rows", str(rows), "--cols", str(cols), "--seed", "4",
              "--dump", str(tmp_path)], vlen)
    numpy_ok(load_dump(tmp_path), cols)


@pytest.mark.parametrize("kernel", VECTOR_KERNELS)
def test_perturb_is_caught(kernel: str) -> None:
    res = qemu_run("q8", ["--kernel", kernel, "--rows", "61", "--cols", "2048",
                          "--fp16", "zvfh", "--test-perturb"], vlen=1024, zvfh=True)
    assert res.rc == 1 and res.record["pass"] is False, res.stderr


@pytest.mark.parametrize("binary", ["q8", "q8-scalar"])
def test_scalar_kernel_refuses_zvfh(binary: str) -> None:
    res = qemu_run(binary, ["--kernel", "q8-scalar", "--rows", "4", "--cols", "32",
                            "--fp16", "zvfh"], vlen=256, zvfh=True)
    assert res.rc == 2 and res.stdout == ""
    assert res.stderr.strip().startswith("error: --fp16 zvfh:"), res.stderr


def test_needs_zvfh() -> None:
    """The Zvfh kernels use half-precision vector instructions: a core without Zvfh (QEMU
    without zvfh=true) stops them, so a run cannot pass without the extension."""
    res = qemu_run("q8", ["--kernel", "q8-split", "--rows", "4", "--cols", "32",
                          "--fp16", "zvfh"], vlen=256)
    assert res.rc == -4, (res.rc, res.stderr)  # SIGILL


ZVFH_FUNCS = {"q8_ggml_zvfh": ("fcvt.s.h",),
              "q8_packed_zvfh": ("vfwcvt.f.f.v", "vlse16.v", "vnsra.wi", "vnsra.wx",
                                 "vfredusum.vs"),
              "q8_split_zvfh": ("vfwcvt.f.f.v", "vle16.v")}


def test_zvfh_kernel_instructions() -> None:
    """What each kernel is about is in its code: the scalar conversion, the vector one,
    q8-packed's tree with no per-block reduction; and nothing gem5 v24.0 handles badly
    (no vsetivli, segment or indexed access, widening from at most LMUL 2). The one
    strided access is q8-packed's load of a register's block scales, 34 bytes apart."""
    funcs = disassemble("q8")
    for f, needed in ZVFH_FUNCS.items():
        mnemonics = {m for m, _ in funcs[f]}
        assert set(needed) <= mnemonics, (f, set(needed) - mnemonics)
        lmul = 1
        for m, o in funcs[f]:
            assert m == "vlse16.v" or not FORBIDDEN.match(m), (f, m, o)
            if m == "vsetvli":
                lm = re.search(r"\bm(f?)(\d)\b", o)
                assert lm, o
                lmul = 1 if lm.group(1) else int(lm.group(2))
            if m.startswith(("vw", "vfw")) and not m.startswith(("vwred", "vfwred")):
                assert lmul <= 2, (f, m, o, lmul)
    packed = {m for m, _ in funcs["q8_packed_zvfh"]}
    assert not {"vwredsum.vs", "vmseq.vx", "vmseq.vi"} & packed
    assert not [m for m, o in funcs["q8_ggml_zvfh"] if m.startswith("vfw")]
    assert all(any(is_vector(m, o) for m, o in funcs[f]) for f in ZVFH_FUNCS)
