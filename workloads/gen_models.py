"""Generate the C model table (models.h) from workloads/models.yaml.

models.yaml is the single source of truth for model shapes: the host side reads it with
`workloads.models`-style loaders, the RVV binaries get it compiled in through this header.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate")


def load_models(path: Path) -> dict[str, dict[str, int]]:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not data:
        raise SystemExit(f"{path}: expected a mapping of model name -> shape")
    for name, shape in data.items():
        if not isinstance(shape, dict):
            raise SystemExit(f"{path}: {name}: expected a mapping with keys {', '.join(FIELDS)}")
        for key in FIELDS:
            value = shape.get(key)
            if not isinstance(value, int) or value <= 0:
                raise SystemExit(
                    f"{path}: {name}.{key}: expected a positive integer, got {value!r}"
                )
        if shape["heads"] % shape["kv_heads"]:
            raise SystemExit(f"{path}: {name}: heads must be a multiple of kv_heads")
    return data


def render(models: dict[str, dict[str, int]]) -> str:
    rows = "\n".join(
        f'    {{"{name}", ' + ", ".join(str(s[k]) for k in FIELDS) + "},"
        for name, s in models.items()
    )
    return (
        "/* Generated from workloads/models.yaml by gen_models.py; do not edit. */\n"
        "#pragma once\n"
        "typedef struct { const char *name; int layers, hidden, heads, kv_heads, head_dim,"
        " intermediate; } model_shape;\n"
        f"static const model_shape MODELS[] = {{\n{rows}\n}};\n"
        f"static const int N_MODELS = {len(models)};\n"
    )


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    dst.write_text(render(load_models(src)))


if __name__ == "__main__":
    main()
