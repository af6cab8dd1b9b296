# gem5-side entry points. vecscale never builds gem5: GEM5 points to your patched build.
GEM5_SRC ?=

.PHONY: apply-patches check-gem5

apply-patches:
	@test -n "$(GEM5_SRC)" || { echo "error: GEM5_SRC is not set (path to a gem5 v24.0.0.1 checkout)"; exit 2; }
	@test -d "$(GEM5_SRC)/.git" || { echo "error: GEM5_SRC=$(GEM5_SRC) is not a git checkout"; exit 2; }
	git -C "$(GEM5_SRC)" am $(abspath $(sort $(wildcard gem5-patches/*.patch)))

check-gem5:
	@$(PYTHON) -m sweeps.gem5check

# One workload on one (uarch, VLEN, lanes) point, e.g.
#   make run-one UARCH=vitruvius-plus VLEN=2048 LANES=16 \
#        ARGS="--kernel fa-v --model tinyllama-1.1b --phase prefill --n 64"
UARCH ?= vitruvius-plus
VLEN ?= 2048
LANES ?= 16
ARGS ?= --kernel fa-v --model tinyllama-1.1b --phase prefill --n 64
.PHONY: run-one vbench-table
run-one: workloads
	@$(PYTHON) -m sweeps.one $(UARCH) $(VLEN) $(LANES) -- $(ARGS)

# Timing microbenchmark table (configs/data/vbench.csv), measured in gem5.
vbench-table: workloads
	$(PYTHON) -m sweeps.vbench table
