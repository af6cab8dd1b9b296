"""ggml's own kernels, their build and what they execute: the build's record (version,
source, flags, no cache path in the binaries), the path ggml took and what else runs in the
region of interest as QEMU traced it, and which gem5-relevant instructions ggml executes
there. Their results: test_ggml_lib.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import BUILD, llvm_objdump
from qemu_trace import RoiTrace, trace_roi
from test_ggml_lib import ATTN_S, ATTN_V, BASE, BUILD_JSON, Q8_S, Q8_V, QBASE, run_ok

# ------------------------------------------------------------ the build's record

def build_info() -> dict:
    return json.loads(BUILD_JSON.read_text())


def test_build_record_and_result_lines_agree() -> None:
    info = build_info()
    assert info["ggml_version"] == "0.25.3"
    assert info["source"].startswith("llama-cpp-python 0.3.36 sdist, sha256 ")
    for binary, kernel, args, march in [
            (ATTN_V, "ggml-lib-vec", BASE, "rv64gcv"),
            (ATTN_S, "ggml-lib-scalar", BASE, "rv64gc"),
            (Q8_V, "q8-ggml-lib", QBASE, "rv64gcv"),
            (Q8_S, "q8-ggml-lib-scalar", QBASE, "rv64gc")]:
        rec = run_ok(binary, ["--kernel", kernel, *args])
        assert rec["ggml_version"] == info["ggml_version"]
        assert rec["ggml_source"] == info["source"]
        assert rec["ggml_march"] == march
        assert rec["ggml_flags"] == info["flags"][march]


@pytest.mark.parametrize("march", ("rv64gcv", "rv64gc"))
def test_build_flags(march: str) -> None:
    """Static, single-threaded, portable: no OpenMP, no llamafile, no native detection;
    ggml-cpu for exactly this -march; only quants.c assembled by GNU as (RVV build)."""
    flags = build_info()["flags"][march]
    groups = dict(g.split(": ", 1) for g in flags.split("; "))
    assert set(groups) >= {"ggml-base C", "ggml-base C++", "ggml-cpu C", "ggml-cpu C++"}
    prefix_map = "-ffile-prefix-map=<ggml>=llama-cpp-python-0.3.36/ggml"
    for name, fl in groups.items():
        words = fl.split()
        assert "-O3" in words and "--target=riscv64-linux-gnu" in words, name
        assert prefix_map in words, name
        assert not [w for w in words if "openmp" in w.lower() or "LLAMAFILE" in w
                    or "native" in w or w.startswith("-I") or "/" in w and w != prefix_map
                    ], (name, fl)
        if name.startswith("ggml-cpu"):
            assert f"-march={march}" in words, name
        else:
            assert not [w for w in words if w.startswith("-march")], name
    special = [n for n in groups if n.startswith("ggml-cpu src/")]
    if march == "rv64gcv":
        assert special == ["ggml-cpu src/ggml-cpu/arch/riscv/quants.c"]
        assert groups[special[0]].endswith("-fno-integrated-as")
    else:
        assert special == []


@pytest.mark.parametrize("binary", (ATTN_V, ATTN_S, Q8_V, Q8_S))
def test_binaries_do_not_depend_on_the_cache_folder(binary: str) -> None:
    """ggml's asserts name their source files: as llama-cpp-python-0.3.36/ggml/..., never
    as the cache folder they were built in (the binary's hash is part of a run's id)."""
    data = (BUILD / binary).read_bytes()
    assert b"llama-cpp-python-0.3.36/ggml/src/ggml" in data
    assert b"vecscale/ggml/" not in data and str(Path.home()).encode() + b"/" not in data


# ------------------------------------------------ what runs in the region of interest

def trace(binary: str, args: list[str], vlen: int = 512) -> RoiTrace:
    t = trace_roi(BUILD / binary, args, vlen)
    assert t.rc == 0 and json.loads(t.stdout)["pass"] is True, t.stdout
    return t


ONE_CHUNK = "ggml_compute_forward_flash_attn_ext_f16_one_chunk"
SMALL = ["--heads", "4", "--kv-heads", "1", "--head-dim", "64"]


@pytest.mark.parametrize("kernel,args,path", [
    ("ggml-lib-vec", ["--n", "64"], "tiled"),
    ("ggml-lib-vec-onerow", ["--n", "64"], "one-row"),
    ("ggml-lib-vec", ["--n", "12"], "one-row"),
    ("ggml-lib-vec", ["--phase", "decode", "--l", "512"], "one-row-split-kv"),
    ("ggml-lib-vec-onerow", ["--phase", "decode", "--l", "512"], "one-row"),
])
def test_path_is_what_ran(kernel: str, args: list[str], path: str) -> None:
    """The path named in the JSON line is the one QEMU executed between roi_begin and
    roi_end: the one-row kernel is a function of its own; the tiled kernel and the split-kv
    reduction are inlined into ggml_compute_forward_flash_attn_ext, and only the non-split
    paths hand out row chunks (ggml_threadpool_chunk_set)."""
    t = trace(ATTN_V, ["--kernel", kernel, *SMALL, *args])
    assert json.loads(t.stdout)["ggml_path"] == path
    ran = {f for f in t.per_function}
    one_row = any(ONE_CHUNK in f for f in ran)
    chunks = "ggml_threadpool_chunk_set" in ran
    assert (one_row, chunks) == {"tiled": (False, True), "one-row": (True, True),
                                 "one-row-split-kv": (True, False)}[path], sorted(ran)


OUR_CODE = re.compile(r"^(attn_|q8_|quantize_q8|vsggml_begin|vsggml_plan|vsggml_end|main$|"
                      r"ggml_graph_plan|ggml_new_graph|ggml_build_forward|"
                      r"ggml_threadpool_new|err_|json_|rng_|fill)")


@pytest.mark.parametrize("binary,args", [
    (ATTN_V, ["--kernel", "ggml-lib-vec", *SMALL, "--n", "64"]),
    (ATTN_S, ["--kernel", "ggml-lib-scalar", *SMALL, "--phase", "decode", "--l", "30"]),
    (Q8_V, ["--kernel", "q8-ggml-lib", "--rows", "32", "--cols", "256"]),
])
def test_roi_holds_only_the_graph_compute(binary: str, args: list[str]) -> None:
    """Between roi_begin and roi_end: ggml_graph_compute and what it calls; no input
    generation, graph building, planning, quantisation of x or checking."""
    t = trace(binary, args)
    ran = set(t.per_function)
    assert "ggml_graph_compute" in ran
    assert not [f for f in ran if OUR_CODE.match(f)], sorted(ran)
    if binary.startswith("q8"):
        assert "ggml_vec_dot_q8_0_q8_0" in ran
        assert not [f for f in ran if "quantize" in f]  # x arrives as Q8_0


# gem5 v24.0.0.1 (GEM5_NOTES.md, gem5-patches/README.md): instructions it cannot run, and
# ones it runs slowly or that the project's own kernels avoid.
FATAL = {
    "segment": re.compile(r"^v[ls](s|ux|ox)?seg\d"),  # stock: hang; reported wrong results
    "vcompress": re.compile(r"^vcompress"),  # not implemented: panic
}
SLOW = {
    "vsetivli": re.compile(r"^vsetivli"),  # mispredicted every time in v24.0
    "strided": re.compile(r"^v[ls]s?se\d+\.v"),  # one micro-op per element
    "indexed": re.compile(r"^v[ls](ux|ox)ei"),  # one micro-op per element
}


def gem5_findings(t: RoiTrace) -> dict[str, set[str]]:
    """Categories of gem5-relevant instructions executed in the ROI -> mnemonics."""
    found: dict[str, set[str]] = {}
    for text in t.texts:
        mnem = text.split(None, 1)[0]
        for name, rx in (*FATAL.items(), *SLOW.items()):
            if rx.match(mnem):
                found.setdefault(name, set()).add(mnem)
    for (mnem, vtype), _ in t.vops.items():
        sew, lmul = vtype.split(",") if "," in vtype else ("?", "?")
        widening = mnem.startswith(("vw", "vfw"))
        if lmul == "m8":
            found.setdefault("LMUL 8", set()).add(mnem)
            if widening:
                found.setdefault("widening at LMUL 8", set()).add(mnem)
        if sew == "e16" and mnem.startswith("vf"):
            found.setdefault("fp16 vector", set()).add(mnem)
        if lmul in ("m4", "m8") and re.match(r"^vf(w|n)?cvt", mnem):
            found.setdefault("conversion at LMUL >= 4", set()).add(mnem)
    return found


# What ggml 0.25.3 built for rv64gcv executes in the ROI (documented in workloads/README.md,
# "ggml's own kernels"); a change of ggml or of the build shows up here.
GEM5_EXPECTED = {
    "tiled": {"vsetivli": {"vsetivli"}, "strided": {"vsse32.v"},
              "LMUL 8": {"vfmul.vf", "vl2re8.v", "vle32.v", "vse32.v"}},
    "one-row": {"vsetivli": {"vsetivli"},
                "LMUL 8": {"vfmacc.vf", "vfmacc.vv", "vfmul.vf", "vfmv.f.s", "vfredusum.vs",
                           "vle32.v", "vmv.s.x", "vmv.v.i", "vse32.v"}},
    "q8": {"vsetivli": {"vsetivli"}, "LMUL 8": {"vmv.x.s"}},
}


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("binary,args,case", [
    (ATTN_V, ["--kernel", "ggml-lib-vec", *SMALL, "--n", "64"], "tiled"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *SMALL, "--n", "12"], "one-row"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *SMALL, "--phase", "decode", "--l", "512"],
     "one-row"),
    (Q8_V, ["--kernel", "q8-ggml-lib", "--rows", "32", "--cols", "512"], "q8"),
])
def test_gem5_relevant_instructions(binary: str, args: list[str], case: str,
                                    vlen: int) -> None:
    """No instruction gem5 v24.0.0.1 cannot run (segment loads/stores, vcompress, a
    widening op at LMUL 8, fp16 vector arithmetic, conversions at LMUL >= 4) executes in
    ggml's region of interest; what it does execute that our kernels avoid is as
    documented: vsetivli, LMUL 8 (non-widening) and, in the tiled path, strided stores."""
    t = trace(binary, args, vlen)
    assert t.vector_insns > 0
    found = gem5_findings(t)
    assert found == GEM5_EXPECTED[case], found
    if case == "q8":  # ggml's per-block widening reduction, as in our q8-ggml port
        assert ("vwredsum.vs", "e16,m4") in t.vops and ("vwmul.vv", "e8,m2") in t.vops


VECTOR_INSN = re.compile(r"^(vset|v[a-z0-9]+\.[vxfwims]|vl[0-9]|vs[0-9])")


@pytest.mark.parametrize("binary", (ATTN_S, Q8_S))
def test_scalar_binaries_have_no_vector_instruction(binary: str) -> None:
    dis = llvm_objdump(binary, "--no-show-raw-insn")
    insns = [ln.split("\t", 1)[1].strip() for ln in dis.splitlines()
             if re.match(r"^\s+[0-9a-f]+:\s*\t", ln)]
    assert len(insns) > 10000  # ggml, libstdc++ and libc are all there
    assert not [i for i in insns if VECTOR_INSN.match(i)][:5]
    vec = llvm_objdump(ATTN_V, "--no-show-raw-insn")
    assert any(VECTOR_INSN.match(ln.split("\t", 1)[1].strip()) for ln in vec.splitlines()
               if re.match(r"^\s+[0-9a-f]+:\s*\t", ln))
