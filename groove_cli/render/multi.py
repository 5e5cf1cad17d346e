"""Output of a search over several KBs (cli.md §5.5): every hit names its KB.

The hits themselves are drawn as a single KB's are (results.py `hit_json`, and render/search.py
`print_search` one hit at a time for text), so a multi-KB hit looks like a single-KB one plus its KB.
"""

from __future__ import annotations

import dataclasses

from groove_cli import messages
from groove_cli.multi import MultiOutcome
from groove_cli.render.output import print_json
from groove_cli.render.search import print_search
from groove_cli.render.terminal import Painter, shown_path
from groove_cli.results import absolute, hit_json
from groove_cli.text import printable


def multi_json(outcome: MultiOutcome, explain: bool,
               filter_applied: dict[str, object]) -> dict[str, object]:
    stale = {name: o.stale for name, o in outcome.outcomes}
    return {
        "results": [{"kb": h.kb, "kb_rank": h.kb_rank, **hit_json(
            h.hit, explain, h.kb_root, stale=h.hit.chunk.path in stale[h.kb])}
                    for h in outcome.hits],
        "fusion": outcome.fusion,
        "kbs": [{"name": name, "kb_path": o.kb_root, "hits": len(o.result.hits),
                 "low_confidence": o.result.low_confidence} for name, o in outcome.outcomes],
        "low_confidence": outcome.low_confidence,
        "filter_applied": filter_applied,
    }


def print_multi(outcome: MultiOutcome, fmt: str, *, explain: bool,
                filter_applied: dict[str, object], no_color: bool = False,
                full: bool = False) -> None:
    """Print the fused hits of several KBs in `fmt` (json, text or files)."""
    if fmt == "json":
        print_json(multi_json(outcome, explain, filter_applied))
        return
    weak = [name for name, o in outcome.outcomes if o.result.low_confidence]
    painter = Painter(no_color=no_color)
    if fmt == "files":
        if weak:
            messages.note(f"weak match in {', '.join(weak)}")
        seen: set[tuple[str | None, str]] = set()
        for h in outcome.hits:
            if (h.kb_root, h.hit.chunk.path) not in seen:
                seen.add((h.kb_root, h.hit.chunk.path))
                painter.line([(printable(shown_path(h.kb_root, h.hit.chunk.path),
                                         keep_newlines=False), "magenta")],
                             link=absolute(h.kb_root, h.hit.chunk.path))
        painter.flush()
        return
    if weak:
        painter.line([(f"[weak match in: {', '.join(weak)}]", "yellow")])
        painter.line([])
    painter.flush()
    params = dict(outcome.outcomes)
    for number, h in enumerate(outcome.hits):
        if number:
            painter.line([("", None)])
            painter.line([("---", "dim")])
            painter.line([("", None)])
        painter.line([(f"[{h.kb}] #{h.kb_rank} in {h.kb}", "green")])
        painter.flush()
        own = params[h.kb]
        one = dataclasses.replace(own, messages=(), result=dataclasses.replace(
            own.result, hits=(h.hit,), low_confidence=False))
        print_search(one, "text", explain=False, no_color=no_color, full=full)
