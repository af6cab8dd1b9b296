# vecscale: top-level entry points. Area-specific rules live in */rules.mk.
SHELL := /bin/bash
PYTHON ?= python3
GEM5 ?=
export GEM5

.PHONY: help setup setup-apt setup-python test lint workloads clean

help:
	@echo "make setup        install toolchains (Debian) and Python deps (PyPI); idempotent"
	@echo "make test         run the whole test suite (pytest)"
	@echo "make workloads    cross-compile the RVV workloads into workloads/build/"
	@echo "make sweep        run a sweep (SWEEP=smoke by default) and its analysis"
	@echo "make report       write results/<SWEEP>/report.html"
	@echo "make check-gem5   check that GEM5 is a patched v24.0.0.1 RISCV build"

APT_PACKAGES := clang-19 lld-19 llvm-19 gcc-riscv64-linux-gnu libc6-dev-riscv64-cross qemu-user \
                binutils-riscv64-linux-gnu slurm-wlm munge chromium

setup: setup-apt setup-python

setup-apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) \
	    apt-get install -y -q --no-install-recommends $$missing; \
	else echo "apt packages: all present"; fi

setup-python:
	$(PYTHON) -m pip install -q -e '.[dev]'

test: workloads
	$(PYTHON) -m ruff check .
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check .

clean:
	rm -rf workloads/build

include workloads/rules.mk
-include configs/rules.mk
-include sweeps/rules.mk
-include analysis/rules.mk
