"""`groove kb add/list/remove`: the named collections of the per-user config (kbs.py), which
`-c NAME` selects from any folder (cli.md §11), and `search`'s adapter for several KBs
(`-c a -c b`, `--all`). Registered on the app by cli_app.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groove_cli import kbs, messages, statedir
from groove_cli.cli_options import (
    FilterFlags,
    FormatOpt,
    check_format,
    chosen_collections,
    global_options,
    resolve_paths,
    run_core,
    sub_app,
)
from groove_cli.errors import UsageError
from groove_cli.render import output

if TYPE_CHECKING:
    from groove_cli.multi import MultiOutcome

kb_app = sub_app("Name knowledge bases so -c NAME finds them from any folder.")


def _entry(item: kbs.Collection) -> dict[str, object]:
    return {"name": item.name, "path": str(item.path),
            "exists": item.path.is_dir(),
            "indexed": item.path.is_dir() and statedir.has_index(item.path)}


@kb_app.command("add")
def kb_add(
    path: Annotated[Path, typer.Argument(help="The KB folder (the folder of notes).")],
    name: Annotated[str | None, typer.Option(
        "--name", help="The collection's name (default: the folder's name).")] = None,
) -> None:
    """Name a KB folder, so `-c NAME` selects it from any folder.

    Example: `groove kb add ~/notes --name notes`, then `groove search "retry" -c notes`
    """
    added = run_core(lambda: kbs.add_collection(path, name))
    output.print_line(f"added collection {added.name}: {added.path}")
    if not statedir.has_index(added.path):
        output.print_line(f"not indexed yet: groove index -c {added.name}")


@kb_app.command("list")
def kb_list(format: FormatOpt = "text") -> None:
    """List the named collections, their folders and whether each is indexed.

    Example: `groove kb list --format json`
    """
    fmt = check_format(format, ("text", "json"))
    entries = [_entry(item) for item in run_core(kbs.load_collections)]
    if fmt == "json":
        output.print_json({"collections": entries})
        return
    if not entries:
        output.print_line("no collections; groove kb add PATH --name NAME adds one")
        return
    width = max(len(str(e["name"])) for e in entries)
    for e in entries:
        state = "indexed" if e["indexed"] else ("missing" if not e["exists"] else "not indexed")
        output.print_line(f"{e['name']!s:<{width}}  {e['path']}  ({state})")


@kb_app.command("remove")
def kb_remove(
    name: Annotated[str, typer.Argument(help="The collection's name (groove kb list).")],
) -> None:
    """Forget a collection's name; its folder and its index stay as they are.

    Example: `groove kb remove notes`
    """
    removed = run_core(lambda: kbs.remove_collection(name))
    output.print_line(f"removed collection {removed.name} ({removed.path}); its files are "
                      "unchanged")


def several_names(ctx: typer.Context, *, all_kbs: bool, kb_path: Path | None) -> list[str]:
    """The collections a multi-KB search runs over, each once, in the order named."""
    names = chosen_collections(ctx)
    if kb_path is not None:
        raise UsageError("--kb-path names one KB; to search several, name each with -c NAME "
                         "(groove kb add PATH --name NAME) or pass --all")
    if global_options(ctx).db is not None:
        raise UsageError("--db names one index; it cannot be combined with several -c or --all")
    if all_kbs and names:
        raise UsageError("--all already searches every collection; drop the -c names")
    if all_kbs:
        names = [c.name for c in kbs.distinct_folders(kbs.load_collections())]
        if not names:
            raise UsageError("--all: there are no collections yet",
                             hint="groove kb add PATH --name NAME adds one")
    return list(dict.fromkeys(names))


def search_several(ctx: typer.Context, flags: Callable[[], dict[str, object]], query: str, *,
                   limit: int, filters: FilterFlags, fmt: str, explain: bool, all_kbs: bool,
                   kb_path: Path | None, no_color: bool, full: bool = False) -> None:
    """`search -c a -c b` / `--all`: each KB with its own settings, one fused list
    (multi.py)."""
    if fmt in ("md", "csv"):
        raise UsageError(f"--format {fmt} prints one KB's hits",
                         hint="with several KBs use --format json, text or files")
    from groove_cli.api import Index
    from groove_cli.multi import KbTarget, search_kbs
    from groove_cli.render.multi import print_multi

    def run() -> MultiOutcome:
        base = flags()
        targets = []
        for name in several_names(ctx, all_kbs=all_kbs, kb_path=kb_path):
            paths = resolve_paths(ctx, base, kb_required=True, announce=False, collection=name)
            assert paths.kb is not None
            targets.append(KbTarget(name, Index(paths.settings, paths.kb, paths.db)))
        return search_kbs(targets, query, limit=limit, filters=filters.filters(),
                          skip_unindexed=all_kbs)

    outcome = run_core(run)
    for _, own in outcome.outcomes:
        messages.replay(own.messages)
    applied = dict(outcome.outcomes[0][1].filter_applied) if outcome.outcomes else {}
    print_multi(outcome, fmt, explain=explain, filter_applied=applied, no_color=no_color,
                full=full)
