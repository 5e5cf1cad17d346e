"""Where the index lives: an SQLite file (a Path) or a Postgres database (a `PgTarget`).

`--db postgresql://…` (or `postgres://…`), `GROOVE_DB_URL` and `[store] url` select the
Postgres store; precedence is flag > environment > config > the SQLite default. `parse_db_url`
is the one reader of all three sources: a value with a scheme (`xxx:/…`) or a leading `user@`
is a URL, and a URL groove does not accept is a usage error, never a file path (store.md).
A URL may hold a password: `mask` is the one function every printed URL goes through
(`config show`, error messages, log lines), so credentials never reach a terminal or a CI log.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

URL_SCHEMES = ("postgresql://", "postgres://")
ACCEPTED_SCHEMES = ("postgresql", "postgres")
ENV_URL = "GROOVE_DB_URL"
VECTOR_INDEXES = ("hnsw", "exact")
DEFAULT_EF_SEARCH = 800
"""pgvector's HNSW candidate list per query (its own default is 40). Raised to at least the
leg's k at query time. The lowest setting that met recall@50 ≥ 0.99 against exact search at
100,000 vectors, random and near real chunk embeddings (docs/design/store.md,
bench/results/code-notes.md#ef-search)."""
INSTALL_HINT = "pip install 'groove-cli[postgres]'"

# password=… in a query string or a keyword DSN (the user:password@ form is `_mask_token`'s)
_KEY_PASSWORD = re.compile(r"(?i)\b(password\s*=\s*)('[^']*'|[^&\s]+)")
MASK = "***"


# a scheme of two or more characters (one letter is a Windows drive, `C:/…`) and a `/`
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(?=/)")
_LOOSE_SCHEME = re.compile(r"^(postgres(?:ql)?):", re.IGNORECASE)
# `user@` before any `/` or `\\`, or `user:` (two or more characters: one is a drive letter)
# followed by an `@` anywhere (a password may hold a `/`): a URL without its scheme
_USER_AT = re.compile(r"^(?:[^/\\@]+@|[^/\\@:]{2,}:[^@]*@)")
URL_HINT = ("write postgresql://user@host:5432/database; a file whose name has ':/' or starts "
            "with 'name@' goes as ./name")
ACCEPTED_TEXT = "accepted: postgresql://, postgres://"


def is_db_url(value: object) -> bool:
    """True for a Postgres connection URL (`postgresql://…` or `postgres://…`)."""
    return isinstance(value, str) and value.strip().lower().startswith(URL_SCHEMES)


def looks_like_url(value: str) -> bool:
    """True when `value` is meant as a URL, accepted or not: it has a scheme (`xxx:/…`, or
    `postgres:`/`postgresql:` with anything after) or starts with `user@` / `user:pw@`."""
    text = value.strip()
    return bool(_SCHEME.match(text) or _LOOSE_SCHEME.match(text) or _USER_AT.match(text))


def parse_db_url(value: str, *, source: str) -> str | None:
    """The one reader of `--db`, `GROOVE_DB_URL` and `[store] url`: the URL (stripped, its
    scheme in lower case) when `value` is an accepted Postgres URL, None when it is a file path.

    Raises:
        UsageError: `value` looks like a URL (`looks_like_url`) but is not one groove
            accepts; the message names `source` and the value with its password masked.
    """
    from groove_cli.errors import UsageError

    text = value.strip()
    if not looks_like_url(text):
        return None
    scheme = _SCHEME.match(text) or _LOOSE_SCHEME.match(text)
    name = scheme.group(1).lower() if scheme else ""
    if name in ACCEPTED_SCHEMES and not text[len(name) + 1:].startswith("//"):
        why = f"'{name}:' must be followed by '//'"
    elif name in ACCEPTED_SCHEMES:
        why = _url_problem(text) or ""
        if not why:  # libpq knows the scheme in lower case only (RFC 3986: case-insensitive)
            return name + text[len(name):]
    elif name:
        why = f"unknown scheme '{name}'"
    else:
        why = "it has user@ but no scheme"
    raise UsageError(f"{source} {mask_url(text)} is not a Postgres URL: {why} "
                     f"({ACCEPTED_TEXT})", hint=URL_HINT)


def _url_problem(url: str) -> str | None:
    """Why libpq would read `url` otherwise than it looks (and might echo part of its password
    in an error, or resolve a host made of it), or None. Each case has a written form."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "it holds a space or a control character (write it as %20 / %XX)"
    if re.search(r"%(?![0-9A-Fa-f]{2})", url):
        return "a '%' is not followed by two hex digits (write a literal % as %25)"
    try:
        unquote_to_bytes(url).decode("utf-8")
    except UnicodeDecodeError:
        return "its %XX escapes do not spell UTF-8 text (write a literal % as %25)"
    try:
        parts = urlsplit(url)
        if url.count("@") > 1:
            return "it holds more than one raw '@' (write one in a password as %40)"
        if "@" in url and "@" not in parts.netloc:
            return ("its user part is cut short by a '/', '?' or '#' (write them in a password "
                    "as %2F, %3F, %23)")
        if "," not in parts.netloc:  # libpq's host1:port1,host2:port2 form has no single port
            _ = parts.port
    except ValueError:
        return ("its host or port cannot be read (a '/', '?', '#', '[' or ']' in the "
                "password must be written %2F, %3F, %23, %5B, %5D)")
    return None


def mask_url(value: str) -> str:
    """One URL-like value as printed: everything between the user name's `:` and the last `@`
    replaced by `***` (whatever characters the password holds), then `mask`."""
    at = value.rfind("@")
    scheme = _SCHEME.match(value) or _LOOSE_SCHEME.match(value)
    start = len(value) - len(value[scheme.end():].lstrip("/")) if scheme else 0
    start = start if at > start else 0
    colon = value.find(":", start, at) if at > 0 else -1
    if colon >= 0:
        value = value[:colon + 1] + MASK + value[at:]
    return mask(value)


def _mask_token(token: str) -> str:
    """One whitespace-free token with the password of a `user:password@` in it masked, whatever
    the scheme (or none: `u:pw@host`): everything from the user name's `:` to the token's last
    `@`, so a raw `@`, `:` or `/` in a password stays hidden. Linear in the token's length."""
    at = token.rfind("@")
    if at <= 0:
        return token
    start = 0
    # a scheme ends at the token's first `:` (a `:/` later on may be the password's own)
    first = token.find(":", 0, at)
    if (first > 0 and token.startswith("/", first + 1)
            and (token[first - 1].isalnum() or token[first - 1] in "+.-")):
        start = first + 1
        while start < at and token[start] == "/":
            start += 1
    colon = token.find(":", start, at)
    if colon < 0:
        return token
    return token[:colon + 1] + MASK + token[at:]


_SPACE = re.compile(r"(\s+)")


def mask(text: str) -> str:
    """`text` with every password of a URL (any scheme, or none) or DSN replaced by `***`."""
    if "@" in text:
        text = "".join(_mask_token(part) if "@" in part else part for part in _SPACE.split(text))
    return _KEY_PASSWORD.sub(lambda m: m.group(1) + MASK, text)


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
        return f"{mask_url(self.url)} (kb {self.kb})"

    @property
    def name(self) -> str:
        """What a message calls this index (a file's name for SQLite)."""
        return str(self)


IndexLocation = Path | PgTarget
"""Where an index is: the SQLite file or the Postgres KB."""
