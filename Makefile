# vecscale: top-level entry points. Area-specific rules live in */rules.mk.
SHELL := /bin/bash
PYTHON ?= python3
GEM5 ?=
export GEM5

.PHONY: help setup setup-apt setup-qemu setup-python test test-gem5 lint workloads clean

help:
	@echo "make setup        install toolchains (Debian), Python deps (PyPI), build ggml (cached); idempotent"
	@echo "make test         run the whole test suite (pytest)"
	@echo "make test-gem5    run only the gem5-gated tests (slow: tens of minutes on 2 cores)"
	@echo "make workloads    cross-compile the RVV workloads into workloads/build/"
	@echo "make setup-ggml   build ggml's own libraries for riscv64 (part of make setup; cached)"
	@echo "make gem5         build the patched RISCV gem5.opt (GEM5_SRC=<gem5 clone>; ~1.5 h on 2 cores)"
	@echo "make sweep        run a sweep (SWEEP=smoke by default) and its analysis"
	@echo "make report       write results/<SWEEP>/report.html"
	@echo "make check-gem5   check gem5 (GEM5, else the make gem5 build): patched v24.0.0.1 RISCV, stamp"

# What building ggml's own libraries for riscv64 needs (workloads/ggml/build_ggml.py).
GGML_BUILD_PACKAGES := libstdc++-12-dev-riscv64-cross cmake ninja-build
# What a prebuilt gem5.opt links at run time (ldd); its build packages are build-gem5's.
GEM5_RUNTIME_PACKAGES := libpython3.11 libprotobuf32 libtcmalloc-minimal4 libgoogle-perftools4 \
                         libpng16-16 libelf1 zlib1g

# qemu-user is setup-qemu's: Debian 12's own (7.2) cannot run fp16 vector code (Zvfh).
# The lists above are defined first: `:=` expands them here, once.
APT_PACKAGES := clang-19 lld-19 llvm-19 gcc-riscv64-linux-gnu libc6-dev-riscv64-cross \
                binutils-riscv64-linux-gnu slurm-wlm munge chromium $(GEM5_RUNTIME_PACKAGES) \
                $(GGML_BUILD_PACKAGES)

setup: setup-apt setup-qemu setup-python setup-ggml

setup-apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) \
	    apt-get install -y -q --no-install-recommends $$missing; \
	else echo "apt packages: all present"; fi

# qemu-user >= 10 (Zvfh): on Debian 12 from bookworm-backports, added beside the machine's
# own Debian apt source (workloads/setup-qemu; idempotent).
setup-qemu: setup-apt
	workloads/setup-qemu

setup-python:
	$(PYTHON) -m pip install -q -e '.[dev]'

test: workloads
	$(PYTHON) -m ruff check .
	$(PYTHON) -m pytest -q

# The tests marked gem5 (after a patch change and `make gem5`); they skip without gem5.
test-gem5: workloads
	$(PYTHON) -m pytest -q -m gem5

lint:
	$(PYTHON) -m ruff check .

clean:
	rm -rf workloads/build

include workloads/rules.mk
-include configs/rules.mk
-include sweeps/rules.mk
-include analysis/rules.mk
