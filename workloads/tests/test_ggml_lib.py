"""ggml's own kernels (workloads/src/ggml, built on the ggml library from the
llama-cpp-python sdist): self-checks on every model and phase under QEMU, the path ggml
took confirmed from what QEMU executed, an independent numpy check of dumps, the same
inputs and reference files as our own workloads, argument errors, the build's record, and
which gem5-relevant instructions ggml executes in the region of interest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import BUILD, ROOT, VLENS, llvm_objdump, qemu_run
from qemu_trace import RoiTrace, trace_roi
from test_attention_check import numpy_attention
from test_q8 import load_dump, numpy_gemv, tolerance

MODELS: dict[str, dict[str, int]] = yaml.safe_load(
    (ROOT / "workloads" / "models.yaml").read_text())
ATTN_V, ATTN_S = "attention-ggml-lib", "attention-ggml-lib-scalar"
Q8_V, Q8_S = "q8-ggml-lib", "q8-ggml-lib-scalar"
PROJS = ("q", "k", "v", "o", "gate", "up", "down")
BUILD_JSON = BUILD / "ggml" / "build.json"


def run_ok(binary: str, args: list[str], vlen: int = 256) -> dict:
    res = qemu_run(binary, args, vlen=vlen)
    assert res.rc == 0, f"rc={res.rc} stdout={res.stdout!r} stderr={res.stderr!r}"
    rec = res.record
    assert rec["pass"] is True and rec["n_bad"] == 0, rec
    return rec


def expected_path(kernel: str, n_q: int, n_kv: int, head_dim: int, vector: bool) -> str:
    """ggml 0.25.3's choice (ggml-cpu/ops.cpp), as the workload's JSON must report it."""
    if kernel.endswith("-onerow"):
        return "one-row"
    if n_q == 1 and n_kv >= 512:
        return "one-row-split-kv"
    if n_q >= 64 and (head_dim % 4 == 0 or not vector):
        return "tiled"
    return "one-row"


def attn_kernel(vector: bool, suffix: str = "") -> str:
    return ("ggml-lib-vec" if vector else "ggml-lib-scalar") + suffix


def check_attn(binary: str, kernel: str, model: str, phase_args: list[str],
               vlen: int = 256) -> dict:
    rec = run_ok(binary, ["--kernel", kernel, "--model", model, *phase_args], vlen)
    m = MODELS[model]
    decode = "--l" in phase_args
    n = int(phase_args[phase_args.index("--l" if decode else "--n") + 1])
    vector = binary == ATTN_V
    assert rec["kernel"] == kernel and rec["model"] == model
    assert rec["phase"] == ("decode" if decode else "prefill")
    assert rec["vlen"] == (vlen if vector else 0)
    assert rec["ggml_path"] == expected_path(kernel, 1 if decode else n, n, m["head_dim"],
                                             vector)
    assert rec["max_abs_err"] <= 1e-5
    return rec


# ------------------------------------------------------------------ every model, phase

PHASES = {"prefill": ["--n", "12"], "decode": ["--phase", "decode", "--l", "40"]}


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_attention_models(model: str, phase: str, vlen: int) -> None:
    rec = check_attn(ATTN_V, "ggml-lib-vec", model, PHASES[phase], vlen)
    assert rec["ggml_path"] == "one-row" and rec["ggml_path_asked"] == "auto"


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("suffix", ("", "-onerow", "-tiled"))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_attention_prefill_paths(model: str, suffix: str, vlen: int) -> None:
    """N = 64 query tokens: ggml's own choice is the tiled path; both paths forced."""
    rec = check_attn(ATTN_V, attn_kernel(True, suffix), model, ["--n", "64"], vlen)
    assert rec["ggml_path"] == ("one-row" if suffix == "-onerow" else "tiled")
    assert rec["ggml_path_asked"] == {"": "auto", "-onerow": "one-row",
                                      "-tiled": "tiled"}[suffix]


@pytest.mark.parametrize("vlen", (256, 1024))
@pytest.mark.parametrize("suffix", ("", "-onerow"))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_attention_decode_split_kv(model: str, suffix: str, vlen: int) -> None:
    """512 keys or more in decode: ggml splits the keys (one chunk on one thread) unless
    the one-row path is forced."""
    rec = check_attn(ATTN_V, attn_kernel(True, suffix), model, ["--phase", "decode",
                                                                 "--l", "520"], vlen)
    assert rec["ggml_path"] == ("one-row" if suffix else "one-row-split-kv")


@pytest.mark.parametrize("args", (["--n", "12"], ["--n", "64"], ["--n", "70"],
                                  ["--phase", "decode", "--l", "40"],
                                  ["--phase", "decode", "--l", "512"]),
                         ids=("n12", "n64", "n70", "l40", "l512"))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_attention_scalar_binary(model: str, args: list[str]) -> None:
    check_attn(ATTN_S, "ggml-lib-scalar", model, args)


@pytest.mark.parametrize("args", (["--n", "64"], ["--phase", "decode", "--l", "9"]))
def test_attention_scalar_onerow_and_tiled(args: list[str]) -> None:
    check_attn(ATTN_S, "ggml-lib-scalar-onerow", "pythia-410m", args)
    if "--n" in args:
        check_attn(ATTN_S, "ggml-lib-scalar-tiled", "pythia-410m", args)


@pytest.mark.parametrize("shape,args,vlen", [
    ((14, 2, 32), ["--n", "65"], 512),  # 7:1, a partial second Q tile
    ((12, 2, 20), ["--n", "64"], 256),  # D = 20: a multiple of 4, tiled
    ((6, 3, 18), ["--n", "64"], 256),  # D = 18: not a multiple of 4, one-row
    ((5, 1, 8), ["--phase", "decode", "--l", "700"], 1024),  # MQA, split keys
    ((3, 3, 200), ["--n", "5"], 128),  # D beyond one m8 register group at VLEN 128
])
def test_attention_custom_shapes(shape: tuple[int, int, int], args: list[str],
                                 vlen: int) -> None:
    heads, kv_heads, d = shape
    rec = run_ok(ATTN_V, ["--kernel", "ggml-lib-vec", "--heads", str(heads), "--kv-heads",
                          str(kv_heads), "--head-dim", str(d), *args], vlen)
    decode = "--l" in args
    n = int(args[-1])
    assert rec["ggml_path"] == expected_path("ggml-lib-vec", 1 if decode else n, n, d, True)


# ------------------------------------------------------------------------------ q8

Q8_CASES = [(model, PROJS[i % len(PROJS)], (17, 40, 64, 23, 50, 33, 61)[i % 7])
            for i, model in enumerate(sorted(MODELS))]


@pytest.mark.parametrize("vlen", (128, 1024))
@pytest.mark.parametrize("proj", PROJS)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_q8_models(model: str, proj: str, vlen: int) -> None:
    rec = run_ok(Q8_V, ["--kernel", "q8-ggml-lib", "--model", model, "--proj", proj,
                        "--max-rows", "24"], vlen)
    assert rec["proj"] == proj and rec["vlen"] == vlen and rec["x_type"] == "q8_0"


@pytest.mark.parametrize(("model", "proj", "max_rows"), Q8_CASES)
def test_q8_scalar_binary(model: str, proj: str, max_rows: int) -> None:
    rec = run_ok(Q8_S, ["--kernel", "q8-ggml-lib-scalar", "--model", model, "--proj", proj,
                        "--max-rows", str(max_rows)])
    assert rec["vlen"] == 0


@pytest.mark.parametrize("binary,kernel", ((Q8_V, "q8-ggml-lib"), (Q8_S, "q8-ggml-lib-scalar")))
def test_q8_full_projection(binary: str, kernel: str) -> None:
    rec = run_ok(binary, ["--kernel", kernel, "--model", "qwen2.5-0.5b", "--proj", "k"], 512)
    assert (rec["rows"], rec["cols"]) == (128, 896)


# --------------------------------------------------- independent check, shared inputs

def load_attn_dump(d: Path) -> tuple[dict, dict[str, np.ndarray]]:
    meta = json.loads((d / "meta.json").read_text())
    arrays = {}
    for name in "qkvo":
        a = np.fromfile(d / f"{name}.bin", dtype="<f4")
        arrays[name] = a.reshape(meta["shapes"][name])
    return meta, arrays


@pytest.mark.parametrize("binary,kernel,args,vlen", [
    (ATTN_V, "ggml-lib-vec", ["--model", "tinyllama-1.1b", "--n", "64"], 512),  # tiled
    (ATTN_V, "ggml-lib-vec-onerow", ["--model", "qwen2.5-1.5b", "--n", "9"], 128),
    (ATTN_V, "ggml-lib-vec", ["--model", "llama-3.2-1b", "--phase", "decode", "--l", "530"],
     1024),  # split keys
    (ATTN_S, "ggml-lib-scalar", ["--model", "pythia-410m", "--n", "66"], 0),  # scalar tiled
])
def test_attention_dump_numpy(tmp_path: Path, binary: str, kernel: str, args: list[str],
                              vlen: int) -> None:
    rec = run_ok(binary, ["--kernel", kernel, *args, "--dump", str(tmp_path)], vlen or 256)
    meta, a = load_attn_dump(tmp_path)
    assert meta["kernel"] == kernel and meta["causal"] == (rec["phase"] == "prefill")
    ref = numpy_attention(*(a[x].astype(np.float64) for x in "qkv"), meta["causal"])
    err = np.abs(a["o"].astype(np.float64) - ref)
    assert np.all(err <= 1e-5 + 1e-4 * np.abs(ref)), float(err.max())
    assert abs(float(err.max()) - rec["max_abs_err"]) <= 1e-7


@pytest.mark.parametrize("args", (["--model", "qwen2.5-0.5b", "--n", "7"],
                                  ["--model", "pythia-410m", "--phase", "decode", "--l", "33",
                                   "--seed", "5"]))
def test_attention_same_inputs_as_our_kernels(tmp_path: Path, args: list[str]) -> None:
    """The same Q, K and V as the attention workload (attn_ref.c mirrors main.c)."""
    run_ok("attention", ["--kernel", "ggml-vec", *args, "--dump", str(tmp_path / "ours")])
    run_ok(ATTN_V, ["--kernel", "ggml-lib-vec", *args, "--dump", str(tmp_path / "ggml")])
    for name in "qkv":
        a = (tmp_path / "ours" / f"{name}.bin").read_bytes()
        assert a == (tmp_path / "ggml" / f"{name}.bin").read_bytes(), name
    ours = np.fromfile(tmp_path / "ours" / "o.bin", dtype="<f4")
    theirs = np.fromfile(tmp_path / "ggml" / "o.bin", dtype="<f4")
    assert np.abs(ours - theirs).max() < 2e-6  # two fp32 kernels, one problem


def test_reference_files_are_interchangeable(tmp_path: Path) -> None:
    """Both write byte-identical reference files, each reads the other's, a changed value is
    caught and a file for another problem is refused."""
    base = ["--model", "llama-3.2-3b", "--n", "6"]
    ours, mine = tmp_path / "ours.ref", tmp_path / "ggml.ref"
    assert qemu_run("attention-scalar", ["--kernel", "ggml-scalar", *base, "--make-ref",
                                         str(ours)]).rc == 0
    made = qemu_run(ATTN_S, ["--kernel", "ggml-lib-scalar", *base, "--make-ref", str(mine)])
    assert made.rc == 0 and made.record == {"workload": "attention", "make_ref": str(mine),
                                            "count": 6 * 24 * 128}
    assert ours.read_bytes() == mine.read_bytes()
    run_ok(ATTN_V, ["--kernel", "ggml-lib-vec", *base, "--ref", str(ours)], 512)
    run_ok("attention", ["--kernel", "fa-v", *base, "--ref", str(mine)], 512)
    data = bytearray(ours.read_bytes())
    data[56 + 8 * 50 + 7] ^= 0x40
    bad = tmp_path / "bad.ref"
    bad.write_bytes(bytes(data))
    res = qemu_run(ATTN_V, ["--kernel", "ggml-lib-vec", *base, "--ref", str(bad)])
    assert res.rc == 1 and res.record["pass"] is False
    res = qemu_run(ATTN_V, ["--kernel", "ggml-lib-vec", *base, "--seed", "3", "--ref",
                            str(ours)])
    assert res.rc == 2 and "another problem" in res.stderr


@pytest.mark.parametrize("binary,kernel,vlen", ((Q8_V, "q8-ggml-lib", 256),
                                                (Q8_S, "q8-ggml-lib-scalar", 0)))
def test_q8_dump_numpy_and_same_inputs(tmp_path: Path, binary: str, kernel: str,
                                       vlen: int) -> None:
    args = ["--model", "llama-3.2-1b", "--proj", "o", "--max-rows", "45", "--seed", "7"]
    rec = run_ok(binary, ["--kernel", kernel, *args, "--dump", str(tmp_path / "g")],
                 vlen or 256)
    run_ok("q8", ["--kernel", "q8-ggml", *args, "--dump", str(tmp_path / "ours")], 256)
    g, ours = load_dump(tmp_path / "g"), load_dump(tmp_path / "ours")
    for name in ("x", "xq", "w"):
        np.testing.assert_array_equal(g[name], ours[name])
    yref, abssum = numpy_gemv(g["w"], g["xq"])
    err = np.abs(g["y"].astype(np.float64) - yref)
    assert (err <= tolerance(abssum, rec["cols"] // 32)).all(), err.max()
    assert np.abs(yref).max() > 1e-3
    # ggml's vec_dot and our port of it sum the same fp32 terms in the same order
    np.testing.assert_array_equal(g["y"], ours["y"])


# ------------------------------------------------------------------ failure paths

@pytest.mark.parametrize("binary,kernel,args", [
    (ATTN_V, "ggml-lib-vec", ["--n", "64"]),
    (ATTN_V, "ggml-lib-vec-onerow", ["--n", "8"]),
    (ATTN_V, "ggml-lib-vec", ["--phase", "decode", "--l", "600"]),
    (ATTN_S, "ggml-lib-scalar", ["--n", "8"]),
])
def test_attention_perturb_is_caught(binary: str, kernel: str, args: list[str]) -> None:
    res = qemu_run(binary, ["--kernel", kernel, "--model", "pythia-410m", *args,
                            "--test-perturb"], vlen=512)
    assert res.rc == 1, res.stdout + res.stderr
    rec = res.record
    assert rec["pass"] is False and rec["n_bad"] >= 1 and rec["max_abs_err"] > 1e-2


@pytest.mark.parametrize("binary,kernel", ((Q8_V, "q8-ggml-lib"), (Q8_S, "q8-ggml-lib-scalar")))
def test_q8_perturb_is_caught(binary: str, kernel: str) -> None:
    res = qemu_run(binary, ["--kernel", kernel, "--rows", "9", "--cols", "96",
                            "--test-perturb"])
    assert res.rc == 1 and res.record["pass"] is False and res.record["n_bad"] >= 1


BASE = ["--model", "tinyllama-1.1b", "--n", "4"]
QBASE = ["--rows", "4", "--cols", "64"]
BAD_ARGS = [
    (ATTN_V, ["--kernel", "ggml-vec", *BASE], "--kernel"),
    (ATTN_V, ["--kernel", "ggml-lib-scalar", *BASE], "--kernel"),
    (ATTN_V, [*BASE], "--kernel"),
    (ATTN_V, ["--kernel", "ggml-lib-vec-tiled", *BASE], "--kernel"),  # N < 64
    (ATTN_V, ["--kernel", "ggml-lib-vec-tiled", "--heads", "4", "--kv-heads", "2",
              "--head-dim", "18", "--n", "64"], "--kernel"),  # D not a multiple of 4
    (ATTN_V, ["--kernel", "ggml-lib-vec-tiled", "--model", "pythia-410m", "--phase",
              "decode", "--l", "600"], "--kernel"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", "--model", "gpt-5", "--n", "4"], "--model"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", "--heads", "6", "--kv-heads", "4", "--head-dim",
              "16"], "--kv-heads"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", "--model", "tinyllama-1.1b", "--n", "0"], "--n"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", "--model", "tinyllama-1.1b", "--phase", "decode",
              "--n", "4"], "--n"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", "--model", "tinyllama-1.1b", "--l", "4"], "--l"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *BASE, "--precision", "fp16"], "--precision"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *BASE, "--lmul", "2"], "--lmul"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *BASE, "--regime", "rows"], "--regime"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *BASE, "--roi", "gem5"], "--roi"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *BASE, "--ref", "/nonexistent/r.ref"], "--ref"),
    (ATTN_V, ["--kernel", "ggml-lib-vec", *BASE, "--ref", "a", "--make-ref", "b"], "--ref"),
    (ATTN_S, ["--kernel", "ggml-lib-vec", *BASE], "--kernel"),
    (ATTN_S, ["--kernel", "ggml-lib-scalar-tiled", *BASE], "--kernel"),
    (Q8_V, ["--kernel", "q8-ggml", *QBASE], "--kernel"),
    (Q8_V, ["--kernel", "q8-ggml-lib-scalar", *QBASE], "--kernel"),
    (Q8_V, ["--kernel", "q8-ggml-lib", "--rows", "4", "--cols", "33"], "--cols"),
    (Q8_V, ["--kernel", "q8-ggml-lib", "--model", "llama-3.2-1b", "--proj", "qkv"], "--proj"),
    (Q8_V, ["--kernel", "q8-ggml-lib", "--model", "llama-3.2-1b"], "--proj"),
    (Q8_V, ["--kernel", "q8-ggml-lib", *QBASE, "--fp16", "bits"], "--fp16"),
    (Q8_V, ["--kernel", "q8-ggml-lib", *QBASE, "--max-rows", "0"], "--max-rows"),
    (Q8_V, ["--kernel", "q8-ggml-lib"], "--model"),
    (Q8_S, ["--kernel", "q8-ggml-lib", *QBASE], "--kernel"),
]


@pytest.mark.parametrize("binary,args,name", BAD_ARGS)
def test_bad_arguments(binary: str, args: list[str], name: str) -> None:
    res = qemu_run(binary, args)
    assert res.rc == 2, (res.rc, res.stdout, res.stderr)
    assert res.stdout == ""
    lines = [ln for ln in res.stderr.splitlines() if not ln.startswith("vector version")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], lines


def test_tiled_refusal_says_why() -> None:
    res = qemu_run(ATTN_V, ["--kernel", "ggml-lib-vec-tiled", *BASE])
    assert "at least 64 query tokens" in res.stderr and "would run one-row" in res.stderr


@pytest.mark.parametrize("binary,args", [
    (ATTN_V, ["--kernel", "ggml-lib-vec", "--model", "pythia-410m", "--n", "4"]),
    (ATTN_S, ["--kernel", "ggml-lib-scalar", "--model", "pythia-410m", "--n", "4"]),
    (Q8_V, ["--kernel", "q8-ggml-lib", *QBASE]),
    (Q8_S, ["--kernel", "q8-ggml-lib-scalar", *QBASE]),
])
def test_roi_m5_emits_m5ops(binary: str, args: list[str]) -> None:
    assert qemu_run(binary, [*args, "--roi", "none"]).rc == 0
    res = qemu_run(binary, [*args, "--roi", "m5"])
    assert res.rc == -4 and res.stdout == "", (res.rc, res.stderr)  # SIGILL at the m5op


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
