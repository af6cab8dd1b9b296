"""Tools that run gem5 one point at a time, outside a sweep: `python -m tools.one` (one
workload on one uarch point) and `python -m tools.vbench table` (the timing-model
microbenchmark table in configs/data/). They use both sides: system/ to resolve the point,
sweeps/ to write the run.json configs/run.py reads."""
