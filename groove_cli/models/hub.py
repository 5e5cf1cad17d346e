"""Thin optional download from the model hub with `huggingface_hub` (models.md §4 step 4)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path, PurePosixPath

from groove_cli.errors import ModelError
from groove_cli.models.registry import HubFiles

_TRUTHY = {"1", "true", "yes", "on"}


def offline_forced() -> bool:
    """True when `GROOVE_OFFLINE` or `HF_HUB_OFFLINE` forbids downloads (config.md §6)."""
    return any(
        os.environ.get(var, "").strip().lower() in _TRUTHY
        for var in ("GROOVE_OFFLINE", "HF_HUB_OFFLINE")
    )


def hub_available() -> bool:
    """Whether `huggingface_hub` can be imported (checked without importing it).

    A `None` entry in `sys.modules` is Python's marker for a blocked import and counts as absent.
    """
    if "huggingface_hub" in sys.modules:
        return sys.modules["huggingface_hub"] is not None
    try:
        return importlib.util.find_spec("huggingface_hub") is not None
    except (ImportError, ValueError):
        return False


PROBE_TIMEOUT_S = 3.0
_OFFLINE_HINT = ("connect to the network, or use a model that is available offline "
                 "(`groove models list`; set GROOVE_OFFLINE=1 to never try the network)")


def endpoint() -> str:
    """The hub address huggingface_hub uses (HF_ENDPOINT overrides it)."""
    return os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"


def unreachable_reason(url: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the hub at `url` cannot be reached (name lookup or TCP connect), or None.

    One quick probe before a download: without it, a blocked network costs the hub client's
    retries (25 s) and ends in a page of raw DNS errors.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (80 if parts.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror as exc:
        return f"cannot resolve {host} ({exc.strerror or exc})"
    except OSError as exc:
        return f"cannot connect to {host}:{port} ({exc.strerror or exc})"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def download(files: HubFiles, dest: Path) -> list[str]:
    """Fetch the pinned files into `dest`: model.onnx, external data, tokenizer.json.

    Returns the base names of the external-data files (recorded in groove-model.toml).
    """
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ModelError(
            "downloading models needs huggingface_hub: pip install huggingface_hub"
        ) from exc
    reason = unreachable_reason(endpoint())
    if reason is not None:
        raise ModelError(f"cannot download {files.repo}: the model hub is unreachable: {reason}",
                         _OFFLINE_HINT)
    staging = dest / ".download"
    wanted = [(files.onnx, "model.onnx"), (files.tokenizer, "tokenizer.json")]
    wanted += [(extra, PurePosixPath(extra).name) for extra in files.onnx_data]
    try:
        for remote, local in wanted:
            fetched = hf_hub_download(
                repo_id=files.repo,
                filename=remote,
                revision=files.revision,
                local_dir=str(staging),
            )
            shutil.move(fetched, dest / local)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"download of {files.repo} failed: {_one_line(exc)}", _OFFLINE_HINT) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [PurePosixPath(extra).name for extra in files.onnx_data]
