# Sweep driver targets (included by the top-level Makefile).
SWEEP ?= smoke
SWEEP_ARGS ?=

.PHONY: sweep plan sweep-status bench-driver sweep-schema

# Runs the spec with its own target (a gem5 spec with neither GEM5 nor a `make gem5` build
# stops with a one-line error), then the analysis report when the analysis package provides
# one.
sweep: workloads
	@$(PYTHON) -m sweeps run '$(SWEEP)' $(SWEEP_ARGS); rc=$$?; \
	if [ $$rc -eq 2 ]; then exit 2; fi; \
	if $(PYTHON) -c "import importlib.util as u, sys; sys.exit(u.find_spec('analysis.__main__') is None)"; then \
	  $(PYTHON) -m analysis report results/$(SWEEP) && echo "report: results/$(SWEEP)/report.html"; \
	else echo "analysis report not available yet; results in results/$(SWEEP)"; fi; \
	exit $$rc

plan:
	$(PYTHON) -m sweeps plan '$(SWEEP)'

sweep-status:
	$(PYTHON) -m sweeps status '$(SWEEP)'

sweep-schema:
	$(PYTHON) -m sweeps schema

# Benchmark, not a test: plan time for a 10,000-run grid, driver overhead per trivial run.
bench-driver:
	$(PYTHON) -m sweeps.bench
