"""YAML input files (sweep specs, uarch files) and their one-line errors.

Every problem with a file a person wrote is one line naming the file and the key:
``<file>: <key>: <what was expected>``. The readers raise the caller's error class so that
each package keeps its own (SpecError, UarchError).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from pydantic import ValidationError


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that rejects a key given twice in one mapping (PyYAML keeps the last one
    without a word, so a spec with two `kernel:` lines ran the wrong kernel)."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


#: the largest input file read (a spec or uarch file is a few KiB; /dev/zero is endless)
MAX_INPUT_BYTES = 16 << 20


def read_text(path: Path, shown: str, error: type[Exception], cannot_read_hint: str = "") -> str:
    """A file's UTF-8 text; `error(one line)` when it cannot be read, is not a regular file
    (a device or pipe would block or never end), is larger than MAX_INPUT_BYTES or is not
    UTF-8. `shown` is the file name the message starts with."""
    try:
        if path.exists() and not (path.is_file() or path.is_dir()):
            raise error(f"{shown}: not a regular file (a device or a pipe); give a YAML file")
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except OSError as e:
        hint = f"; {cannot_read_hint}" if cannot_read_hint else ""
        raise error(f"{shown}: cannot read: {e.strerror or e}{hint}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise error(f"{shown}: larger than {MAX_INPUT_BYTES >> 20} MiB: not an input file of "
                    "ours")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise error(f"{shown}: line {line}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at "
                    f"offset {e.start}); save the file as UTF-8") from None


def parse_yaml(text: str, shown: str, error: type[Exception]) -> Any:
    """The YAML document in `text` (no key twice in a mapping); `error(one line)` naming the
    line and column of a syntax error."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        if str(problem).startswith("duplicate key"):
            problem = (f"{problem}: a key may be given once per mapping (YAML would keep the "
                       "last one silently)")
        raise error(f"{shown}: YAML syntax error at {where}: {problem}") from None


def read_yaml(path: Path, shown: str, error: type[Exception]) -> Any:
    """parse_yaml(read_text(...))."""
    return parse_yaml(read_text(path, shown, error), shown, error)


_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "string_type": "a string",
    "dict_type": "a mapping",
    "list_type": "a list",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "bool_type": "a boolean (true or false)",
    "float_type": "a number",
    "float_parsing": "a number",
}

_BOUND_WORDS = {
    "greater_than_equal": "greater than or equal to",
    "greater_than": "greater than",
    "less_than_equal": "less than or equal to",
    "less_than": "less than",
}


def _loc(parts: tuple[Any, ...]) -> str:
    """A pydantic location as a key path; the parts pydantic adds for unions and validators
    ("function-after[...]", "literal[...]") are not keys."""
    return ".".join(str(p) for p in parts
                    if not str(p).startswith(("function-", "list[", "literal[")))


def _message(e: dict[str, Any], unknown_hint: Callable[[tuple[Any, ...]], str] | None) -> str:
    kind, value = e["type"], e.get("input")
    if kind == "extra_forbidden":
        hint = unknown_hint(tuple(e["loc"][:-1])) if unknown_hint else ""
        return "unknown key" + (f" (expected one of: {hint})" if hint else "")
    if kind == "missing":
        return "missing required key"
    if kind == "too_short" and isinstance(value, list) and not value:
        return "must not be empty (give at least one value)"
    if kind in _TYPE_WORDS:
        return f"expected {_TYPE_WORDS[kind]}, got {value!r}"
    if kind == "literal_error":
        return f"{value!r} is not one of {e.get('ctx', {}).get('expected', '')}"
    if kind == "string_pattern_mismatch":
        return f"{value!r} does not look right (expected pattern {e['ctx']['pattern']})"
    if kind in _BOUND_WORDS:
        return f"{value!r} must be {_BOUND_WORDS[kind]} {next(iter(e['ctx'].values()))}"
    if kind == "value_error":
        return str(e["msg"]).removeprefix("Value error, ")
    return f"{e['msg']} (got {value!r})"


def first_error(shown: str, err: ValidationError,
                unknown_hint: Callable[[tuple[Any, ...]], str] | None = None) -> str:
    """One line for a pydantic ValidationError: its first problem as ``shown: key: what``
    (and how many more there are). `unknown_hint(parent location)` names the keys allowed
    where an unknown key was found. A validator may name a sub-key in brackets at the start
    of its message ("[max] 5000 is not a power of two"): it is moved into the key path."""
    errors = err.errors(include_url=False)
    e = errors[0]
    loc = _loc(tuple(e["loc"]))
    msg = " ".join(_message(e, unknown_hint).split())
    sub_key = re.match(r"^\[([^\]]+)\] (.*)$", msg)
    if sub_key:
        loc = f"{loc}.{sub_key.group(1)}" if loc else sub_key.group(1)
        msg = sub_key.group(2)
    more = f" [+{len(errors) - 1} more]" if len(errors) > 1 else ""
    return f"{shown}: {loc or '(top level)'}: {msg}{more}"
