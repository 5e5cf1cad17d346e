"""The golden set a run measures (eval.md §1, §12): located, read from the golden file (YAML or
JSON, golden.py) or from TREC qrels and topics (trec.py), its queries checked and repeated ones
warned about. Shared by eval, ablate and tune; a module of its own so that neither file format
imports the other.
"""

from __future__ import annotations

from pathlib import Path

from groove_cli import messages
from groove_cli.config import Settings
from groove_cli.errors import UsageError
from groove_cli.evaluate.golden import (
    GoldenSet,
    find_golden,
    load_golden,
    normalize,
    repeated_queries_warning,
)


def load_golden_set(settings: Settings, kb: Path, explicit: Path | None,
                    topics: Path | None = None) -> GoldenSet:
    """Locate and validate the golden file (eval.md §1); shared with tune and ablate. With
    `topics`, the golden file is a TREC qrels file and the queries come from the topics file
    (eval.md §12). Repeated queries get a warning: each copy counts again in every mean."""
    if topics is not None and explicit is None:
        raise UsageError("--topics needs --golden QRELS (the TREC qrels file)")
    path = find_golden(explicit, settings.path("eval.golden"), kb)

    from groove_cli.retrieve.query import compile_query

    def check(text: str) -> None:
        compile_query(text)

    if topics is not None:
        from groove_cli.evaluate.trec import load_trec_golden

        golden = load_trec_golden(path, topics, check_query=check)
    else:
        golden = load_golden(path, check_query=check)
        if golden.has_defaults:
            messages.detail("golden defaults are ignored")
    repeated = repeated_queries_warning(golden, normalize)
    if repeated:
        messages.warning(repeated)
    return golden
