"""The SQLite runtime groove needs: apsw set up, sqlite-vec loaded and checked, the migrations.

Kept apart from the queries (store/sqlite.py) so a start-up check and the schema version need
no open index.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import apsw

from groove_cli.errors import GrooveError
from groove_cli.store.fts_tables import TABLES

MIN_SQLITE = (3, 45, 0)
MIN_SQLITE_VEC = (0, 1, 9)


def _no_memory_statistics() -> None:
    """Switch off SQLite's memory statistics before the first connection opens.

    With them on (apsw's default) every allocation takes one process-wide mutex, and FTS5
    allocates a lot: two threads running full-text queries on separate connections then
    barely overlap (bench/results/code-notes.md#memstatus). groove never reads them. SQLite
    accepts the setting only while no connection is open; if one already is, nothing changes.
    """
    try:
        apsw.shutdown()
        apsw.config(apsw.SQLITE_CONFIG_MEMSTATUS, 0)
    except apsw.Error:
        pass
    finally:
        apsw.initialize()


_no_memory_statistics()


def utc_now() -> str:
    """UTC RFC 3339 with microseconds, the timestamp format of every stored time."""
    return datetime.now(UTC).strftime(STAMP_FORMAT)


STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def stamp(mtime_ns: int) -> str:
    """A file time (`st_mtime_ns`) in the stored format, so the two compare as strings."""
    return datetime.fromtimestamp(mtime_ns / 1e9, UTC).strftime(STAMP_FORMAT)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.lstrip("v").split("-")[0].split(".")[:3])


def vec_extension_path() -> str:
    """The bundled sqlite-vec extension, located without importing the package (its
    `__init__` imports numpy, which a full-text-only search never needs)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise GrooveError("the sqlite-vec package is not installed", hint="pip install sqlite-vec")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def load_vec(con: apsw.Connection) -> str:
    try:
        con.enable_load_extension(True)
        con.load_extension(vec_extension_path())
        con.enable_load_extension(False)
    except apsw.Error as exc:
        raise GrooveError(
            f"cannot load the sqlite-vec extension: {exc}", hint="upgrade sqlite-vec"
        ) from None
    version = str(con.execute("SELECT vec_version()").fetchall()[0][0])
    if _version_tuple(version) < MIN_SQLITE_VEC:
        raise GrooveError(
            f"sqlite-vec {version} is too old (groove needs >= 0.1.9)", hint="upgrade sqlite-vec"
        )
    return version


def _sql_function(prepare: Callable[[str | None], str]) -> Callable[..., str]:
    """A table's `prepare` as an SQL function of one argument (a NULL or non-text value is
    None to it)."""

    def function(*args: Any) -> str:
        value = args[0]
        return prepare(value if isinstance(value, str) else None)

    return function


def register_functions(con: apsw.Connection) -> None:
    """The SQL functions groove's writes use: each full-text table's `sql_function` (the CJK
    table's tokeniser: its inserts and migration 0003's backfill call it)."""
    for table in TABLES:
        if table.sql_function is not None and table.prepare is not None:
            con.create_scalar_function(table.sql_function, _sql_function(table.prepare), 1,
                                       deterministic=True)


def check_runtime() -> None:
    """Start-up check: SQLite ≥ 3.45 through apsw and a loadable sqlite-vec (spec README)."""
    found = apsw.sqlite_lib_version()
    if _version_tuple(found) < MIN_SQLITE:
        raise GrooveError(f"SQLite {found} is too old (groove needs >= 3.45)", hint="upgrade apsw")
    load_vec(apsw.Connection(":memory:"))


def migrations() -> list[tuple[int, str]]:
    """The schema migrations shipped in groove_cli/migrations, as (number, SQL).

    Read beside this package's files rather than through importlib.resources, whose imports
    (tempfile, random; bench/results/code-notes.md#migrations) every search would pay; groove
    is never run from a zip (the sqlite-vec extension must be a real file anyway)."""
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "migrations")
    found = []
    for name in os.listdir(folder):
        if name.endswith(".sql") and name[:4].isdigit():
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                found.append((int(name[:4]), handle.read()))
    return sorted(found)


SCHEMA_VERSION = max(number for number, _ in migrations())
