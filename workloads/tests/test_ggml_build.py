"""workloads/ggml/build_ggml.py: the parts that need neither the network nor a compiler
(flag records, safe extraction, the sdist's checksum, the cache key, --check)."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest
from conftest import BUILD, ROOT

SCRIPT = ROOT / "workloads" / "ggml" / "build_ggml.py"


@pytest.fixture(scope="module")
def bg() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_ggml", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["build_ggml"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_flags_of_drops_compiler_paths_and_files(bg: ModuleType) -> None:
    src, flags = bg.flags_of("/usr/bin/clang-19 --target=riscv64-linux-gnu -DX=1 -I/a/b "
                             "-I /c -isystem /d -O3 -march=rv64gcv -o out.o -c /s/ops.cpp")
    assert src == "/s/ops.cpp"
    assert flags == "--target=riscv64-linux-gnu -DX=1 -O3 -march=rv64gcv"


def write_db(build: Path, src: Path, entries: list[tuple[str, str, str]]) -> None:
    build.mkdir(parents=True, exist_ok=True)
    db = [{"directory": str(build), "file": str(src / f),
           "output": f"ggml/src/CMakeFiles/{target}.dir/{f}.o",
           "command": f"clang-19 {flags} -I{src}/include -o x.o -c {src / f}"}
          for target, f, flags in entries]
    (build / "compile_commands.json").write_text(json.dumps(db))


def test_describe_flags_groups_by_library_and_language(bg: ModuleType, tmp_path: Path) -> None:
    src, build = tmp_path / "ggml", tmp_path / "b"
    write_db(build, src, [
        ("ggml-base", "src/ggml.c", "-O3 -std=gnu11"),
        ("ggml-base", "src/ggml-alloc.c", "-O3 -std=gnu11"),
        ("ggml-cpu", "src/ggml-cpu/ops.cpp", "-O3 -march=rv64gcv -std=gnu++17"),
        ("ggml-cpu", "src/ggml-cpu/ggml-cpu.c", "-O3 -march=rv64gcv -std=gnu11"),
        ("ggml-cpu", "src/ggml-cpu/quants.c", "-O3 -march=rv64gcv -std=gnu11"),
        ("ggml-cpu", "src/ggml-cpu/arch/riscv/quants.c",
         "-O3 -march=rv64gcv -std=gnu11 -fno-integrated-as"),
        ("ggml", "src/ggml-backend-reg.cpp", "-O2"),  # not built: not recorded
    ])
    text = bg.describe_flags(build, src)
    assert text == ("ggml-base C: -O3 -std=gnu11; "
                    "ggml-cpu C: -O3 -march=rv64gcv -std=gnu11; "
                    "ggml-cpu src/ggml-cpu/arch/riscv/quants.c: "
                    "-O3 -march=rv64gcv -std=gnu11 -fno-integrated-as; "
                    "ggml-cpu C++: -O3 -march=rv64gcv -std=gnu++17")


def test_describe_flags_names_the_source_folder_and_refuses_others(bg: ModuleType,
                                                                   tmp_path: Path) -> None:
    src, build = tmp_path / "ggml", tmp_path / "b"
    write_db(build, src, [("ggml-base", "src/ggml.c", f"-O3 -ffile-prefix-map={src}=g")])
    assert bg.describe_flags(build, src) == "ggml-base C: -O3 -ffile-prefix-map=<ggml>=g"
    write_db(build, src, [("ggml-base", "src/ggml.c", f"-O3 -fprofile-dir={build}")])
    with pytest.raises(bg.BuildError, match="local folder"):
        bg.describe_flags(build, src)


def make_sdist(path: Path, bg: ModuleType, members: dict[str, bytes],
               links: tuple[str, ...] = ()) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)


def test_extract_takes_only_ggml_regular_files(bg: ModuleType, tmp_path: Path) -> None:
    p = bg.GGML_PREFIX
    sdist = tmp_path / "s.tar.gz"
    make_sdist(sdist, bg, {
        p + "CMakeLists.txt": b"set(GGML_VERSION_MAJOR 0)\nset(GGML_VERSION_MINOR 25)\n"
                              b"set(GGML_VERSION_PATCH 3)\n",
        p + "src/ggml.c": b"int x;\n",
        p + "../escape.txt": b"no",
        "llama_cpp_python-0.3.36/setup.py": b"no",
    }, links=(p + "src/link",))
    root = bg.extract_ggml(sdist, tmp_path / "w")
    files = sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file())
    assert files == ["CMakeLists.txt", "src/ggml.c"]
    assert not (tmp_path / "w" / "escape.txt").exists()
    assert not (root / "src" / "link").exists()
    assert bg.ggml_version(root) == "0.25.3"
    assert bg.extract_ggml(sdist, tmp_path / "w") == root  # second time: already there


def test_extract_refuses_an_sdist_without_ggml(bg: ModuleType, tmp_path: Path) -> None:
    sdist = tmp_path / "s.tar.gz"
    make_sdist(sdist, bg, {"llama_cpp_python-0.3.36/setup.py": b"x"})
    with pytest.raises(bg.BuildError, match="CMakeLists.txt"):
        bg.extract_ggml(sdist, tmp_path / "w")


def test_ggml_version_needs_all_parts(bg: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text("set(GGML_VERSION_MAJOR 0)\n")
    with pytest.raises(bg.BuildError, match="GGML_VERSION"):
        bg.ggml_version(tmp_path)


def test_fetch_uses_a_cached_sdist_with_the_right_checksum(
        bg: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = tmp_path / "sdist" / bg.SDIST_FILE
    cached.parent.mkdir()
    cached.write_bytes(b"an sdist")
    monkeypatch.setattr(bg, "SDIST_SHA256", hashlib.sha256(b"an sdist").hexdigest())

    def no_pip(*a: object, **k: object) -> None:
        raise AssertionError("pip must not run")

    monkeypatch.setattr(bg.subprocess, "run", no_pip)
    assert bg.fetch_sdist(tmp_path) == cached


def fake_pip(content: bytes | None, rc: int = 0):
    def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess:
        assert cmd[1:4] == ["-m", "pip", "download"] and "--require-hashes" in cmd
        req = Path(cmd[cmd.index("-r") + 1]).read_text()
        assert req.startswith("llama-cpp-python==0.3.36 --hash=sha256:")
        if content is not None:
            dest = Path(cmd[cmd.index("-d") + 1]) / "llama_cpp_python-0.3.36.tar.gz"
            dest.write_bytes(content)
        return subprocess.CompletedProcess(cmd, rc, "", "ERROR: THESE PACKAGES DO NOT MATCH\n")
    return run


def test_fetch_refuses_a_wrong_checksum(bg: ModuleType, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "sdist" / bg.SDIST_FILE
    stale.parent.mkdir()
    stale.write_bytes(b"stale")  # a cached file with the wrong checksum is fetched again
    monkeypatch.setattr(bg.subprocess, "run", fake_pip(b"tampered"))
    with pytest.raises(bg.BuildError, match="sha256"):
        bg.fetch_sdist(tmp_path)
    monkeypatch.setattr(bg.subprocess, "run", fake_pip(None, rc=1))
    with pytest.raises(bg.BuildError, match="DO NOT MATCH"):
        bg.fetch_sdist(tmp_path)


def test_key_follows_options_and_compiler(bg: ModuleType,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    k = bg.build_key("clang 19.1.7")
    assert k == bg.build_key("clang 19.1.7") and len(k) == 16
    assert k != bg.build_key("clang 19.1.8")
    monkeypatch.setitem(bg.COMMON_OPTIONS, "GGML_OPENMP", "ON")
    assert k != bg.build_key("clang 19.1.7")


def test_check(bg: ModuleType, tmp_path: Path) -> None:
    """--check: 1 for a folder without a build, 0 for the one `make workloads` made."""
    assert bg.main(["--check", str(tmp_path)]) == 1
    assert bg.main(["--check", str(BUILD / "ggml")]) == 0
    stamp = BUILD / "ggml" / "STAMP"
    key, st = stamp.read_text(), stamp.stat()
    try:  # a stale key is not up to date
        stamp.write_text("0" * 16 + "\n")
        assert bg.main(["--check", str(BUILD / "ggml")]) == 1
    finally:  # as it was, mtime too (make compares it with the binaries)
        stamp.write_text(key)
        os.utime(stamp, ns=(st.st_atime_ns, st.st_mtime_ns))
