"""Q8_0 workload binaries: failure paths (perturbed results, bad arguments), the
instruction mix gem5 can run, m5ops for the ROI, and the fp16 helpers."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, llvm_objdump, qemu_run
from test_q8 import KERNELS, run_ok

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
