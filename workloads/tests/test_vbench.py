"""The timing microbenchmark computes what it claims on QEMU, at every VLEN QEMU has."""

from __future__ import annotations

import pytest
from conftest import BUILD, qemu_run

OPS = ["vfadd", "vfmacc", "vfredusum", "vslideup", "vle32", "vse32", "vsetvli"]


def test_vbench_is_built() -> None:
    assert (BUILD / "vbench").is_file()


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("vl", ["max", "half", "1"])
def test_vbench_self_check(op: str, vlen: int, vl: str) -> None:
    deps = ["indep"] if op in ("vle32", "vse32") else ["chain", "indep"]
    for dep in deps:
        res = qemu_run("vbench", ["--op", op, "--dep", dep, "--iters", "50", "--vl", vl], vlen)
        assert res.rc == 0, res.stderr
        rec = res.record
        assert rec["pass"] is True and rec["vlen"] == vlen
        vlmax = vlen // 32
        assert rec["vl"] == {"max": vlmax, "half": vlmax // 2, "1": 1}[vl]
        assert rec["insts"] == 128 * 50


@pytest.mark.parametrize("op", ["vfmacc", "vsetvli"])
def test_vbench_perturbed_result_fails(op: str) -> None:
    res = qemu_run("vbench", ["--op", op, "--iters", "10", "--test-perturb"], 512)
    assert res.rc == 1 and res.record["pass"] is False


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--op", "vfdiv"], "--op"),
        (["--op", "vle32", "--dep", "chain"], "--dep"),
        (["--op", "vfadd", "--vl", "999"], "--vl"),
        (["--op", "vfadd", "--iters", "0"], "--iters"),
        (["--op", "vfadd", "--bogus"], "--bogus"),
    ],
)
def test_vbench_bad_arguments(args: list[str], needle: str) -> None:
    res = qemu_run("vbench", args, 256)
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.rc == 2 and len(lines) == 1 and needle in lines[0]
