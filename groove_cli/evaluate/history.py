"""Eval run history (`eval-history.json` in the KB's state folder, statedir.py), and the
comparisons made against it.

Reading refuses files that are not plain files of ours (links, devices, huge files) and asks the
user to pass `--no-history`; content that does not parse is set aside as `.corrupt-<time>` (every
damaged copy is kept) so a damaged file never blocks `eval`. Writes go through a temporary file
and a rename, so a crash leaves either the old or the new history, never half of one (eval.md
§7, §8).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groove_cli import messages
from groove_cli.dbfile import corrupt_copy_path
from groove_cli.errors import GrooveError
from groove_cli.evaluate.golden import RefusedFile, read_regular_file, size_text
from groove_cli.evaluate.metrics import BY_NAME, METRICS, MISS_METRIC
from groove_cli.jsondoc import loads_bounded
from groove_cli.statedir import HISTORY_NAME, LEGACY_HISTORY, ensure, history_file

ALL_METRICS = " / ".join(f"{m.label}@k" if m.at_k else m.label for m in METRICS)
"""`recall@k / MRR / nDCG@k`: every metric, as the regression message names them."""

__all__ = ["HISTORY_NAME", "LEGACY_HISTORY"]
MAX_HISTORY_BYTES = 64 * 1024 * 1024
"""Larger history files are refused on read and trimmed (oldest runs first) on write."""

GOLDEN_CHANGED = "⚠️ golden changed since last run, diff disabled"
CONFIG_CHANGED = "⚠️ config or metric version changed since last run, diff disabled"
NO_COMPARED_NOTE = "no compatible previous run; nothing to compare against"

_HINT = "pass --no-history to run eval without reading or writing the history"
RUN_MEMBERS: tuple[tuple[str, type], ...] = (
    ("timestamp", str),
    ("fingerprint", dict),
    ("corpus", dict),
    ("per_query", list),
    ("aggregate", dict),
)
RUN_KEYS = tuple(name for name, _ in RUN_MEMBERS)
"""The members of a stored run, in order (`findings` is optional and not listed)."""

Run = dict[str, Any]


def history_path(kb: Path, location: str | None = None) -> Path:
    """The history file of a KB: its state folder's, or `<kb>/.groove-eval-history.json` while
    that file exists (eval.md §7)."""
    return history_file(kb, location)


def load_history(path: Path, *, max_bytes: int = MAX_HISTORY_BYTES) -> list[Run]:
    """The stored runs, newest first; [] when there is no history yet.

    Raises:
        GrooveError: the file is a symlink, hard link, not a regular file, over the size cap,
            or cannot be read; the hint suggests `--no-history`.
    """
    try:
        raw = read_regular_file(path, max_bytes)
    except FileNotFoundError:
        return []
    except RefusedFile as refused:
        raise GrooveError(f"refusing to read eval history {path}: {refused}", hint=_HINT) from None
    except OSError as exc:
        raise GrooveError(
            f"cannot read eval history {path}: {exc.strerror or exc}", hint=_HINT
        ) from None
    try:
        return _parse_runs(raw)
    except ValueError as exc:
        backup = corrupt_copy_path(path)
        try:
            os.replace(path, backup)
        except OSError as move_error:
            raise GrooveError(
                f"eval history {path} cannot be parsed ({exc}) and cannot be moved aside: "
                f"{move_error.strerror or move_error}",
                hint=_HINT,
            ) from None
        messages.warning(
            f"eval history {path} cannot be parsed ({exc}); kept it as {backup} and starting "
            "a new history"
        )
        return []


def history_problem(path: Path, *, max_bytes: int = MAX_HISTORY_BYTES) -> str | None:
    """Why `eval` would refuse or set aside the history file `path`, without moving anything
    (doctor); None when it is absent or sound."""
    try:
        _parse_runs(read_regular_file(path, max_bytes))
    except FileNotFoundError:
        return None
    except RefusedFile as refused:
        return f"{path}: {refused}"
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    except ValueError as exc:
        return f"{path} cannot be parsed ({exc})"
    return None


def parse_json(raw: bytes) -> object:
    """Decode UTF-8 JSON, nesting bounded (jsondoc.MAX_JSON_DEPTH); ValueError with a short
    reason (shared with the baseline file)."""
    try:
        return loads_bounded(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno}") from None


def _parse_runs(raw: bytes) -> list[Run]:
    """Decode `{"runs": [EvalRun, …]}`; ValueError (with a short reason) when it is not that."""
    document = parse_json(raw)
    if not isinstance(document, dict) or not isinstance(document.get("runs"), list):
        raise ValueError('expected an object with a "runs" list')
    runs: list[Run] = document["runs"]
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            raise ValueError(f"runs[{i}] is not an object")
        for name, kind in RUN_MEMBERS:
            if not isinstance(run.get(name), kind):
                raise ValueError(f"runs[{i}].{name} is missing or of the wrong type")
        check_aggregate(run["aggregate"], f"runs[{i}].aggregate")
        for j, entry in enumerate(run["per_query"]):
            check_query_metrics(entry, f"runs[{i}].per_query[{j}]", required=False)
    return runs


METRIC_RANGE = "a number from 0 to 1"


def metric_number(value: object) -> float | None:
    """A stored metric (every registered metric lies in [0, 1]) as a float; None for anything
    else (missing, not a number, NaN, infinite, out of range)."""
    number = _number(value)
    return number if number is not None and 0.0 <= number <= 1.0 else None


def check_query_metrics(entry: object, where: str, *, required: bool,
                        k_values: Sequence[int] = ()) -> None:
    """One stored query's metrics are each a number in [0, 1]; ValueError naming the spot.
    `required`: every registered metric must be there, at every k of `k_values` (what a paired
    comparison reads); else only the values present are checked. Whole-list metrics first."""
    metrics = entry.get("metrics") if isinstance(entry, dict) else None
    if not isinstance(metrics, dict):
        if required:
            raise ValueError(f"{where}.metrics is missing")
        return
    for metric in sorted(METRICS, key=lambda m: m.at_k):
        block = metric.query_key
        if not metric.at_k:
            if (block in metrics or required) and metric_number(metrics.get(block)) is None:
                raise ValueError(f"{where}.metrics.{block} is missing or not {METRIC_RANGE}")
            continue
        values = metrics.get(block)
        if not isinstance(values, dict):
            if required or values is not None:
                raise ValueError(f"{where}.metrics.{block} is missing")
            continue
        for k in ([str(k) for k in k_values] if required else list(values)):
            if metric_number(values.get(k)) is None:
                raise ValueError(f"{where}.metrics.{block}.{k} is missing or not {METRIC_RANGE}")


def check_aggregate(block: Mapping[str, Any], where: str) -> None:
    """A stored run's metrics must be numbers in [0, 1]: a damaged value compared against a new
    run would crash eval or pass for a regression (exit 1), so it makes the file unparseable.
    The whole-list metrics are checked first, then the blocks by k."""
    for metric in sorted(METRICS, key=lambda m: m.at_k):
        name = metric.aggregate_key
        if not metric.at_k:
            if metric_number(block.get(name)) is None:
                raise ValueError(f"{where}.{name} is missing or not {METRIC_RANGE}")
            continue
        values = block.get(name)
        if not isinstance(values, dict):
            raise ValueError(f"{where}.{name} is missing or not an object")
        for k, value in values.items():
            if metric_number(value) is None:
                raise ValueError(f"{where}.{name}.{k} is not {METRIC_RANGE}")


def _serialise(runs: Sequence[Run]) -> bytes:
    return (json.dumps({"runs": list(runs)}, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def save_history(
    path: Path,
    runs: Sequence[Run],
    run: Run,
    history_size: int,
    *,
    max_bytes: int = MAX_HISTORY_BYTES,
) -> list[Run]:
    """Insert `run` at the front, keep `history_size` runs and write the file atomically.

    When the result would exceed `max_bytes`, the oldest runs are dropped (the largest prefix
    that fits is kept) with a warning.

    Returns:
        The runs written, newest first.

    Raises:
        GrooveError: the new run alone is over the cap, or the file cannot be written.
    """
    kept: list[Run] = [run, *runs][: max(1, history_size)]
    data = _serialise(kept)
    if len(data) > max_bytes:
        single = _serialise(kept[:1])
        if len(single) > max_bytes:
            raise GrooveError(
                f"this eval run alone takes {len(single)} bytes, over the {size_text(max_bytes)} "
                "history cap; the history was not written",
                hint="use a smaller --limit or pass --no-history",
            )
        fits, too_big = 1, len(kept)
        while too_big - fits > 1:
            middle = (fits + too_big) // 2
            if len(_serialise(kept[:middle])) <= max_bytes:
                fits = middle
            else:
                too_big = middle
        messages.warning(
            f"eval history would exceed {size_text(max_bytes)}; dropped the {len(kept) - fits} "
            "oldest run(s)"
        )
        kept = kept[:fits]
        data = _serialise(kept)
    if path.name == HISTORY_NAME:  # in a state folder: made with its .gitignore
        ensure(path.parent)
    write_atomic(path, data)
    return kept


def write_atomic(path: Path, data: bytes, *, what: str = "eval history",
                 hint: str | None = _HINT) -> None:
    """Write `data` to `{path}.tmp`, flush it to disk, then rename it over `path`.

    `what` names the file in the error (`cannot write {what} {path}: …`); shared with the
    baseline file, which must never be left half-written either.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise GrooveError(f"cannot write {what} {path}: {exc.strerror or exc}", hint=hint) from None


def _as_json(value: object) -> object:
    """The JSON value of `value` (tuples become lists), so fingerprints compare as JSON does."""
    return json.loads(json.dumps(value))


def find_compared(runs: Sequence[Run], fingerprint: Mapping[str, object]) -> Run | None:
    """The newest stored run whose fingerprint equals `fingerprint`, or None."""
    wanted = _as_json(fingerprint)
    for run in runs:
        if _as_json(run.get("fingerprint")) == wanted:
            return run
    return None


def incompatibility_header(runs: Sequence[Run], fingerprint: Mapping[str, object]) -> str | None:
    """Why no stored run is comparable, judged against the newest run; None if not applicable.

    None when there is no history or a compatible run exists. Otherwise the golden-changed
    header when the newest run's golden hash differs, else the config-changed header.
    """
    if not runs or find_compared(runs, fingerprint) is not None:
        return None
    newest = runs[0].get("fingerprint")
    if not isinstance(newest, dict) or newest.get("golden_hash") != fingerprint.get("golden_hash"):
        return GOLDEN_CHANGED
    return CONFIG_CHANGED


def _number(value: object) -> float | None:
    """A finite float, or None for anything else (missing, null, NaN, infinite)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _by_k(block: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    values = block.get(name)
    return values if isinstance(values, dict) else {}


def diff_aggregates(prev: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, Any]:
    """Δ = now − previous for every metric (a k missing before counts as 0.0).

    Returns:
        the blocks by k first (`{"recall_at_k": {k: Δ}, "ndcg_at_k": {k: Δ}}`, the current
        run's k keys), then the whole-list metrics (`"mrr": Δ`).
    """
    result: dict[str, Any] = {}
    for metric in sorted(METRICS, key=lambda m: not m.at_k):
        name = metric.aggregate_key
        if not metric.at_k:
            result[name] = float(now[name]) - float(prev[name])
            continue
        before = _by_k(prev, name)
        result[name] = {
            k: float(value) - float(before.get(k, 0.0)) for k, value in _by_k(now, name).items()
        }
    return result


def aggregate_regressed(prev: Mapping[str, Any], now: Mapping[str, Any], threshold: float) -> bool:
    """True when any metric at any k fell by strictly more than `threshold`.

    The k values are those of the current run; a k missing from the previous run counts as 0.0.
    Non-finite values are skipped.
    """
    pairs: list[tuple[object, object]] = []
    for metric in METRICS:
        name = metric.aggregate_key
        if not metric.at_k:
            pairs.append((prev.get(name), now.get(name)))
            continue
        before = _by_k(prev, name)
        pairs.extend((before.get(k, 0.0), value) for k, value in _by_k(now, name).items())
    for before_value, now_value in pairs:
        p, n = _number(before_value), _number(now_value)
        if p is not None and n is not None and p - n > threshold:
            return True
    return False


def _query_metrics(entry: Mapping[str, Any], k_max: int) -> list[tuple[str, object]]:
    """Each metric of a stored query at k_max, by per-query name (0.0 when absent)."""
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict):
        return []
    return [(metric.query_name(k_max),
             _by_k(metrics, metric.query_key).get(str(k_max), 0.0) if metric.at_k
             else metrics.get(metric.query_key, 0.0)) for metric in METRICS]


def query_regressions(
    prev_run: Mapping[str, Any], now_run: Mapping[str, Any], k_max: int, threshold: float
) -> list[dict[str, Any]]:
    """Queries (matched by id) whose value of any metric at k_max fell by more than `threshold`.

    Returns:
        `[{"id", "metrics": {name: [previous, now]}}]` in the current run's query order, listing
        only the metrics that fell; names are `Metric.query_name` (`recall@{k}`,
        `reciprocal_rank`, `ndcg@{k}`).
    """
    previous = {
        entry.get("id"): entry for entry in prev_run.get("per_query", []) if isinstance(entry, dict)
    }
    regressions: list[dict[str, Any]] = []
    for entry in now_run.get("per_query", []):
        before = previous.get(entry.get("id"))
        if before is None:
            continue
        old = dict(_query_metrics(before, k_max))
        fell: dict[str, list[float]] = {}
        for name, value in _query_metrics(entry, k_max):
            p, n = _number(old.get(name, 0.0)), _number(value)
            if p is not None and n is not None and p - n > threshold:
                fell[name] = [p, n]
        if fell:
            regressions.append({"id": entry["id"], "metrics": fell})
    return regressions


def is_judged(entry: Mapping[str, Any]) -> bool:
    """Whether a stored query has a relevant entry (grade 1 when absent, eval.md §1): the
    queries that count in aggregates and pairings; grade-0-only queries are unjudged."""
    expected = entry.get("expected")
    return isinstance(expected, list) and any(
        not isinstance(e, dict) or e.get("grade", 1) != 0 for e in expected)


def is_miss(entry: Mapping[str, Any], k_max: int) -> bool:
    """A miss: the query has no relevant expected entry, or its `MISS_METRIC` (recall) at
    k_max is 0."""
    if not is_judged(entry):
        return True
    value = dict(_query_metrics(entry, k_max)).get(BY_NAME[MISS_METRIC].query_name(k_max), 0.0)
    return _number(value) == 0.0


def corpus_changed(prev_corpus: Mapping[str, Any], now_corpus: Mapping[str, Any]) -> bool:
    """Whether the document count, chunk count or digest differ."""
    members = ("documents", "chunks", "digest")
    return any(prev_corpus.get(m) != now_corpus.get(m) for m in members)


def corpus_change_text(
    prev_corpus: Mapping[str, Any], now_corpus: Mapping[str, Any]
) -> str | None:
    """`{p} -> {n} documents, {p} -> {n} chunks`, or `same counts, different contents`; None if equal."""
    if not corpus_changed(prev_corpus, now_corpus):
        return None
    before = (prev_corpus.get("documents"), prev_corpus.get("chunks"))
    after = (now_corpus.get("documents"), now_corpus.get("chunks"))
    if before == after:
        return "same counts, different contents"
    return f"{before[0]} -> {after[0]} documents, {before[1]} -> {after[1]} chunks"


def regression_error_text(threshold: float, corpus_note: str | None) -> str:
    """The --fail-on-regression error; `corpus_note` is `corpus_change_text(...)` (None: unchanged)."""
    note = ""
    if corpus_note is not None:
        note = (
            f" The indexed corpus also changed since the compared run ({corpus_note}), which "
            "shifts rankings on its own."
        )
    return (
        f"retrieval-quality regression detected (delta > {threshold:.3f} on at least one of "
        f"{ALL_METRICS}).{note} Exiting with code 1 because --fail-on-regression was set."
    )
