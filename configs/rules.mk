# gem5-side entry points. vecscale never builds gem5: GEM5 points to your patched build.
GEM5_SRC ?=

.PHONY: apply-patches check-gem5

apply-patches:
	@test -n "$(GEM5_SRC)" || { echo "error: GEM5_SRC is not set (path to a gem5 v24.0.0.1 checkout)"; exit 2; }
	@test -d "$(GEM5_SRC)/.git" || { echo "error: GEM5_SRC=$(GEM5_SRC) is not a git checkout"; exit 2; }
	git -C "$(GEM5_SRC)" am $(abspath $(sort $(wildcard gem5-patches/*.patch)))

check-gem5:
	@$(PYTHON) -m sweeps.gem5check
