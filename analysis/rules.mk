# Analysis targets (included by the top-level Makefile).
SWEEP ?= smoke

.PHONY: report bench-analysis

# results/$(SWEEP)/report.html (also writes collected.csv, tables/ and figures/)
report:
	$(PYTHON) -m analysis report results/$(SWEEP)

# Benchmark, not a test: parse 10,000 stats.txt files (replicated from
# analysis/tests/data/real/ or the realistic test file) with analysis.stats and with a
# regex-per-line parser; prints both times and the ratio.
BENCH_N ?= 10000
bench-analysis:
	$(PYTHON) -m analysis.bench -n $(BENCH_N)
