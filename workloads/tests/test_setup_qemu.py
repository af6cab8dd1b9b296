"""workloads/setup-qemu (part of `make setup`): the bookworm-backports apt source it would add,
derived from sample apt configurations (--print-source reads APT_SOURCES_DIR and
APT_SOURCES_LIST instead of /etc/apt), and the QEMU the tests run on."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import ROOT

TOOL = ROOT / "workloads" / "setup-qemu"


def derive(tmp_path: Path, sources: dict[str, str], main_list: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    d = tmp_path / "sources.list.d"
    d.mkdir()
    for name, text in sources.items():
        (d / name).write_text(text)
    main = tmp_path / "sources.list"
    if main_list is not None:
        main.write_text(main_list)
    env = {"APT_SOURCES_DIR": str(d), "APT_SOURCES_LIST": str(main), "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(TOOL), "--print-source"], capture_output=True, text=True,
                          env=env)


DEBIAN_DEB822 = """Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def test_deb822_source_is_copied_with_the_backports_suite(tmp_path: Path) -> None:
    r = derive(tmp_path, {"debian.sources": DEBIAN_DEB822})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "sources", "Types: deb", "URIs: http://mirror.example/debian",
        "Suites: bookworm-backports", "Components: main contrib",
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"]


def test_disabled_and_source_only_stanzas_are_skipped(tmp_path: Path) -> None:
    text = ("Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nComponents: main\n"
            "Enabled: no\n\nTypes: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n"
            "Components: main\n\nTypes: deb deb-src\nURIs: http://on.example/debian\n"
            "Suites: bookworm\nComponents: main\nSigned-By:\n"
            " -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n -----END PGP PUBLIC KEY BLOCK-----\n")
    r = derive(tmp_path, {"a.sources": text})
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[:4] == ["sources", "Types: deb", "URIs: http://on.example/debian",
                       "Suites: bookworm-backports"]
    assert " -----END PGP PUBLIC KEY BLOCK-----" in out  # an inline key is kept whole


def test_one_line_sources_list(tmp_path: Path) -> None:
    main = ("# deb http://old.example/debian bookworm main\n"
            "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main non-free\n"
            "deb http://m.example/debian-security bookworm-security main\n")
    r = derive(tmp_path, {}, main)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "list", "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm-backports "
        "main non-free"]


def test_nothing_to_add_when_backports_is_there(tmp_path: Path) -> None:
    have = DEBIAN_DEB822 + "\nTypes: deb\nURIs: http://mirror.example/debian\n" \
        "Suites: bookworm-backports\nComponents: main\n"
    r = derive(tmp_path, {"debian.sources": have})
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    (tmp_path / "one-line").mkdir()
    r = derive(tmp_path / "one-line", {}, "deb http://m.example/debian bookworm main\n"
               "deb http://m.example/debian bookworm-backports main\n")
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr


def test_no_debian_source_is_one_line_error(tmp_path: Path) -> None:
    r = derive(tmp_path, {"other.sources": "Types: deb\nURIs: http://x.example/apt\n"
                                           "Suites: stable\nComponents: main\n"})
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bookworm" in lines[0]


def test_the_tests_run_on_qemu_10() -> None:
    """What `make setup` installs: the QEMU under the whole test suite is 10 or newer."""
    out = subprocess.run(["qemu-riscv64", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    assert m and int(m.group(1)) >= 10, out
