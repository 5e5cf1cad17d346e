"""Drawing the pictures of `eval --report`, `tune --report` (eval.md §15, tune.md §12) and the
web view's eval history page (serve.md §4.2): plots drawn by matplotlib, as SVG elements, one
self-contained HTML page (inline SVG, inline style, no script, nothing fetched) or one PNG.

matplotlib is the `pictures` extra and is imported here only, inside the functions that draw,
with its Agg backend (no display, no network): a command without `--report`, and a server
until its history page is asked for, never loads it. Each report is a list of `Plot`s — a
title, a caption and a function drawing on one matplotlib Axes — so the HTML page shows each
plot as its own SVG under its own heading, and the PNG stacks the same plots in one image.
Text from notes, golden files or settings reaches the HTML only through `html.escape`, and
reaches matplotlib with `$` escaped (no mathtext). pyplot's state is global: one drawing runs
at a time (a server draws on its worker threads).
"""

from __future__ import annotations

import html
import io
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from groove_cli.errors import GrooveError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH_IN = 9.0
"""Figure width in inches (at 100 dpi: 900 px, the page's content width)."""
PLOT_HEIGHT_IN = 3.6
COLOURS = ("#1f5fbf", "#c0392b", "#2e8b57", "#8e44ad", "#d35400", "#7f8c8d")


@dataclass(frozen=True)
class Plot:
    """One picture of a report: drawn on one Axes by `draw`."""

    id: str
    """The SVG's id in the HTML page (`plot-history`, `plot-sweep`, …)."""
    title: str
    caption: str
    draw: Callable[[Axes], None]
    height: float = PLOT_HEIGHT_IN
    notes: Sequence[str] = field(default_factory=tuple)
    """Lines listed under the plot (what each numbered marker means)."""


class NoMatplotlib(GrooveError):
    """matplotlib is not installed (the `pictures` extra)."""

    def __init__(self) -> None:
        super().__init__("drawing the pictures needs matplotlib",
                         hint="pip install 'groove-cli[pictures]'")


_DRAWING = threading.Lock()
"""Held while a figure is drawn: pyplot keeps global state."""


def file_label(path: str | PurePath | None) -> str:
    """A file as a report names it: its folder's name and its own (`kb/.groove-eval.yml`),
    never the whole path — reports are shared, and a path names the machine it ran on."""
    if path is None or str(path) == "":
        return "none"
    place = PurePath(path)
    return f"{place.parent.name}/{place.name}" if place.parent.name else place.name


def plain(text: object) -> str:
    """Text for matplotlib: `$` escaped so that nothing is read as mathtext."""
    return str(text).replace("$", r"\$")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise NoMatplotlib from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "svg.fonttype": "none",  # text stays text in the SVG (searchable, small)
        "svg.hashsalt": "groove",  # the same ids on every run
        "font.size": 9.0,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
    })
    return plt


def _figure(plot: Plot) -> Figure:
    plt = _pyplot()
    fig = plt.figure(figsize=(WIDTH_IN, plot.height), dpi=100, layout="constrained")
    plot.draw(fig.add_subplot(1, 1, 1))
    return fig  # type: ignore[no-any-return]


def svg(plot: Plot) -> str:
    """One plot as an SVG element (no XML prologue), with `plot.id` as its id."""
    with _DRAWING:
        plt = _pyplot()
        fig = _figure(plot)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(fig)
    text = out.getvalue()
    start = text.index("<svg ")  # after the XML prologue and the doctype
    body = re.sub(r"<metadata>.*?</metadata>\s*", "", text[start + len("<svg "):], flags=re.S)
    return f'<svg id="{html.escape(plot.id)}" ' + body


def png(plots: Sequence[Plot], title: str) -> bytes:
    """Every plot stacked in one PNG, under the report's title."""
    heights = [p.height for p in plots] or [1.0]
    with _DRAWING:
        plt = _pyplot()
        fig = plt.figure(figsize=(WIDTH_IN, sum(heights) + 0.4), dpi=100, layout="constrained")
        grid = fig.add_gridspec(len(heights), 1, height_ratios=heights)
        fig.suptitle(plain(title), fontsize=11, fontweight="bold")
        for row, plot in enumerate(plots):
            ax = fig.add_subplot(grid[row, 0])
            plot.draw(ax)
            ax.set_title(plain(plot.title), fontsize=10, loc="left")
        out = io.BytesIO()
        fig.savefig(out, format="png", metadata={"Software": None})
        plt.close(fig)
    return out.getvalue()


STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 960px; padding: 1rem;
       color: #1d1d1f; background: #fff; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .2rem; }
.meta { color: #5f6368; font-size: .85rem; }
figure { margin: .4rem 0; }
figure svg { width: 100%; height: auto; }
figcaption { color: #5f6368; font-size: .85rem; }
ol.notes { font-size: .85rem; }
table { border-collapse: collapse; font-size: .85rem; }
td, th { padding: .15rem .6rem; border-bottom: 1px solid #ddd; text-align: left; }
"""


def html_page(title: str, meta: Sequence[str], plots: Sequence[Plot],
              tables: Sequence[tuple[str, Sequence[str], Sequence[Sequence[str]]]] = ()) -> str:
    """The self-contained page: the title, meta lines, each plot's SVG with its heading,
    caption and notes, then any tables (heading, column names, rows). Everything given as text
    is escaped."""
    esc = html.escape
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             # a CI artifact opened from disk: nothing may run or load
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; img-src data:\">",
             f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{esc(title)}</h1>"]
    parts += [f'<p class="meta">{esc(line)}</p>' for line in meta]
    for plot in plots:
        parts.append(f'<section class="plot" id="section-{esc(plot.id)}">'
                     f"<h2>{esc(plot.title)}</h2><figure>{svg(plot)}"
                     f"<figcaption>{esc(plot.caption)}</figcaption></figure>")
        if plot.notes:
            parts.append('<ol class="notes">' + "".join(
                f"<li>{esc(note)}</li>" for note in plot.notes) + "</ol>")
        parts.append("</section>")
    for heading, columns, rows in tables:
        parts.append(f"<h2>{esc(heading)}</h2><table><tr>"
                     + "".join(f"<th>{esc(c)}</th>" for c in columns) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>"
                  for row in rows]
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
