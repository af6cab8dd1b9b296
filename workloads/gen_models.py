"""Generate the C model table (models.h) from workloads/models.yaml.

models.yaml is the single source of truth for model shapes: the host side reads it with
`workloads.models`, the RVV binaries get it compiled in through this header.
"""

from __future__ import annotations

import sys
from pathlib import Path

from workloads.models import ARCHS, FIELDS, ModelsError, read_models


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


def render_layer(models: dict[str, dict]) -> str:
    """layer_models.h: what the layer workload needs besides the shape, in its own header
    so that models.h (included by every workload) does not change with it."""
    rows = []
    for name, s in models.items():
        sc = s["rope_scaling"] or [0, 0, 0, 0]
        rows.append(
            f'    {{"{name}", LAYER_ARCH_{s["arch"].upper()}, {s["norm_eps"]!r}f, '
            f'{s["rope_theta"]!r}f, {int(s["rope"] == "neox")}, {s["rope_dims"]}, '
            + ", ".join(f"{float(x)!r}f" for x in sc) + "},")
    archs = ", ".join(f"LAYER_ARCH_{a.upper()}" for a in ARCHS)
    names = ", ".join(f'"{a}"' for a in ARCHS)
    body = "\n".join(rows)
    return (
        "/* Generated from workloads/models.yaml by gen_models.py --layer; do not edit. */\n"
        "#pragma once\n"
        f"enum {{ {archs} }};\n"
        f"static const char *const LAYER_ARCH_NAMES[] = {{{names}}};\n"
        "typedef struct {\n"
        "    const char *name;\n"
        "    int arch;\n"
        "    float norm_eps, rope_theta;\n"
        "    int rope_neox, rope_dims;\n"
        "    /* llama3 frequency scaling; factor 0 = none */\n"
        "    float rs_factor, rs_low, rs_high, rs_orig;\n"
        "} layer_params;\n"
        f"static const layer_params LAYER_PARAMS[] = {{\n{body}\n}};\n"
        f"static const int N_LAYER_PARAMS = {len(models)};\n"
    )


def main() -> None:
    layer = sys.argv[1:2] == ["--layer"]
    args = sys.argv[2:] if layer else sys.argv[1:]
    src, dst = Path(args[0]), Path(args[1])
    try:
        models = read_models(src)
    except ModelsError as e:
        raise SystemExit(str(e)) from None
    dst.write_text(render_layer(models) if layer else render(models))


if __name__ == "__main__":
    main()
