"""The padding that gives every gem5 run the same initial stack (configs/stack_layout.py),
checked against gem5's own arithmetic (RiscvProcess::argsInit, rv64) without gem5."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "stack_layout", Path(__file__).resolve().parent.parent / "stack_layout.py")
stack_layout = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(stack_layout)

BASE = 0x7FFF_F000  # any stack base; gem5's is fixed per run


def gem5_entry_sp(argv: list[str], env: list[str], auxv_entries: int = 8) -> int:
    """The stack pointer at the program's entry, computed as gem5 v24.0.0.1 does."""
    top = BASE - 16  # AT_RANDOM bytes
    top -= sum(len(s.encode()) + 1 for s in (*argv, *env))
    top &= -8
    top -= (1 + len(argv)) * 8 + (1 + len(env)) * 8 + 8 + 2 * 8 * auxv_entries
    return top & -16


CASES = [
    ["/a/workloads/build/attention", "--kernel", "fa-v"],
    ["/a/much/longer/checkout/path/workloads/build/attention", "--kernel", "fa-v",
     "--block-c", "64", "--ref", "/somewhere/else/results/edge/refs/0123456789abcdef.ref"],
    ["attention", "--kernel", "ggml-vec", "--model", "llama-3.2-1b", "--phase", "decode",
     "--l", "512", "--seed", "1", "--roi", "m5", "--unroll", "4", "--r", "4"],
    ["x" * 7, "é"],  # odd lengths, a multibyte character
]


def test_entry_stack_pointer_is_independent_of_the_command_line() -> None:
    sps = set()
    for argv in CASES:
        env = stack_layout.padded_env(argv, [], 4096)
        assert stack_layout.used_bytes(argv, env) == 4096
        sps.add(gem5_entry_sp(argv, env))
    assert len(sps) == 1
    # without the padding the same command lines give different stack pointers
    assert len({gem5_entry_sp(argv, []) for argv in CASES}) > 1


@pytest.mark.parametrize("shift", [16, 32, 48, 1024])
def test_shift_moves_the_stack_down_by_exactly_that(shift: int) -> None:
    for argv in CASES:
        base = gem5_entry_sp(argv, stack_layout.padded_env(argv, [], 4096))
        moved = gem5_entry_sp(argv, stack_layout.padded_env(argv, [], 4096, shift))
        assert base - moved == shift


def test_existing_environment_is_kept() -> None:
    env = stack_layout.padded_env(["a"], ["LANG=C"], 512)
    assert env[0] == "LANG=C" and env[1].startswith(stack_layout.PAD_VAR + "=")


@pytest.mark.parametrize("argv, area, shift, msg", [
    (["x" * 5000], 4096, 0, "more than the stack area of 4096"),
    (["a"], 4096, 8, "multiple of 16"),
    (["a"], 4096, -16, "multiple of 16"),
])
def test_errors_say_what_is_wrong(argv: list[str], area: int, shift: int, msg: str) -> None:
    with pytest.raises(stack_layout.StackLayoutError, match=msg):
        stack_layout.padded_env(argv, [], area, shift)
