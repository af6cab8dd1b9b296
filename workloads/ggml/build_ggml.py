#!/usr/bin/env python3
"""Build ggml's own CPU libraries (ggml-base, ggml-cpu) for riscv64, as static libraries.

    python3 workloads/ggml/build_ggml.py [--jobs N] [--cache DIR] [--check] OUT

ggml's sources come from the llama-cpp-python sdist on PyPI (vendor/llama.cpp/ggml), fetched
with pip by pinned version and sha256; nothing of ggml is kept in the repository. The build
is cross-compiled with the project's toolchain (clang-19, lld-19, Debian's riscv64 sysroot
and libstdc++), single-threaded (no OpenMP), without llamafile's sgemm and without native CPU
detection, once per VARIANTS entry (rv64gcv: ggml's RVV code; rv64gc: its scalar code).

It is built once per key (sdist, this script, the CMake wrapper beside it, the compiler's
version) in <user cache>/vecscale/ggml/<key>/ and copied to OUT:

    OUT/include/*.h                    ggml's public headers
    OUT/<march>/libggml-{base,cpu}.a   the libraries
    OUT/<march>/ggml_build.h           version and compile flags, for the result JSON lines
    OUT/build.json                     the same facts for people and tests
    OUT/STAMP                          the key (written last)

A second run with the same key returns at once. --check exits 0 when OUT is up to date and
1 otherwise, without building.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

SDIST_PROJECT = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_FILE = f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
GGML_PREFIX = f"llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp/ggml/"
SRC_ALIAS = f"llama-cpp-python-{SDIST_VERSION}/ggml"  # the source folder as binaries name it

HERE = Path(__file__).resolve().parent
WRAPPER = HERE / "CMakeLists.txt"
CC, CXX = "clang-19", "clang++-19"
TARGETS = ("ggml-base", "ggml-cpu")
LIBS = ("libggml-base.a", "libggml-cpu.a")
HEADERS = ("ggml.h", "ggml-cpu.h", "ggml-backend.h", "ggml-alloc.h")

# The options every variant shares: a static, single-threaded, portable CPU build.
COMMON_OPTIONS = {
    "CMAKE_BUILD_TYPE": "Release",
    "BUILD_SHARED_LIBS": "OFF",
    "GGML_BACKEND_DL": "OFF",
    "GGML_NATIVE": "OFF",
    "GGML_OPENMP": "OFF",
    "GGML_LLAMAFILE": "OFF",
    "GGML_CCACHE": "OFF",
    # Only the base ISA of each variant: QEMU 7.2 (our functional check) has no Zvfh, and
    # the project's kernels are built for plain rv64gcv / rv64gc too.
    "GGML_RV_ZFH": "OFF",
    "GGML_RV_ZVFH": "OFF",
    "GGML_RV_ZICBOP": "OFF",
    "GGML_RV_ZIHINTPAUSE": "OFF",
    "GGML_RV_ZVFBFWMA": "OFF",
    "GGML_XTHEADVECTOR": "OFF",
}
VARIANTS = {"rv64gcv": {"GGML_RVV": "ON"}, "rv64gc": {"GGML_RVV": "OFF"}}
TOOLCHAIN = {
    "CMAKE_SYSTEM_NAME": "Linux",
    "CMAKE_SYSTEM_PROCESSOR": "riscv64",
    "CMAKE_C_COMPILER": CC,
    "CMAKE_CXX_COMPILER": CXX,
    "CMAKE_C_COMPILER_TARGET": "riscv64-linux-gnu",
    "CMAKE_CXX_COMPILER_TARGET": "riscv64-linux-gnu",
    "CMAKE_EXE_LINKER_FLAGS": "-fuse-ld=lld",
}


class BuildError(Exception):
    """A step failed; the message is one line for the user."""


def say(msg: str) -> None:
    print(f"ggml: {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def compiler_version() -> str:
    try:
        out = subprocess.run([CC, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError(f"{CC} not usable ({e}): run `make setup`") from e
    return out.stdout.splitlines()[0].strip()


def build_key(compiler: str) -> str:
    """What the build depends on; a change to any of it builds afresh in a new folder."""
    h = hashlib.sha256()
    for part in (SDIST_SHA256, compiler, json.dumps([COMMON_OPTIONS, VARIANTS, TOOLCHAIN])):
        h.update(part.encode() + b"\0")
    for path in (Path(__file__).resolve(), WRAPPER):
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cache_root(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vecscale" / "ggml"


def fetch_sdist(cache: Path) -> Path:
    """The sdist, from the cache when its checksum matches, else from PyPI through pip."""
    dest = cache / "sdist" / SDIST_FILE
    if dest.is_file() and sha256_file(dest) == SDIST_SHA256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{SDIST_PROJECT}=={SDIST_VERSION} --hash=sha256:{SDIST_SHA256}\n")
        say(f"fetching {SDIST_PROJECT} {SDIST_VERSION} (sdist) with pip")
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:",
             "--no-deps", "--require-hashes", "-r", str(req), "-d", tmp],
            capture_output=True, text=True)
        got = Path(tmp) / SDIST_FILE
        if proc.returncode != 0 or not got.is_file():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise BuildError(f"pip download of {SDIST_PROJECT}=={SDIST_VERSION} failed: {last}")
        if sha256_file(got) != SDIST_SHA256:  # pip checked it too; a cheap second look
            raise BuildError(f"{SDIST_FILE}: sha256 is not {SDIST_SHA256}")
        os.replace(got, dest)
    return dest


def extract_ggml(sdist: Path, dest: Path) -> Path:
    """vendor/llama.cpp/ggml of the sdist into dest/ggml (regular files and folders only)."""
    root = dest / "ggml"
    if (root / "CMakeLists.txt").is_file():
        return root
    tmp = dest / "ggml.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(sdist, "r:gz") as tar:
        for m in tar.getmembers():
            if not m.name.startswith(GGML_PREFIX) or not (m.isfile() or m.isdir()):
                continue
            rel = m.name[len(GGML_PREFIX):]
            if not rel or rel.startswith("/") or ".." in Path(rel).parts:
                continue
            out = tmp / rel
            if m.isdir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(m)
            assert src is not None
            with src, out.open("wb") as f:
                shutil.copyfileobj(src, f)
    if not (tmp / "CMakeLists.txt").is_file():
        raise BuildError(f"{SDIST_FILE} has no {GGML_PREFIX}CMakeLists.txt")
    os.replace(tmp, root)
    return root


def ggml_version(src: Path) -> str:
    text = (src / "CMakeLists.txt").read_text()
    parts = [re.search(rf"set\(GGML_VERSION_{p}\s+(\d+)\)", text) for p in
             ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        raise BuildError("ggml/CMakeLists.txt: no GGML_VERSION_MAJOR/MINOR/PATCH")
    return ".".join(m.group(1) for m in parts if m)


def run_logged(cmd: list[str], log: Path, what: str) -> None:
    with log.open("a") as f:
        f.write("$ " + shlex.join(cmd) + "\n")
        f.flush()
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        for line in tail:
            print("  " + line, file=sys.stderr)
        raise BuildError(f"{what} failed (exit {proc.returncode}); full log: {log}")


def flags_of(command: str) -> tuple[str, str]:
    """(source path, flags without compiler, include folders, output and input) of one
    compile_commands.json entry."""
    args = shlex.split(command)
    keep: list[str] = []
    src = ""
    i = 1  # args[0] is the compiler
    while i < len(args):
        a = args[i]
        if a in ("-o", "-c", "-I", "-isystem"):
            if a == "-c":
                src = args[i + 1]
            i += 2
            continue
        if a.startswith("-I") or a.startswith("-isystem"):
            i += 1
            continue
        keep.append(a)
        i += 1
    return src, " ".join(keep)


def describe_flags(build: Path, src_root: Path) -> str:
    """The compile flags of ggml-base and ggml-cpu, one group per (library, language), each
    file whose flags differ from its group's named on its own, e.g.
    'ggml-cpu C++: -O3 ...; ggml-cpu src/ggml-cpu/arch/riscv/quants.c: ...'."""
    entries = json.loads((build / "compile_commands.json").read_text())
    groups: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    for e in entries:
        out = e.get("output", "") or e["command"]
        lib = next((t for t in TARGETS if f"CMakeFiles/{t}.dir/" in out), None)
        if lib is None:
            continue
        src, flags = flags_of(e["command"])
        flags = flags.replace(str(src_root), "<ggml>")  # only in -ffile-prefix-map
        lang = "C" if src.endswith(".c") else "C++"
        rel = os.path.relpath(src, src_root) if src else "?"
        groups[f"{lib} {lang}"].append((rel, flags))
    parts = []
    for name in sorted(groups):
        common = collections.Counter(f for _, f in groups[name]).most_common(1)[0][0]
        parts.append(f"{name}: {common}")
        parts += [f"{lib_of(name)} {rel}: {f}" for rel, f in groups[name] if f != common]
    text = "; ".join(parts)
    if str(src_root) in text or str(build) in text:
        raise BuildError("compile flags name a local folder: not recorded")
    return text


def lib_of(group: str) -> str:
    return group.split(" ")[0]


def c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_variant(march: str, src: Path, work: Path, out: Path, jobs: int, log: Path) -> str:
    build = work / f"build-{march}"
    shutil.rmtree(build, ignore_errors=True)
    # ggml's asserts embed __FILE__: map the cache folder away, so that the libraries (and
    # the ids of runs made with them) do not depend on where the cache is
    prefix_map = f"-ffile-prefix-map={src}={SRC_ALIAS}"
    options = {**TOOLCHAIN, **COMMON_OPTIONS, **VARIANTS[march],
               "CMAKE_C_FLAGS": prefix_map, "CMAKE_CXX_FLAGS": prefix_map,
               "GGML_SRC_DIR": str(src), "CMAKE_EXPORT_COMPILE_COMMANDS": "ON"}
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run_logged(["cmake", "-S", str(HERE), "-B", str(build), *generator,
                *[f"-D{k}={v}" for k, v in options.items()]], log, f"cmake configure ({march})")
    run_logged(["cmake", "--build", str(build), "-j", str(jobs), "--target", *TARGETS],
               log, f"build ({march})")
    dest = out / march
    dest.mkdir(parents=True, exist_ok=True)
    for lib in LIBS:
        found = list(build.rglob(lib))
        if len(found) != 1:
            raise BuildError(f"build ({march}): expected one {lib}, found {len(found)}")
        shutil.copy2(found[0], dest / lib)
    return describe_flags(build, src)


def write_outputs(out: Path, src: Path, version: str, flags: dict[str, str],
                  seconds: float) -> None:
    inc = out / "include"
    inc.mkdir(parents=True, exist_ok=True)
    for h in HEADERS:
        shutil.copy2(src / "include" / h, inc / h)
    source = f"{SDIST_PROJECT} {SDIST_VERSION} sdist, sha256 {SDIST_SHA256}"
    for march, fl in flags.items():
        (out / march / "ggml_build.h").write_text(
            "/* Generated by workloads/ggml/build_ggml.py: what this ggml build is. */\n"
            "#pragma once\n"
            f"#define VSGGML_SOURCE {c_string(source)}\n"
            f"#define VSGGML_VERSION {c_string(version)}\n"
            f"#define VSGGML_MARCH {c_string(march)}\n"
            f"#define VSGGML_FLAGS {c_string(fl)}\n")
    info = {"source": source, "ggml_version": version, "compiler": compiler_version(),
            "options": {**COMMON_OPTIONS}, "variants": VARIANTS, "flags": flags,
            "build_seconds": round(seconds, 1)}
    (out / "build.json").write_text(json.dumps(info, indent=1) + "\n")


def complete(out: Path, key: str) -> bool:
    stamp = out / "STAMP"
    if not stamp.is_file() or stamp.read_text().strip() != key:
        return False
    need = [out / "build.json", *(out / "include" / h for h in HEADERS)]
    need += [out / m / f for m in VARIANTS for f in (*LIBS, "ggml_build.h")]
    return all(p.is_file() for p in need)


def copy_out(built: Path, out: Path, key: str) -> None:
    (out / "STAMP").unlink(missing_ok=True)
    for sub in ("include", *VARIANTS):
        shutil.rmtree(out / sub, ignore_errors=True)
        shutil.copytree(built / sub, out / sub)
    shutil.copy2(built / "build.json", out / "build.json")
    (out / "STAMP").write_text(key + "\n")


def build(out: Path, cache: Path, jobs: int) -> Path:
    key = build_key(compiler_version())
    if complete(out, key):
        say(f"up to date ({out})")
        return out
    work = cache / key
    built = work / "out"
    if not complete(built, key):
        work.mkdir(parents=True, exist_ok=True)
        log = work / "build.log"
        log.write_text("")
        t0 = time.monotonic()
        src = extract_ggml(fetch_sdist(cache), work)
        version = ggml_version(src)
        shutil.rmtree(built, ignore_errors=True)
        flags = {}
        for march in VARIANTS:
            say(f"building ggml {version} for {march} (-j{jobs}; log {log})")
            flags[march] = build_variant(march, src, work, built, jobs, log)
        seconds = time.monotonic() - t0
        write_outputs(built, src, version, flags, seconds)
        (built / "STAMP").write_text(key + "\n")
        say(f"built in {seconds:.0f} s")
    copy_out(built, out, key)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="where the libraries and headers go")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    ap.add_argument("--cache", help="cache folder (default <user cache>/vecscale/ggml)")
    ap.add_argument("--check", action="store_true", help="exit 0 if OUT is up to date, else 1")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs: must be at least 1")
    try:
        if args.check:
            return 0 if complete(args.out, build_key(compiler_version())) else 1
        build(args.out, cache_root(args.cache), args.jobs)
    except BuildError as e:
        say(f"error: {e}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
