"""Jinja rendering of run scripts; a user folder (--templates) overrides files by name.

A user template may extend the shipped one as ``{% extends "default/<name>" %}``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import jinja2

DEFAULT_TEMPLATES = Path(__file__).resolve().parent / "templates"


class TemplateError(ValueError):
    pass


def environment(user_dir: Path | None = None) -> jinja2.Environment:
    default = jinja2.FileSystemLoader(str(DEFAULT_TEMPLATES))
    loaders: list[jinja2.BaseLoader] = []
    if user_dir is not None:
        if not user_dir.is_dir():
            raise TemplateError(f"{user_dir}: --templates: expected a folder of *.j2 files")
        loaders.append(jinja2.FileSystemLoader(str(user_dir)))
    loaders += [jinja2.PrefixLoader({"default": default}), default]
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters["q"] = lambda v: shlex.quote(str(v))
    return env


def render(env: jinja2.Environment, name: str, **ctx: Any) -> str:
    try:
        return env.get_template(name).render(**ctx)
    except jinja2.TemplateNotFound as e:
        raise TemplateError(f"template {e.name}: not found") from None
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"{e.filename or e.name}: line {e.lineno}: template syntax "
                            f"error: {e.message}") from None
    except jinja2.UndefinedError as e:
        raise TemplateError(f"template {name}: {e.message}") from None
