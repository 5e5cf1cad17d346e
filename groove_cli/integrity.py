"""`groove doctor`'s checks of the files themselves: SQLite's page-level check (FTS5's
integrity-check included), the vector snapshot against the index it claims to copy, and
leftovers of an interrupted snapshot write. The row-level checks (every chunk has its
full-text rows and its vector) are `Store.integrity`, reported by `status.run_doctor`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli.dbfile import DamagedIndex, snapshot_leftovers
from groove_cli.store import Store

if TYPE_CHECKING:
    from groove_cli.store.postgres import PgStore

FORCE = "groove index --force (moves the damaged file aside and rebuilds)"


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: str
    summary: str
    count: int
    samples: tuple[str, ...]
    remedy: str


def finding(check: str, summary: str, items: list[int] | list[str], remedy: str,
            severity: str = "error") -> Finding:
    return Finding(check, severity, summary, len(items), tuple(str(i) for i in items[:5]), remedy)


def unreadable(error: DamagedIndex) -> Finding:
    """The file cannot be opened or read as an index at all."""
    return Finding("database-damaged", "error", error.message, 1, (), FORCE)


_NEVER_USED = re.compile(r"Page (\d+): never used")


def summarise_problems(problems: list[str]) -> list[str]:
    """SQLite's check output as one line per problem: its rows may hold many lines (a
    `*** in database main ***` header, then one line per page); the `Page N: never used`
    lines become one `{n} pages never used (3, 4, 5, 6, 7, …)` line."""
    lines = [line.strip() for problem in problems for line in problem.splitlines()]
    lines = [line for line in lines if line and not line.startswith("*** in database")]
    pages = [m.group(1) for m in map(_NEVER_USED.fullmatch, lines) if m]
    if not pages:
        return lines
    shown = ", ".join(pages[:5]) + (", …" if len(pages) > 5 else "")
    summary = f"{len(pages)} page{'s' if len(pages) > 1 else ''} never used ({shown})"
    first = next(i for i, line in enumerate(lines) if _NEVER_USED.fullmatch(line))
    rest = [line for line in lines if not _NEVER_USED.fullmatch(line)]
    return [*rest[:first], summary, *rest[first:]]


def file_findings(store: Store | PgStore) -> list[Finding]:
    """SQLite's integrity_check of every page, b-tree and full-text table (Postgres: invalid
    or missing indexes and extensions)."""
    problems = summarise_problems(store.file_problems())
    if not problems:
        return []
    if not isinstance(store, Store):
        return [finding("store-damaged", f"{len(problems)} problem(s) in the Postgres store",
                        problems, "groove index --force, or the fix each problem names")]
    return [finding("database-damaged", f"SQLite reports {len(problems)} problem(s) in the file",
                    problems, FORCE)]


def snapshot_findings(store: Store, db: Path) -> list[Finding]:
    """The vector snapshot beside the index: of this index and this state, and equal to it."""
    import numpy as np

    from groove_cli.vectors import SnapshotStamp, VectorSnapshot, has_checksum, read_stamp

    stamp = read_stamp(db)
    dim = store.vec_dim()
    if stamp is None or dim is None:
        return []
    current = SnapshotStamp.of(store)
    if stamp != current or not has_checksum(db):
        what = ("another index" if stamp.index_id != current.index_id
                else "an older state of this index" if stamp != current
                else "an older groove (without a checksum)")
        return [Finding("stale-vector-snapshot", "warning",
                        f"the vector snapshot beside the index was written from {what}; "
                        "searches ignore it and read the index instead (slower)", 1,
                        (f"{db.name}.vectors.json",), "groove index (rewrites the snapshot)")]
    saved = VectorSnapshot.load(db, stamp, dim)
    fresh = VectorSnapshot.from_store(store, dim)
    same = (saved is not None and np.array_equal(saved.ids, fresh.ids)
            and np.allclose(saved.matrix, fresh.matrix, atol=1e-6))
    if same:
        return []
    return [Finding("vector-snapshot-mismatch", "error",
                    "the vector snapshot carries the index's stamp but not its vectors (damaged "
                    "or out of date); searches do not use it", 1,
                    (f"{db.name}.vectors.npy",), "groove index (rewrites the snapshot)")]


def leftover_findings(db: Path) -> list[Finding]:
    """Temporary files a killed snapshot write left behind (the next `index` removes them)."""
    leftovers = [p.name for p in snapshot_leftovers(db)]
    if not leftovers:
        return []
    return [finding("leftover-temp-file", f"{len(leftovers)} temporary file(s) of an "
                    "interrupted snapshot write", leftovers,
                    "groove index (removes them)", severity="warning")]


def history_findings(kb: Path) -> list[Finding]:
    """The KB's eval history: `eval` sets a damaged one aside and starts a new one."""
    from groove_cli.evaluate.history import history_path, history_problem

    problem = history_problem(history_path(kb))
    if problem is None:
        return []
    return [Finding("eval-history-damaged", "warning", problem, 1, (),
                    "groove eval (keeps it as .corrupt-<time> and starts a new history), or "
                    "pass --no-history")]


def damage_of(db: Path, *, thorough: bool = True) -> str | None:
    """Why the index file at `db` is damaged, or None when it is sound, absent, or merely of
    an older schema. `thorough`: SQLite's quick_check, FTS5's content check included (what
    `index --force` runs before setting a file aside); else only its length and the pages
    and b-trees of its tables (`Store.page_problems`, what every plain `index` runs)."""
    from groove_cli.dbfile import damage_error
    from groove_cli.errors import GrooveError

    if not db.is_file():
        return None
    try:
        store = Store.open_readonly(db)
        try:
            problems = (store.file_problems(quick=True, limit=3) if thorough
                        else store.page_problems(limit=3))
        finally:
            store.close()
    except DamagedIndex as exc:
        return exc.reason or exc.message
    except GrooveError:
        return None
    except Exception as exc:
        damaged = damage_error(exc)
        if damaged is None:
            raise
        return damaged.message
    return "; ".join(problems) if problems else None


def refuse_damaged(db: Path) -> None:
    """A plain `index` on a damaged file stops before writing anything (writing would extend
    a cut file, or build on damaged pages and print `Done`): the damaged-index error, whose
    hint names `groove index --force`."""
    from groove_cli.dbfile import damaged

    reason = damage_of(db, thorough=False)
    if reason is not None:
        raise damaged(reason)
