"""Where the index lives: an SQLite file (a Path) or a Postgres database (a `PgTarget`).

`--db postgresql://…` (or `postgres://…`), `GROOVE_DB_URL` and `[store] url` select the
Postgres store; precedence is flag > environment > config > the SQLite default. A URL may hold
a password: `mask` is the one function every printed URL goes through (`config show`, error
messages, log lines), so credentials never reach a terminal or a CI log.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

URL_SCHEMES = ("postgresql://", "postgres://")
ENV_URL = "GROOVE_DB_URL"
VECTOR_INDEXES = ("hnsw", "exact")
DEFAULT_EF_SEARCH = 800
"""pgvector's HNSW candidate list per query (its own default is 40). Raised to at least the
leg's k at query time. The lowest setting that met recall@50 ≥ 0.99 against exact search at
100,000 vectors, random and near real chunk embeddings (docs/design/store.md,
bench/results/code-notes.md#ef-search)."""
INSTALL_HINT = "pip install 'groove-cli[postgres]'"

# user:password@ in a URL's authority; password=… in a query string or a keyword DSN
_URL_PASSWORD = re.compile(r"(?i)\b(postgres(?:ql)?://[^:/@\s]*):([^@\s]*)@")
_KEY_PASSWORD = re.compile(r"(?i)\b(password\s*=\s*)('[^']*'|[^&\s]+)")
MASK = "***"


def is_db_url(value: object) -> bool:
    """True for a Postgres connection URL (`postgresql://…` or `postgres://…`)."""
    return isinstance(value, str) and value.strip().lower().startswith(URL_SCHEMES)


def mask(text: str) -> str:
    """`text` with every password of a Postgres URL or DSN replaced by `***`."""
    return _KEY_PASSWORD.sub(lambda m: m.group(1) + MASK,
                             _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{MASK}@", text))


def kb_name_for(kb: Path | None) -> str:
    """The default KB id of a knowledge-base folder: its folder name (lower-case, runs of other
    characters as `-`) and 8 hex digits of its absolute path, so two folders of one name on one
    server stay apart and the same folder always maps to the same KB. Without a folder: ""
    (a reader then opens the database's only KB)."""
    if kb is None:
        return ""
    resolved = str(kb.resolve())
    stem = re.sub(r"[^a-z0-9]+", "-", kb.resolve().name.lower()).strip("-") or "kb"
    return f"{stem[:40]}-{hashlib.sha256(resolved.encode('utf-8')).hexdigest()[:8]}"


@dataclass(frozen=True, slots=True)
class PgTarget:
    """A knowledge base in a Postgres database: the URL, the KB id, the HNSW ef_search."""

    url: str
    kb: str
    ef_search: int = DEFAULT_EF_SEARCH
    kb_explicit: bool = False
    """True when the KB id was set (`[store] kb`), not derived from the KB path."""
    vector_index: str = "hnsw"
    """How a new KB keeps its vectors: `hnsw` (pgvector + HNSW index, the default) or `exact`
    (float32 bytes, exact KNN in groove: for a small KB, or a pgvector build this CPU cannot
    run)."""

    def __str__(self) -> str:
        return f"{mask(self.url)} (kb {self.kb})"

    @property
    def name(self) -> str:
        """What a message calls this index (a file's name for SQLite)."""
        return str(self)


IndexLocation = Path | PgTarget
"""Where an index is: the SQLite file or the Postgres KB."""
