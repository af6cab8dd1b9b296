"""The simulated system, on the host: what a uarch file describes and what a point of it
resolves to, the timing models' formulas, and which gem5 runs it.

- model.py     the uarch file's pydantic model (configs/uarch/*.yaml) and its JSON Schema
- loader.py    reading a uarch file: YAML, `extends`, cross-key checks, one-line errors
- resolved.py  the resolved system of one (uarch, VLEN, lanes) point: run.json's `system`
- latency.py   what each timing model predicts for one op
- gem5find.py  which gem5 to run; gem5check.py whether it is a patched v24.0.0.1 RISCV build
- cli.py       python -m system check | resolve | export-schema | list

configs/ holds what runs inside gem5 (run.py reads the resolved system from run.json) and
the uarch files themselves. Importing this package is cheap: the per-run runner imports
gem5find.
"""
