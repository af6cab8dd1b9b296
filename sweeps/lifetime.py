"""Runs die with their driver: a parent-death signal for each child process (Linux).

The driver starts each run's `bash cmd.sh` (which execs the runner) with
``preexec_fn=die_with_parent(SIGTERM)``: when the driver ends in any way, kill -9 included,
the kernel sends the runner SIGTERM, and the runner stops its target as it does on Ctrl-C
(SIGINT to the target's process group, SIGKILL after the grace period) and records the run
`killed`, which the next plain `run` resumes. The runner starts its target with
``die_with_parent(SIGKILL)``: if the runner itself is killed hard, nobody is left to record
the run, so the target goes at once.

Why prctl(PR_SET_PDEATHSIG) and not a supervisor process watching a pipe: the kernel
delivers it even when the parent is SIGKILLed, it needs no extra process or polling, and
the runner already turns SIGTERM into a clean stop, so the driver-side change is one
argument to Popen. Limits: Linux only (elsewhere this is a no-op and a killed driver's
runs finish as orphans, as before; the run lock still keeps a new driver from running them
twice); the signal goes to the direct child only, hence one at each level; it fires when
the *thread* that forked the child ends, and the driver and runner fork from their main
thread; the setting survives execve (bash -> python) but not a set-uid binary.

Standard library only and cheap to import: the runner imports this in every run (ctypes is
loaded only when a child is about to be started).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.prctl
        fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]
        fn.restype = ctypes.c_int
        return fn
    except (OSError, AttributeError, ImportError):
        return None


def die_with_parent(sig: int) -> Callable[[], None] | None:
    """A preexec_fn that makes the child receive `sig` when this process (the thread calling
    Popen) ends; None where that is not available. Everything that may fail or allocate much
    is done here, before the fork; the returned function only makes two system calls."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return preexec
