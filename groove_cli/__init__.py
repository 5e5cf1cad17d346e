"""groove: hybrid full-text + vector search over a folder of Markdown notes."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("groove-cli")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"
