"""What the server does, transport-free: the served KBs' warm `Index` objects and the calls
every transport (MCP tools, the JSON routes, forwarded commands) makes through them.

Every call goes through the public API (`groove_cli.api.Index`): no second search path. Callers
are untrusted: `get`, `multi_get` and `fetch` read only a note `index` would select in a
served KB (scan.Selection: KB-relative, no link anywhere on the path, excluded folders and
ignored files refused), exactly the file that was checked, with byte caps. A watched
re-index builds a fresh `Index`, warms it, and swaps it in; searches already running finish
on the old one, which is closed when the last of them leaves.

Each search hit gets a short id (`hit_id`: 8 hex digits of a hash of its path and first line),
remembered here so `get` and `fetch` take it as a location. What the MCP instructions say
about the served KBs (`about`: notes, chunks, languages) is read once from each index's counts
and a sample of its chunks, without loading the SDK, a model or numpy.
"""

from __future__ import annotations

import fnmatch
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli.errors import GrooveError, UsageError
from groove_cli.serve import codec
from groove_cli.serve.state import index_id

if TYPE_CHECKING:
    from groove_cli.api import Index
    from groove_cli.get import Location
    from groove_cli.results import Results
    from groove_cli.scan import Selection
    from groove_cli.status import StatusReport

GET_MAX_BYTES = 1_000_000
"""The largest note `get` and `fetch` return whole (a line range of a bigger one is fine)."""
MULTI_GET_MAX_BYTES = 200_000
"""Default byte budget of one `multi_get` answer."""
MULTI_GET_HARD_MAX = 2_000_000
MULTI_GET_MAX_FILES = 200
MAX_QUERY_CHARS = 4_000
MAX_LIMIT = 100
MCP_NAME = "groove"
"""The MCP server's name (its `initialize` answer)."""
MAX_LINES = 100_000
"""The largest `max_lines` a `get` or `multi_get` takes (the byte caps bound the answer)."""
HIT_IDS_KEPT = 10_000
"""How many search hits' short ids the server remembers (the oldest are forgotten first)."""
_HIT_ID = re.compile(r"#?([0-9a-f]{8})")


@dataclass
class Served:
    """One served KB: its current Index and the leases on every Index still in use."""

    name: str
    index: Index
    leases: dict[int, int] = field(default_factory=dict)
    retired: dict[int, Index] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    problem: str | None = None
    """Why this KB is no longer kept up to date (its watcher stopped), shown on /health."""

    @property
    def kb(self) -> Path | None:
        return self.index.kb

    @contextmanager
    def lease(self) -> Iterator[Index]:
        """The current Index, kept open until the caller is done with it."""
        with self.lock:
            index = self.index
            self.leases[id(index)] = self.leases.get(id(index), 0) + 1
        try:
            yield index
        finally:
            close = None
            with self.lock:
                left = self.leases[id(index)] - 1
                self.leases[id(index)] = left
                if left == 0:
                    del self.leases[id(index)]
                    close = self.retired.pop(id(index), None)
            if close is not None:
                close.close()

    def swap(self, fresh: Index) -> None:
        """Serve `fresh` from now on; close the old Index once no call uses it."""
        with self.lock:
            old, self.index = self.index, fresh
            if self.leases.get(id(old)):
                self.retired[id(old)] = old
                old = None  # type: ignore[assignment]
        if old is not None:
            old.close()

    def close(self) -> None:
        with self.lock:
            indexes = [self.index, *self.retired.values()]
            self.retired.clear()
        for index in indexes:
            index.close()


def kb_names(indexes: Sequence[Index]) -> list[str]:
    """A short unique name per served KB: its folder name (or store KB id), numbered on clashes."""
    names: list[str] = []
    for index in indexes:
        base = index.kb.name if index.kb is not None else str(index.settings["kb_path"] or "kb")
        name, n = base or "kb", 2
        while name in names:
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


def hit_id(path: str, line_start: int) -> str:
    """A search hit's short id: 8 hex digits of a hash of its KB-relative path and first
    line, so the same hit has the same id in every search and every server run."""
    import hashlib

    return hashlib.sha256(f"{path}:{line_start}".encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class HitPlace:
    """Where a short id points: a KB's note and the hit's lines."""

    kb: str
    path: str
    line_start: int
    line_end: int

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line_start}:{self.line_end - self.line_start + 1}"


@dataclass(frozen=True, slots=True)
class About:
    """What a served KB holds, for the MCP instructions."""

    name: str
    notes: int
    chunks: int
    languages: tuple[str, ...]

    def line(self) -> str:
        languages = ", ".join(self.languages) or "languages unknown"
        return f"- {self.name}: {self.notes} notes, {self.chunks} chunks; {languages}"


class Service:
    """The served KBs and the calls on them (see the module doc)."""

    def __init__(self, indexes: Sequence[Index]) -> None:
        if not indexes:
            raise UsageError("nothing to serve", hint="pass one or more KB folders")
        self.kbs = {name: Served(name, index)
                    for name, index in zip(kb_names(indexes), indexes, strict=True)}
        self.warm = threading.Event()
        """Set once every KB's warm-up search has run (runner.warm_up); /health shows it."""
        self._hits: OrderedDict[str, set[HitPlace]] = OrderedDict()
        self._hits_lock = threading.Lock()
        self._about: list[About] | None = None

    def close(self) -> None:
        for served in self.kbs.values():
            served.close()

    def served(self, kb: str | None) -> Served:
        """The KB a call names (the first served one when it names none)."""
        if kb is None or kb == "":
            return next(iter(self.kbs.values()))
        if not isinstance(kb, str):
            raise UsageError(f"kb must be the name of a served KB, not {type(kb).__name__}")
        if kb in self.kbs:
            return self.kbs[kb]
        raise UsageError(f"unknown kb {kb[:64]!r}", hint=f"served: {listed(self.kbs)}")

    def by_index(self, index: str) -> Served | None:
        """The served KB whose index `index_id` is `index`."""
        for served in self.kbs.values():
            if index_id(served.index.location) == index:
                return served
        return None

    def indexes(self) -> list[str]:
        return [index_id(s.index.location) for s in self.kbs.values()]

    def problems(self) -> dict[str, str]:
        """What is wrong with each KB that has a problem (a stopped watcher), by name."""
        return {name: s.problem for name, s in self.kbs.items() if s.problem}

    # ------------------------------------------------------------------ short ids

    def remember_hit(self, kb: str, path: str, line_start: int, line_end: int) -> str:
        """A hit's short id (`hit_id`), remembered so `get` and `fetch` take it."""
        key = hit_id(path, line_start)
        place = HitPlace(kb, path, line_start, line_end)
        with self._hits_lock:
            places = {p for p in self._hits.pop(key, set())
                      if (p.kb, p.path, p.line_start) != (kb, path, line_start)}
            places.add(place)
            self._hits[key] = places
            while len(self._hits) > HIT_IDS_KEPT:
                self._hits.popitem(last=False)
        return key

    def hit_place(self, text: str, kb: str | None = None) -> HitPlace | None:
        """The hit a short id names; None when `text` is not a short id (notes always have
        an extension, so no note path looks like one)."""
        match = _HIT_ID.fullmatch(text.strip())
        if match is None:
            return None
        key = match[1]
        with self._hits_lock:
            places = set(self._hits.get(key, ()))
        if kb:
            name = self.served(kb).name
            places = {p for p in places if p.kb == name}
        if not places:
            raise GrooveError(f"unknown id {key}: not a hit of this server's recent searches",
                              hint="search again and use a hit's id, or pass PATH:LINE")
        if len(places) > 1:
            shown = ", ".join(sorted(f"{p.kb}:{p.path}:{p.line_start}" for p in places))
            raise GrooveError(f"id {key} names {len(places)} hits: {shown}",
                              hint="pass kb, or the hit's PATH:LINE")
        return places.pop()

    # ------------------------------------------------------------------ instructions

    def about(self) -> list[About]:
        """Each served KB's notes, chunks and languages (read once)."""
        if self._about is None:
            self._about = [about_kb(served) for served in self.kbs.values()]
        return self._about

    def instructions(self) -> str:
        """The MCP server's instructions: what is served and how to call the tools."""
        kbs = self.about()
        first = kbs[0].name
        pick = (f" Pass `kb` to pick one (default {first})." if len(kbs) > 1 else "")
        return "\n".join([
            "groove searches the user's Markdown notes: hybrid full-text + vector search. "
            "Full-text matching works best with words in the notes' language.",
            "Served knowledge bases:" + pick,
            *(about.line() for about in kbs),
            "Use `search` first; each hit has an `id` (8 characters): pass it to `get` as "
            "`location` to read that hit's lines (`max_lines` caps them, `line_numbers` "
            "numbers them). `multi_get` reads several notes (a glob or a list), `status` "
            "tells what each index holds.",
            "`list_topics` shows what the notes cover (per folder and topic), "
            "`get_connection_graph` the notes nearest in meaning to one note, `rebuild_index` "
            "brings the index up to date; the prompts (summarize_topic, deep_dive, whats_new, "
            "find_gaps) are recipes for longer tasks.",
            "Examples:",
            '  search {"query": "retry budget for the payments API", "limit": 5}',
            '  get {"location": "<id of a hit>", "max_lines": 40, "line_numbers": true}',
        ])

    # ------------------------------------------------------------------ search

    def search(self, query: str, *, limit: int = 5, mode: str | None = None,
               filters: Mapping[str, Any] | None = None, kb: str | None = None) -> Results:
        """One search through the KB's warm Index (filters: the fields of `api.Filters`)."""
        if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
            raise UsageError(f"the query must be text of at most {MAX_QUERY_CHARS} characters")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit {limit!r} must be a whole number from 1 to {MAX_LIMIT}")
        with self.served(kb).lease() as index:
            return index.search(query, limit=limit, mode=mode, filters=make_filters(filters))

    def cli_search(self, request: Mapping[str, Any]) -> Results | str:
        """A `groove search` of the command line (client.forward_search's request): its exact
        flags on this KB's Index; else why not (`foreign`: not an index served here,
        `mismatch`: the command line resolved other settings than these flags give here)."""
        from groove_cli.serve.client import settings_fingerprint

        served = self.by_index(str(request.get("index")))
        if served is None:
            return "foreign"
        flags = dict(request.get("flags") or {})
        with served.lease() as index:
            effective = index.with_settings(**flags)
            if settings_fingerprint(effective) != request.get("fingerprint"):
                return "mismatch"
            return index.search(str(request.get("query")), limit=int(request.get("limit", 5)),
                                filters=make_filters(request.get("filters")),
                                files=bool(request.get("files")), **flags)

    def forwarded_search(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """`cli_search` for a forwarded call: the Results encoded for the command line's own
        renderer, or `{foreign|mismatch: true}`."""
        results = self.cli_search(request)
        if isinstance(results, str):
            return {results: True}
        return {"results": codec.encode(results)}

    # ------------------------------------------------------------------ status

    def status(self, kb: str | None = None) -> StatusReport:
        with self.served(kb).lease() as index:
            return index.status()

    def history_pictures(self, kb: str | None = None) -> dict[str, Any]:
        """The web view's history page (serve.md §4.2): the KB's stored eval runs as
        pictures (`Index.history_pictures`), with the KB's served name."""
        served = self.served(kb)
        with served.lease() as index:
            return {"kb": served.name, **index.history_pictures()}

    def forwarded_status(self, request: Mapping[str, Any]) -> dict[str, Any]:
        served = self.by_index(str(request.get("index")))
        if served is None:
            return {"foreign": True}
        with served.lease() as index:
            return {"report": codec.encode(index.status())}

    # ------------------------------------------------------------------ notes

    def selection(self, served: Served) -> Selection:
        """The rules that pick this KB's notes, as `index` applies them (scan.Selection)."""
        from groove_cli.scan import Selection

        kb = served.kb
        if kb is None:
            raise GrooveError("this KB has no folder to read notes from",
                              hint="serve it with its KB folder")
        settings = served.index.settings
        return Selection.of(kb, exclude_dirs=[str(d) for d in settings.list_("exclude_dirs")],
                            extensions=[str(p) for p in settings.list_("parsers.enabled")],
                            hidden_dirs=settings.bool_("index_hidden_dirs"))

    def locate(self, served: Served, location: str) -> tuple[Path, Location]:
        """The note file `location` names and the lines it asks for. The whole text is tried
        as a note first, then `PATH:LINE[:COUNT]`; the path is checked against the KB's
        selection (scan.Selection.note) and exactly the checked file is read afterwards."""
        from groove_cli.get import Location, parse_location

        if not isinstance(location, str) or not location.strip():
            raise UsageError("the location is empty; pass PATH, PATH:LINE or PATH:LINE:COUNT "
                             "relative to the KB")
        selection = self.selection(served)
        try:
            return selection.note(location.strip()), Location(location.strip())
        except GrooveError as whole:
            where = parse_location(location)
            if where.line is None:
                raise whole from None
        return selection.note(where.path), where

    def get(self, location: str, kb: str | None = None, max_bytes: int = GET_MAX_BYTES, *,
            max_lines: int | None = None, line_numbers: bool = False) -> dict[str, Any]:
        """`get PATH[:LINE[:COUNT]]` (or a hit's short id) inside a served KB: the document
        `get --format json` prints, plus the KB-relative path. `max_lines` keeps the first
        lines (`truncated` and `next`, the location of the rest, say so); `line_numbers`
        starts each line with its number."""
        from groove_cli.chunk import ChunkRules
        from groove_cli.get import Excerpt, excerpt_at

        check_lines(max_lines, line_numbers)
        place = self.hit_place(location, kb) if isinstance(location, str) else None
        if place is not None:
            location, kb = place.location, place.kb
        served = self.served(kb)
        full, where = self.locate(served, location)
        if where.line is None and max_lines is None and full.stat().st_size > max_bytes:
            raise GrooveError(f"{where.path} is larger than {max_bytes} bytes",
                              hint="ask for a line range (PATH:LINE:COUNT) or pass max_lines")
        excerpt = excerpt_at(full, where, ChunkRules.of(served.index.settings))
        end = excerpt.line_end
        cut = max_lines is not None and end - excerpt.line_start + 1 > max_lines
        if cut:
            assert max_lines is not None
            excerpt = Excerpt(full, excerpt.line_start, excerpt.line_start + max_lines - 1)
        lines = list(excerpt.lines(max_bytes))  # streamed: the cap stops the read itself
        assert served.kb is not None  # locate refused a KB without a folder
        rel = full.relative_to(served.kb).as_posix()
        last = excerpt.line_start + len(lines) - 1
        if line_numbers:
            lines = [f"{n}: {line}" for n, line in enumerate(lines, excerpt.line_start)]
        note: dict[str, Any] = {"path": str(full), "line_start": excerpt.line_start,
                                "line_end": last, "content": "\n".join(lines),
                                "kb": served.name, "rel_path": rel}
        if cut and last < end:
            note.update(truncated=True, next=f"{rel}:{last + 1}:{end - last}")
        return note

    def multi_get(self, paths: str | Sequence[str], kb: str | None = None,
                  max_bytes: int = MULTI_GET_MAX_BYTES, *, max_lines: int | None = None,
                  line_numbers: bool = False) -> dict[str, Any]:
        """Several notes: a glob over the KB's notes or a list of paths, whole notes (their
        first `max_lines` lines with `max_lines`) until `max_bytes` is spent; the rest are
        listed as skipped with the reason."""
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not (
                1 <= max_bytes <= MULTI_GET_HARD_MAX):
            raise UsageError(f"max_bytes {max_bytes!r} must be from 1 to {MULTI_GET_HARD_MAX}")
        check_lines(max_lines, line_numbers)
        served = self.served(kb)
        if isinstance(paths, str):
            wanted = self._glob(served, paths)
        elif isinstance(paths, list | tuple) and all(isinstance(p, str) for p in paths):
            wanted = list(paths)
        else:
            raise UsageError("paths must be a glob or a list of note paths")
        if len(wanted) > MULTI_GET_MAX_FILES:
            raise UsageError(f"{len(wanted)} notes asked for; at most {MULTI_GET_MAX_FILES}",
                             hint="narrow the glob")
        notes: list[dict[str, Any]] = []
        skipped: list[dict[str, str]] = []
        spent = 0
        for rel in wanted:
            try:
                size = self.locate(served, rel)[0].stat().st_size
                if max_lines is None and spent + size > max_bytes:
                    skipped.append({"path": rel, "reason": f"over the {max_bytes}-byte budget"})
                    continue
                note = self.get(rel, served.name, max_bytes=max_bytes - spent,
                                max_lines=max_lines, line_numbers=line_numbers)
            except GrooveError as exc:
                skipped.append({"path": rel, "reason": exc.message})
                continue
            spent += len(note["content"].encode("utf-8"))
            notes.append(note)
        return {"kb": served.name, "notes": notes, "skipped": skipped, "bytes": spent}

    def _glob(self, served: Served, pattern: str) -> list[str]:
        """The KB's notes (as `index` selects them) whose relative path matches `pattern`."""
        from groove_cli.scan import walk

        selection = self.selection(served)
        if not pattern.strip() or pattern.startswith("/") or ".." in Path(pattern).parts:
            raise UsageError(f"{pattern!r}: give a glob relative to the KB, e.g. ops/*.md")
        scan = walk(selection)
        found = [f.rel for f in scan.files if fnmatch.fnmatchcase(f.rel, pattern)]
        return found[:MULTI_GET_MAX_FILES + 1]

    def fetch(self, id: str) -> dict[str, Any]:
        """A connector's `fetch`: one note's lines by the id `search` gave (a hit's short id,
        or `KB:PATH` or `PATH`, optionally `:LINE`), as {id, title, text, url, metadata}."""
        if not isinstance(id, str) or not id.strip():
            raise UsageError("fetch needs the id of a search result")
        kb, _, rest = id.partition(":") if id.split(":", 1)[0] in self.kbs else ("", "", id)
        note = self.get(rest, kb or None)
        path = Path(note["path"])
        return {"id": id, "title": path.stem, "text": note["content"], "url": path.as_uri(),
                "metadata": {"kb": note["kb"], "path": note["rel_path"],
                             "line_start": note["line_start"], "line_end": note["line_end"]}}


def check_lines(max_lines: Any, line_numbers: Any) -> None:
    """`max_lines` and `line_numbers` as `get` and `multi_get` take them."""
    if max_lines is not None and (isinstance(max_lines, bool) or not isinstance(max_lines, int)
                                  or not 1 <= max_lines <= MAX_LINES):
        raise UsageError(f"max_lines {str(max_lines)[:40]!r} must be a whole number from 1 to "
                         f"{MAX_LINES}")
    if not isinstance(line_numbers, bool):
        raise UsageError("line_numbers must be true or false")


LANGUAGE_SAMPLE = 100
"""How many chunks `about_kb` reads to tell a KB's languages (their first 1,000 characters)."""


def about_kb(served: Served) -> About:
    """A KB's notes, chunks and languages, from its index's counts and a sample of chunks
    spread over it (no search: the store's reader, opened and closed here)."""
    from groove_cli.store import open_reader

    try:
        store = open_reader(served.index.location, served.name)
        try:
            notes, chunks = store.document_count(), store.chunk_count()
            step = max(1, chunks // LANGUAGE_SAMPLE)
            texts = [c.content for c in store.chunks_by_id(range(1, chunks + 1, step)).values()]
            if len(texts) < min(chunks, LANGUAGE_SAMPLE) // 4:  # ids far from 1..chunks
                texts = []
                for row in store.corpus_rows():
                    texts.append(row[3])
                    if len(texts) >= LANGUAGE_SAMPLE:
                        break
        finally:
            store.close()
    except Exception as exc:  # the first search reports it; the server still starts
        import logging

        logging.getLogger("groove.serve").warning("cannot read %s: %s", served.name, exc)
        return About(served.name, 0, 0, ("index unreadable",))
    from groove_cli.text.languages import languages

    return About(served.name, notes, chunks, languages(texts))


def listed(names: Sequence[str] | Mapping[str, Any], most: int = 8) -> str:
    """Names for a hint, the first `most` of them and how many more."""
    shown = list(names)[:most]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def make_filters(data: Any) -> Any:
    """`api.Filters` from a JSON object of its fields (unknown fields are a usage error)."""
    from groove_cli.api import Filters

    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise UsageError("filters must be an object of filter fields")
    known = set(Filters.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"unknown filter {unknown[0]!r}", hint=f"use {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("path_glob", "tag_any", "tag_all"):
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"filter {key} must be text or a list of text")
            value = tuple(value)
        elif key == "include_low_quality":
            if not isinstance(value, bool):
                raise UsageError("filter include_low_quality must be true or false")
        elif key == "min_quality":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise UsageError("filter min_quality must be a number")
        elif value is not None and not isinstance(value, str):
            raise UsageError(f"filter {key} must be text")
        values[key] = value
    return Filters(**values)
