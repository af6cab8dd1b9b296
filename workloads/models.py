"""Model shapes: workloads/models.yaml, the one list the host code and the C workloads read
(gen_models.py compiles it into build/models.h)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

MODELS_FILE = Path(__file__).resolve().parent / "models.yaml"
FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate")


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
    return data


@lru_cache(maxsize=4)
def load_models(path: Path = MODELS_FILE) -> dict[str, dict[str, int]]:
    """read_models(), read once per process."""
    return read_models(path)
