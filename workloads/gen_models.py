"""Generate the C model table (models.h) from workloads/models.yaml.

models.yaml is the single source of truth for model shapes: the host side reads it with
`workloads.models`, the RVV binaries get it compiled in through this header.
"""

from __future__ import annotations

import sys
from pathlib import Path

from workloads.models import FIELDS, ModelsError, read_models


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
    try:
        models = read_models(src)
    except ModelsError as e:
        raise SystemExit(str(e)) from None
    dst.write_text(render(models))


if __name__ == "__main__":
    main()
