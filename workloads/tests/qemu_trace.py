"""What a workload executes between roi_begin and roi_end, from QEMU's own log.

`qemu-riscv64 -d in_asm,exec,nochain` prints each translated block's instructions once
(in_asm) and a line for every block it executes (exec; nochain makes every execution
reach the log). Streaming that log gives, for the region of interest only: the executed
instruction count, the vector instructions among them, the count per function, and the
distinct instruction texts (mnemonic and operands, e.g. the vtype of each vsetvli). No
plugin is needed; the log is parsed as it is written and never stored.

The region starts at the first block after roi_begin's blocks and ends at the first block
of roi_end (the harness calls both around the measured call whatever --roi is; with
--roi m5 they hold the m5ops that gem5 dumps its statistics at).
"""

from __future__ import annotations

import collections
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

IN_RE = re.compile(r"^IN: ?(.*)$")
INSN_RE = re.compile(r"^0x([0-9a-f]+):\s+[0-9a-f]+\s+(\S.*?)\s*$")
TRACE_RE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/([0-9a-f]+)/[0-9a-f]+\]"
                      r" ?(.*)$")
VECTOR_RE = re.compile(r"^(vset|v[a-z0-9]+\.[vxfwims]|vl[0-9]|vs[0-9])")


@dataclass
class RoiTrace:
    insns: int = 0
    vector_insns: int = 0
    per_function: collections.Counter[str] = field(default_factory=collections.Counter)
    # distinct instruction texts executed in the ROI -> the functions they ran in
    texts: dict[str, set[str]] = field(default_factory=dict)
    # executed vector instructions (vset* excluded) by (mnemonic, vtype as "e32,m8"), the
    # vtype being the last vset* executed before them
    vops: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    stdout: str = ""
    rc: int = 0


def normalise(text: str) -> str:
    """'vsetvli a0,zero,e32,m8,ta,ma  # comment' -> 'vsetvli a0, zero, e32, m8, ta, ma'."""
    text = text.split("#", 1)[0].strip()
    parts = text.split(None, 1)
    if len(parts) == 1:
        return parts[0]
    ops = ", ".join(o.strip() for o in parts[1].split(","))
    return f"{parts[0]} {ops}"


def trace_roi(binary: Path, args: list[str], vlen: int, timeout: float = 600,
              stop_after_roi: bool = False) -> RoiTrace:
    """Runs binary under QEMU and traces its ROI. stop_after_roi: end QEMU as soon as the
    ROI is over (for counts only: no JSON line, rc is then -9)."""
    cpu = f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0"
    proc = subprocess.Popen(
        ["qemu-riscv64", "-cpu", cpu, "-d", "in_asm,exec,nochain", "-D", "/dev/stderr",
         str(binary), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    blocks: dict[tuple[str, str], list[str]] = {}  # (pc, tb flags) -> instruction texts
    by_pc: dict[str, list[str]] = {}
    pending: list[tuple[str, str]] = []  # the block being read: (pc, text) per instruction
    out = RoiTrace()
    state = "before"  # before -> in_begin -> inside -> done
    vtype = "?"  # no vset* seen yet inside the region
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("Trace"):
            m = TRACE_RE.match(line)
            if not m:
                continue
            pc, flags, sym = m.group(1).lstrip("0") or "0", m.group(2), m.group(3).strip()
            if pending and pending[0][0] == pc:
                blocks[(pc, flags)] = by_pc[pc] = [t for _, t in pending]
            pending = []
            if state == "before" and sym == "roi_begin":
                state = "in_begin"
            elif state == "in_begin" and sym != "roi_begin":
                state = "inside"
            if state == "inside":
                if sym == "roi_end":
                    state = "done"
                    if stop_after_roi:
                        proc.kill()
                        break
                    continue
                body = blocks.get((pc, flags)) or by_pc.get(pc)
                if body is None:
                    raise AssertionError(f"no instructions logged for block at 0x{pc} ({sym})")
                out.insns += len(body)
                out.per_function[sym] += len(body)
                for t in body:
                    if VECTOR_RE.match(t):
                        out.vector_insns += 1
                        if t.startswith("vset"):
                            vtype = ",".join(t.split(", ")[2:4])
                        else:
                            out.vops[(t.split(None, 1)[0], vtype)] += 1
                    out.texts.setdefault(t, set()).add(sym)
        elif line.startswith("IN:"):
            pending = []
        else:
            m = INSN_RE.match(line)
            if m:
                pending.append((m.group(1).lstrip("0") or "0", normalise(m.group(2))))
    proc.wait(timeout=timeout)
    assert proc.stdout is not None
    out.stdout = proc.stdout.read()
    out.rc = proc.returncode
    if state != "done":
        raise AssertionError(f"the region of interest was not traced through (state {state})")
    return out


def main(argv: list[str] | None = None) -> int:
    """python3 workloads/tests/qemu_trace.py BINARY VLEN ARGS...: one JSON line with the
    ROI's executed instructions, vector instructions and the top functions."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("binary", type=Path)
    ap.add_argument("vlen", type=int)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    t = trace_roi(ns.binary, ns.args, ns.vlen, timeout=7200, stop_after_roi=True)
    print(json.dumps({"binary": ns.binary.name, "vlen": ns.vlen, "args": ns.args,
                      "roi_insns": t.insns, "roi_vector_insns": t.vector_insns,
                      "top_functions": dict(t.per_function.most_common(8))}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
