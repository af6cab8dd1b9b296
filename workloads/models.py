"""Model shapes: workloads/models.yaml, the one list the host code and the C workloads read
(gen_models.py compiles it into build/models.h)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

MODELS_FILE = Path(__file__).resolve().parent / "models.yaml"
FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate")
#: what the layer workload also needs (models.yaml says where each comes from); kept apart
#: from FIELDS so that models.h, and every binary but the layer's, stay as they were
ARCHS = ("llama", "qwen2", "gptneox")
ROPE_MODES = ("norm", "neox")
LAYER_FIELDS = ("arch", "norm_eps", "rope_theta", "rope", "rope_dims", "rope_scaling")


class ModelsError(ValueError):
    """models.yaml is unreadable or malformed (one line naming the file and key)."""


def read_models(path: Path = MODELS_FILE) -> dict[str, dict[str, int]]:
    """Model name -> shape, every field a positive integer and heads a multiple of kv_heads."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ModelsError(f"{path}: cannot read ({' '.join(str(e).split())[:120]})") from None
    if not isinstance(data, dict) or not data:
        raise ModelsError(f"{path}: expected a mapping of model name -> shape")
    for name, shape in data.items():
        if not isinstance(shape, dict):
            raise ModelsError(f"{path}: {name}: expected a mapping with keys {', '.join(FIELDS)}")
        for key in FIELDS:
            value = shape.get(key)
            if not isinstance(value, int) or value <= 0:
                raise ModelsError(f"{path}: {name}.{key}: expected a positive integer, got "
                                  f"{value!r}")
        if shape["heads"] % shape["kv_heads"]:
            raise ModelsError(f"{path}: {name}: heads must be a multiple of kv_heads")
        if problem := _layer_problem(shape):
            raise ModelsError(f"{path}: {name}.{problem}")
    return data


def _layer_problem(shape: dict) -> str | None:
    """What is wrong with a model's layer fields ("key: ..."), or None."""
    checks = {
        "arch": (lambda v: v in ARCHS, f"one of {', '.join(ARCHS)}"),
        "norm_eps": (lambda v: isinstance(v, float) and 0 < v < 1, "a float in (0, 1)"),
        "rope_theta": (lambda v: isinstance(v, float) and v > 1, "a float > 1"),
        "rope": (lambda v: v in ROPE_MODES, f"one of {', '.join(ROPE_MODES)}"),
        "rope_dims": (lambda v: isinstance(v, int) and 2 <= v <= shape["head_dim"] and v % 2 == 0,
                      "an even integer in [2, head_dim]"),
        "rope_scaling": (lambda v: isinstance(v, list) and len(v) in (0, 4)
                         and all(isinstance(x, int | float) and x > 0 for x in v),
                         "[] or [factor, low_freq_factor, high_freq_factor, original_max_pos]"),
    }
    for key, (ok, what) in checks.items():
        value = shape.get(key)
        if not ok(value):
            return f"{key}: expected {what}, got {value!r}"
    return None


@lru_cache(maxsize=4)
def load_models(path: Path = MODELS_FILE) -> dict[str, dict[str, int]]:
    """read_models(), read once per process."""
    return read_models(path)
