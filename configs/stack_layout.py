"""A simulated process's initial stack that does not depend on paths or arguments.

gem5's SE mode (RiscvProcess::argsInit) puts 16 random bytes, the argv and envp strings,
their pointers and the auxiliary vector at the top of the stack; the program's own stack
(locals, vector spill slots) starts below them. So the byte length of the command line
moves every stack address relative to cache lines and sets, and with it the cycles of the
same binary computing the same thing: up to 7% in fa-v prefill (results/reference/README.md,
"Memory layout"). argv[0] is the binary's absolute path and --ref an absolute path too, so
without a fix the cycles would depend on where the checkout lies.

`padded_env` adds one environment variable sized so that strings plus pointers take exactly
`area + shift` bytes: the stack pointer at entry is then the same for every run, and
`shift` moves it down by that many bytes on purpose (layout-sensitivity studies).
Imported inside gem5 (run.py) and by the tests: standard library only (and vecscale/vocab.py,
which is too).
"""

from __future__ import annotations

from vecscale.vocab import STACK_SHIFT_ALIGN as SHIFT_ALIGN

PAD_VAR = "VECSCALE_STACK_PAD"
ADDR_BYTES = 8  # rv64 pointers


class StackLayoutError(ValueError):
    pass


def used_bytes(argv: list[str], env: list[str]) -> int:
    """Bytes the strings (NUL-terminated) and their pointers take (terminators excluded:
    their count is the same for every run)."""
    strings = sum(len(s.encode()) + 1 for s in (*argv, *env))
    return strings + ADDR_BYTES * (len(argv) + len(env))


def padded_env(argv: list[str], env: list[str], area: int, shift: int = 0) -> list[str]:
    """env plus PAD_VAR=xx..x such that used_bytes(argv, result) == area + shift."""
    if shift < 0 or shift % SHIFT_ALIGN:
        raise StackLayoutError(f"stack shift {shift}: expected a multiple of {SHIFT_ALIGN} "
                               ">= 0")
    base = used_bytes(argv, env) + ADDR_BYTES + len(PAD_VAR) + 2  # pointer, '=', NUL
    fill = area + shift - base
    if fill < 0:
        raise StackLayoutError(f"command line and environment take {base} bytes, more than "
                               f"the stack area of {area}: raise workload.stack.area")
    return [*env, f"{PAD_VAR}={'x' * fill}"]
