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
        raise ModelError(f"download of {files.repo} failed: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [PurePosixPath(extra).name for extra in files.onnx_data]
