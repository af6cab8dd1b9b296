# gem5-side entry points. `make gem5` builds the patched RISCV gem5.opt outside the tree
# (gem5-patches/build-gem5); everything that runs gem5 takes GEM5 when set, else that build.
GEM5_SRC ?=
GEM5_BUILD_DIR ?=
GEM5_JOBS ?=

.PHONY: gem5 apply-patches check-gem5

# Empty variables are not passed: the script's defaults apply (public gem5 repository,
# the user's cache folder, all cores).
gem5:
	@$(if $(GEM5_SRC),GEM5_SRC='$(GEM5_SRC)') $(if $(GEM5_BUILD_DIR),GEM5_BUILD_DIR='$(GEM5_BUILD_DIR)') \
	  $(if $(GEM5_JOBS),GEM5_JOBS='$(GEM5_JOBS)') gem5-patches/build-gem5

apply-patches:
	@test -n "$(GEM5_SRC)" || { echo "error: GEM5_SRC is not set (path to a gem5 v24.0.0.1 checkout)"; exit 2; }
	@test -d "$(GEM5_SRC)/.git" || { echo "error: GEM5_SRC=$(GEM5_SRC) is not a git checkout"; exit 2; }
	git -C "$(GEM5_SRC)" am $(abspath $(sort $(wildcard gem5-patches/*.patch)))

check-gem5:
	@$(PYTHON) -m system.gem5check

# One workload on one (uarch, VLEN, lanes) point, e.g.
#   make run-one UARCH=vitruvius-plus VLEN=2048 LANES=16 \
#        ARGS="--kernel fa-v --model tinyllama-1.1b --phase prefill --n 64"
UARCH ?= vitruvius-plus
VLEN ?= 2048
LANES ?= 16
ARGS ?= --kernel fa-v --model tinyllama-1.1b --phase prefill --n 64
.PHONY: run-one vbench-table
run-one: workloads
	@$(PYTHON) -m tools.one $(UARCH) $(VLEN) $(LANES) -- $(ARGS)

# Timing microbenchmark table (configs/data/vbench.csv), measured in gem5.
vbench-table: workloads
	$(PYTHON) -m tools.vbench table
