"""Model directories (models.md §3): layout, `groove-model.toml`, local-directory detection.

Everything here is cheap: it reads small JSON/TOML files and scans the ONNX file's protobuf
framing for input/output shapes without loading weights or importing onnxruntime, so
`peek_model` can answer before any model is loaded.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove_cli.errors import ModelError
from groove_cli.models.registry import ModelSettings

MODEL_TOML = "groove-model.toml"
ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
SOURCES = ("hub", "pack", "dir")


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model ready to load: where it is, how to run it, and the digest the index records.

    `name` is the registry name, or the absolute directory path for a local directory.
    """

    name: str
    kind: str
    dir: Path
    source: str
    settings: ModelSettings
    sha256: str
    onnx_size: int

    @property
    def onnx_path(self) -> Path:
        """`model.onnx`, or `onnx/model.onnx` for a local directory laid out that way."""
        found = find_onnx(self.dir)
        return found if found is not None else self.dir / ONNX_FILE

    @property
    def tokenizer_path(self) -> Path:
        """The directory's `tokenizer.json`."""
        return self.dir / TOKENIZER_FILE


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """The contents of a `groove-model.toml`: settings plus provenance."""

    name: str
    settings: ModelSettings
    source: str
    revision: str
    onnx_sha256: str
    onnx_size: int
    extra_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TensorSignature:
    """Name, element type and shape (ints, or strings for symbolic dims) of a graph input/output."""

    name: str
    elem_type: int
    shape: tuple[int | str | None, ...] | None


@dataclass(frozen=True, slots=True)
class GraphSignature:
    """A graph's declared inputs and outputs, in declaration order."""

    inputs: tuple[TensorSignature, ...]
    outputs: tuple[TensorSignature, ...]

    def input_names(self) -> list[str]:
        """Declared input names."""
        return [t.name for t in self.inputs]

    def output(self, name: str) -> TensorSignature | None:
        """The output called `name`, or None."""
        return next((t for t in self.outputs if t.name == name), None)


def is_path_value(value: str) -> bool:
    """A model value names a local directory when it has a separator or starts with `.`/`~`."""
    seps = {os.sep, "/"} | ({os.altsep} if os.altsep else set())
    return any(s in value for s in seps) or value.startswith((".", "~"))


def find_onnx(directory: Path) -> Path | None:
    """`model.onnx` or `onnx/model.onnx` inside `directory`, whichever exists first."""
    for candidate in (directory / ONNX_FILE, directory / "onnx" / ONNX_FILE):
        if candidate.is_file():
            return candidate
    return None


def file_sha256(path: Path) -> str:
    """SHA-256 hex of a file, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- groove-model.toml


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(str(value), ensure_ascii=True)


def render_model_toml(record: ModelRecord) -> str:
    """The text of a `groove-model.toml` (settings first, then provenance)."""
    s = record.settings
    rows: list[tuple[str, object]] = [
        ("name", record.name),
        ("kind", s.kind),
    ]
    if s.pooling is not None:
        rows.append(("pooling", s.pooling))
    rows += [
        ("normalise", s.normalise),
        ("query_prefix", s.query_prefix),
        ("passage_prefix", s.passage_prefix),
        ("max_length", s.max_length),
        ("output", s.output),
    ]
    if s.dim is not None:
        rows.append(("dim", s.dim))
    rows += [
        ("batch_size", s.batch_size),
        ("source", record.source),
        ("revision", record.revision),
        ("onnx_sha256", record.onnx_sha256),
        ("onnx_size", record.onnx_size),
    ]
    if record.extra_files:
        rows.append(("extra_files", list(record.extra_files)))
    lines = ["# Written by groove (models.md §3): settings + provenance of this model directory."]
    lines += [f"{key} = {_toml_value(value)}" for key, value in rows]
    return "\n".join(lines) + "\n"


def write_model_toml(directory: Path, record: ModelRecord) -> None:
    """Write `groove-model.toml` into `directory`."""
    (directory / MODEL_TOML).write_text(render_model_toml(record), encoding="utf-8")


def _typed(doc: dict[str, Any], key: str, kind: type, path: Path, default: Any = None) -> Any:
    if key not in doc:
        if default is None:
            raise ModelError(f"{path}: missing key {key!r}")
        return default
    value = doc[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        raise ModelError(
            f"{path}: {key}: expected {kind.__name__}, got {type(value).__name__}"
        )
    return value


def read_model_toml(
    directory: Path, *, kind: str | None = None, fallback: ModelSettings | None = None
) -> ModelRecord:
    """Parse `groove-model.toml`; missing settings come from `fallback` when given.

    A local directory's file may hold only some settings (for example just prefixes); the
    caller passes the detected settings as `fallback` then.
    """
    path = directory / MODEL_TOML
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read: {exc}") from exc
    fb = fallback
    model_kind = _typed(doc, "kind", str, path, kind or (fb.kind if fb else None))
    if model_kind not in ("embedder", "reranker"):
        raise ModelError(f"{path}: kind must be embedder or reranker, got {model_kind!r}")
    is_emb = model_kind == "embedder"
    pooling = _typed(doc, "pooling", str, path, (fb.pooling if fb else None) or "mean")
    if is_emb and pooling not in ("cls", "mean"):
        raise ModelError(f"{path}: pooling must be cls or mean, got {pooling!r}")
    dim_default = fb.dim if fb and fb.dim is not None else None
    dim = _typed(doc, "dim", int, path, dim_default) if is_emb else None
    settings = ModelSettings(
        kind=model_kind,
        pooling=pooling if is_emb else None,
        normalise=_typed(doc, "normalise", bool, path, fb.normalise if fb else is_emb),
        query_prefix=_typed(doc, "query_prefix", str, path, fb.query_prefix if fb else ""),
        passage_prefix=_typed(doc, "passage_prefix", str, path, fb.passage_prefix if fb else ""),
        max_length=_typed(doc, "max_length", int, path, fb.max_length if fb else None),
        output=_typed(
            doc, "output", str, path,
            fb.output if fb else ("last_hidden_state" if is_emb else "logits"),
        ),
        dim=dim,
        batch_size=_typed(doc, "batch_size", int, path, fb.batch_size if fb else 32),
    )
    if settings.max_length < 1 or settings.batch_size < 1:
        raise ModelError(f"{path}: max_length and batch_size must be positive")
    return ModelRecord(
        name=_typed(doc, "name", str, path, directory.name),
        settings=settings,
        source=_typed(doc, "source", str, path, "dir"),
        revision=_typed(doc, "revision", str, path, ""),
        onnx_sha256=_typed(doc, "onnx_sha256", str, path, ""),
        onnx_size=_typed(doc, "onnx_size", int, path, -1),
        extra_files=tuple(_typed(doc, "extra_files", list, path, [])),
    )


def cached_record(directory: Path) -> ModelRecord | None:
    """The record of a complete cached directory (§3), or None when it is absent or stale.

    Complete = groove-model.toml, tokenizer.json, model.onnx and any recorded extra files
    exist, and model.onnx's size equals the recorded `onnx_size`.
    """
    onnx = directory / ONNX_FILE
    if not (directory / MODEL_TOML).is_file() or not onnx.is_file():
        return None
    if not (directory / TOKENIZER_FILE).is_file():
        return None
    try:
        record = read_model_toml(directory)
    except ModelError:
        return None
    if record.onnx_size != onnx.stat().st_size or not record.onnx_sha256:
        return None
    if any(not (directory / f).is_file() for f in record.extra_files):
        return None
    return record


# --------------------------------------------------------------------------- ONNX signature


def _varint(buf: Any, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(buf: Any, start: int, end: int) -> list[tuple[int, int, Any]]:
    """Top-level protobuf fields in buf[start:end]: (field number, wire type, value).

    Length-delimited values are returned as (start, end) pairs, so large payloads such as
    initializers are skipped without being copied.
    """
    out: list[tuple[int, int, Any]] = []
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = None, pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = (pos, pos + length), pos + length
        elif wire == 5:
            value, pos = None, pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((field, wire, value))
    return out


def _value_info(buf: Any, span: tuple[int, int]) -> TensorSignature:
    name, elem, shape = "", 0, None
    for field, wire, value in _fields(buf, *span):
        if field == 1 and wire == 2:
            name = bytes(buf[value[0] : value[1]]).decode("utf-8")
        elif field == 2 and wire == 2:  # TypeProto
            for f2, w2, v2 in _fields(buf, *value):
                if f2 == 1 and w2 == 2:  # tensor_type
                    dims: list[int | str | None] = []
                    has_shape = False
                    for f3, w3, v3 in _fields(buf, *v2):
                        if f3 == 1 and w3 == 0:
                            elem = v3
                        elif f3 == 2 and w3 == 2:  # TensorShapeProto
                            has_shape = True
                            for f4, w4, v4 in _fields(buf, *v3):
                                if f4 == 1 and w4 == 2:
                                    dims.append(_dim(buf, v4))
                    shape = tuple(dims) if has_shape else None
    return TensorSignature(name, elem, shape)


def _dim(buf: Any, span: tuple[int, int]) -> int | str | None:
    for field, wire, value in _fields(buf, *span):
        if field == 1 and wire == 0:
            return int(value)
        if field == 2 and wire == 2:
            return bytes(buf[value[0] : value[1]]).decode("utf-8")
    return None


def graph_signature(path: Path) -> GraphSignature:
    """Inputs and outputs declared by an ONNX file, read from its protobuf framing only.

    Initializers are listed among a graph's inputs by some old exporters; they are dropped.
    """
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            graph_span = None
            for field, wire, value in _fields(buf, 0, len(buf)):
                if field == 7 and wire == 2:
                    graph_span = value
            if graph_span is None:
                raise ValueError("no graph")
            inputs: list[TensorSignature] = []
            outputs: list[TensorSignature] = []
            init_names: set[str] = set()
            for field, wire, value in _fields(buf, *graph_span):
                if wire != 2:
                    continue
                if field == 11:
                    inputs.append(_value_info(buf, value))
                elif field == 12:
                    outputs.append(_value_info(buf, value))
                elif field == 5:  # initializer: only its name (field 8)
                    for f2, w2, v2 in _fields(buf, *value):
                        if f2 == 8 and w2 == 2:
                            init_names.add(bytes(buf[v2[0] : v2[1]]).decode("utf-8"))
    except (OSError, ValueError, IndexError) as exc:
        raise ModelError(f"{path}: not a readable ONNX file ({exc})") from exc
    return GraphSignature(
        inputs=tuple(t for t in inputs if t.name not in init_names), outputs=tuple(outputs)
    )


# --------------------------------------------------------------------------- local directories


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def check_local_dir(directory: Path) -> Path:
    """The ONNX file of a local model directory; ModelError when it is not one (§3)."""
    if directory.exists() and not directory.is_dir():
        raise ModelError(
            f"{directory} is a file, not a model directory",
            "pass the folder that holds model.onnx (or onnx/model.onnx) and tokenizer.json",
        )
    if not directory.is_dir():
        raise ModelError(
            f"model directory {directory} does not exist",
            "a local model directory must hold model.onnx (or onnx/model.onnx) and tokenizer.json",
        )
    onnx = find_onnx(directory)
    missing = [n for n, ok in (("model.onnx", onnx), ("tokenizer.json",
               (directory / TOKENIZER_FILE).is_file() or None)) if not ok]
    if onnx is None or missing:
        raise ModelError(
            f"{directory} is not a model directory: missing {' and '.join(missing)}",
            "a local model directory must hold model.onnx (or onnx/model.onnx) and tokenizer.json",
        )
    return onnx


def detect_settings(directory: Path, kind: str) -> ModelSettings:
    """Settings of a local directory without `groove-model.toml` (§3 rules)."""
    onnx = check_local_dir(directory)
    pooling_cfg = directory / "1_Pooling" / "config.json"
    pooling = "mean"
    if pooling_cfg.is_file() and _json(pooling_cfg).get("pooling_mode_cls_token") is True:
        pooling = "cls"
    max_length = 512
    model_max = _json(directory / "tokenizer_config.json").get("model_max_length")
    max_pos = _json(directory / "config.json").get("max_position_embeddings")
    if isinstance(model_max, (int, float)) and not isinstance(model_max, bool) and (
        0 < model_max <= 100_000
    ):
        max_length = int(model_max)
    elif isinstance(max_pos, int) and not isinstance(max_pos, bool) and max_pos > 0:
        max_length = max_pos
    sig = graph_signature(onnx)
    wanted = "last_hidden_state" if kind == "embedder" else "logits"
    out = sig.output(wanted) or (sig.outputs[0] if sig.outputs else None)
    if out is None:
        raise ModelError(f"{onnx}: the graph declares no outputs")
    dim: int | None = None
    if kind == "embedder":
        last = out.shape[-1] if out.shape else None
        if not isinstance(last, int):
            raise ModelError(
                f"{onnx}: cannot tell the embedding size from output {out.name!r}",
                f"add `dim = <size>` to {directory / MODEL_TOML}",
            )
        dim = last
    return ModelSettings(
        kind=kind,
        pooling=pooling if kind == "embedder" else None,
        normalise=kind == "embedder",
        query_prefix="",
        passage_prefix="",
        max_length=max_length,
        output=out.name,
        dim=dim,
        batch_size=32,
    )


def local_settings(directory: Path, kind: str) -> ModelSettings:
    """A local directory's settings: its `groove-model.toml` over the detected ones."""
    if (directory / MODEL_TOML).is_file():
        check_local_dir(directory)
        try:
            base = detect_settings(directory, kind)
        except ModelError:
            base = None
        return read_model_toml(directory, kind=kind, fallback=base).settings
    return detect_settings(directory, kind)
