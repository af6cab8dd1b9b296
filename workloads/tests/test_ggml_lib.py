"""ggml's own kernels (workloads/src/ggml, built on the ggml library from the
llama-cpp-python sdist): self-checks on every model and phase under QEMU, an independent
numpy check of dumps, the same inputs and reference files as our own workloads, and
argument errors. The build's record and what runs in the region of interest (the path ggml
took, gem5-relevant instructions): test_ggml_lib_build.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import BUILD, ROOT, VLENS, qemu_run
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
