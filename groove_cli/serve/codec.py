"""Frozen dataclasses (a search's `Results`, a `StatusReport`) to JSON and back, so a forwarded
command renders the server's answer with the command line's own renderer, byte for byte.

Each dataclass is tagged with its module and name; decoding constructs only dataclasses of the
`groove_cli` package (never arbitrary classes), tuples and paths are tagged so they come back
as they went. Standard library only.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import PurePath
from typing import Any

_PACKAGE = "groove_cli."


class CodecError(ValueError):
    """A document that is not an encoded groove value."""


def encode(value: Any) -> Any:
    """`value` as JSON-able data (see the module doc)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return {"$dc": f"{cls.__module__}:{cls.__qualname__}",
                "f": {f.name: encode(getattr(value, f.name))
                      for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, tuple):
        return {"$t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, frozenset | set):
        return {"$s": [encode(v) for v in sorted(value, key=repr)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"$d": {k: encode(v) for k, v in value.items()}}
        return {"$dk": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, PurePath):
        return {"$p": str(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise CodecError(f"cannot encode a {type(value).__name__}")


def decode(data: Any) -> Any:
    """The value `encode` made `data` from."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$t" in data:
        return tuple(decode(v) for v in data["$t"])
    if "$s" in data:
        return frozenset(decode(v) for v in data["$s"])
    if "$d" in data:
        return {k: decode(v) for k, v in data["$d"].items()}
    if "$dk" in data:
        return {decode(k): decode(v) for k, v in data["$dk"]}
    if "$p" in data:
        from pathlib import Path

        return Path(data["$p"])
    if "$dc" in data:
        return _construct(str(data["$dc"]), data.get("f", {}))
    raise CodecError("not an encoded value")


def _construct(tag: str, fields: Any) -> Any:
    module, _, name = tag.partition(":")
    if not module.startswith(_PACKAGE) or not name or not isinstance(fields, dict):
        raise CodecError(f"refusing to build {tag!r}")
    cls: Any = importlib.import_module(module)
    for part in name.split("."):
        cls = getattr(cls, part, None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise CodecError(f"refusing to build {tag!r}")
    return cls(**{key: decode(value) for key, value in fields.items()})
