"""Shared output helpers: JSON documents, plain lines, and `config show`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from groove_cli.config import SCHEMA, Settings


def use_color(stream: TextIO, no_color: bool = False) -> bool:
    """ANSI colour only on a terminal, without --no-color and without NO_COLOR (cli.md §2)."""
    return not no_color and "NO_COLOR" not in os.environ and stream.isatty()


def dumps_json(document: Any) -> str:
    """One UTF-8 JSON document: 2-space indent, non-ASCII kept, trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def print_json(document: Any) -> None:
    sys.stdout.write(dumps_json(document))
    sys.stdout.flush()


def print_line(line: str) -> None:
    sys.stdout.write(line + "\n")


def _toml_value(value: object) -> str:
    if value is None:
        return "(unset)"
    return json.dumps(value, ensure_ascii=False)


def print_config(settings: Settings, fmt: str) -> None:
    """Every setting with its resolved value and source."""
    config_path = str(settings.config.path) if settings.config else None
    if fmt == "json":
        print_json({
            "config_file": config_path,
            "settings": {
                spec.key: {"value": settings[spec.key], "source": settings.source(spec.key)}
                for spec in SCHEMA
            },
        })
        return
    print_line(f"# config file: {config_path or 'none (built-in defaults)'}")
    width = max(len(spec.key) for spec in SCHEMA)
    for spec in SCHEMA:
        value = _toml_value(settings[spec.key])
        print_line(f"{spec.key:<{width}} = {value}  ({settings.source(spec.key)})")
