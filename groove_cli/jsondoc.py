"""JSON from outside (golden files, history, server requests) with its nesting bounded, so
deep input is refused as invalid, never a RecursionError."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a JSON document groove reads (a golden
file, baseline, history or server request; theirs are under 10): deeper input is refused."""


def loads_bounded(text: str, **options: Any) -> object:
    """`json.loads` with nesting bounded by MAX_JSON_DEPTH.

    Raises:
        ValueError: invalid JSON (json.JSONDecodeError) or nesting deeper than MAX_JSON_DEPTH.
    """
    too_deep = ValueError(f"arrays or objects are nested more than {MAX_JSON_DEPTH} deep")
    try:
        document = json.loads(text, **options)
    except RecursionError:
        raise too_deep from None
    level: list[tuple[object, int]] = [(document, 1)]
    while level:  # breadth-first, without recursion
        value, depth = level.pop()
        children = (value.values() if isinstance(value, dict)
                    else value if isinstance(value, list) else ())
        for child in children:
            if isinstance(child, dict | list):
                if depth >= MAX_JSON_DEPTH:
                    raise too_deep
                level.append((child, depth + 1))
    return document
