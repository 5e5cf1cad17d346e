"""The plots of `groove tune --report html|png FILE` (tune.md §12): the sweep as pictures —
the first phase's grid as a heatmap of mean nDCG@5 (the fusion space's 64 bm25 weight sets, the retrieval
space's 15 weight-ratio × CJK-weight pairs; the fusion-method space's candidates as a line),
the second phase's one-axis sweep as a line with its 95 % CI band, the chosen condition and
the built-in one (what a KB without tuned keys runs) marked on both, and the held-out
per-query deltas of the leave-one-out check.

Data: the `TuneReport` that `Index.tune` returns (its sweep scores and selection); the
condition grid and labels come from the tune package that made them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from groove_cli.evaluate.tune.grid import (
    BM25_WEIGHT_VALUES,
    CJK_WEIGHTS,
    PRIMARY_K,
    WEIGHT_RATIOS,
    default_index,
    grid,
    grid_indices,
)
from groove_cli.evaluate.tune.select import select_detail
from groove_cli.pictures.draw import COLOURS, Plot, plain

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from groove_cli.evaluate.tune.report import TuneReport

CHOSEN = "#d35400"
CURRENT = "#e0115f"


def _stats(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its normal 95 % CI (0 for fewer than two values)."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, 1.96 * sd / math.sqrt(n)


class Sweep:
    """Mean nDCG@5 over the effective queries, with CI, of every condition of a report."""

    def __init__(self, report: TuneReport) -> None:
        self.space = report.sweep.space
        self.conditions = grid(self.space)
        effective = [i for i, d in enumerate(report.diagnostics) if d.effective]
        scores = report.sweep.ndcg5
        self.selection = select_detail(scores, effective, self.space)
        self.stats = [_stats([float(scores[c, q]) for q in effective])
                      for c in range(len(self.conditions))]
        self.chosen = report.loo.refit
        self.current = default_index(self.space)
        self.decision = report.verdict.decision

    def mean(self, c: int) -> float:
        return self.stats[c][0]


def _short(c: int, sweep: Sweep, among: Sequence[int]) -> str:
    """A condition's label naming only the keys that differ among `among`."""
    values = sweep.conditions[c].values()
    if sweep.space == "fusion-method" and len(among) > 3:  # the first phase's candidates
        if values["method"] != "score":
            return str(values["method"]).upper()
        alphas = {values[k] for k in ("score_alpha_short", "score_alpha_mid", "score_alpha_long")}
        if len(alphas) == 1:
            return f"α={values['score_alpha']:g}"
        return f"length rule\n{values['short_query_words']}/{values['mid_query_words']} words"
    varying = [key for key in values
               if len({str(sweep.conditions[o].values()[key]) for o in among}) > 1]
    shown = [f"{key}={values[key]:g}" if isinstance(values[key], float) else
             f"{key}={values[key]}" for key in varying or list(values)[:1]]
    return plain("\n".join(shown))


def _heatmap_axes(sweep: Sweep) -> tuple[list[list[int]], list[str], list[str], str, str] | None:
    """The phase-1 conditions as a grid: (condition index per cell, row labels, column labels,
    row title, column title); None when the space has no two-axis phase 1 (fusion-method)."""
    phase1 = sweep.selection.phase1
    if sweep.space == "fusion":
        w = BM25_WEIGHT_VALUES
        rows = [[0] * 16 for _ in w]
        for c in phase1:
            h, ctx, content, _ = grid_indices("fusion", c)
            rows[h][ctx * 4 + content] = c
        columns = [f"{w[i]:g}/{w[j]:g}" for i in range(4) for j in range(4)]
        return rows, [f"{v:g}" for v in w], columns, "bm25 heading weight", \
            "bm25 context / content weight"
    if sweep.space == "retrieval":
        rows = [[0] * len(CJK_WEIGHTS) for _ in WEIGHT_RATIOS]
        for c in phase1:
            ratio, cjk, _ = grid_indices("retrieval", c)
            rows[ratio][cjk] = c
        return rows, [f"{v:g}" for v in WEIGHT_RATIOS], [f"{v:g}" for v in CJK_WEIGHTS], \
            "vector / fts weight ratio", "cjk_weight"
    return None


def _mark_cell(ax: Axes, rows: list[list[int]], c: int, *, colour: str, marker: str,
               gid: str, name: str) -> None:
    for y, row in enumerate(rows):
        for x, cell in enumerate(row):
            if cell == c:
                point = ax.scatter([x], [y], s=140, marker=marker, facecolors="none",
                                   edgecolors=colour, linewidths=2.2, label=name, zorder=3)
                point.set_gid(gid)
                return


def phase1_counterpart(sweep: Sweep, c: int) -> int:
    """The first-phase condition of `c`: the same on every axis but the one the second phase
    sweeps (a chosen condition whose second-phase value differs from the first phase's)."""
    phase1, phase2 = sweep.selection.phase1, sweep.selection.phase2
    if c in phase1:
        return c
    axes = [grid_indices(sweep.space, p) for p in phase2]
    swept = {i for i in range(len(axes[0])) if len({a[i] for a in axes}) > 1} if axes else set()
    target = grid_indices(sweep.space, c)
    for p in phase1:
        other = grid_indices(sweep.space, p)
        if all(other[i] == target[i] for i in range(len(target)) if i not in swept):
            return p
    return c


def surface_plot(sweep: Sweep) -> Plot:
    layout = _heatmap_axes(sweep)
    if layout is None:
        return _candidates_plot(sweep)
    rows, row_labels, column_labels, row_title, column_title = layout
    chosen_cell = phase1_counterpart(sweep, sweep.chosen)
    current_cell = phase1_counterpart(sweep, sweep.current)

    def draw(ax: Axes) -> None:
        values = [[sweep.mean(c) for c in row] for row in rows]
        image = ax.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
        image.set_gid("sweep-surface")
        ax.figure.colorbar(image, ax=ax, label=f"mean nDCG@{PRIMARY_K}", pad=0.01)
        ax.set_xticks(range(len(column_labels)), column_labels, fontsize=7,
                      rotation=45 if len(column_labels) > 6 else 0)
        ax.set_yticks(range(len(row_labels)), row_labels)
        ax.set_xlabel(column_title)
        ax.set_ylabel(row_title)
        ax.grid(False)
        _mark_cell(ax, rows, current_cell, colour=CURRENT, marker="o", gid="tune-current",
                   name="built-in")
        _mark_cell(ax, rows, chosen_cell, colour=CHOSEN, marker="*", gid="tune-chosen",
                   name="chosen")
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, fontsize=8,
                  frameon=False)

    best = max(sweep.mean(c) for row in rows for c in row)
    worst = min(sweep.mean(c) for row in rows for c in row)
    caption = (f"First phase: mean nDCG@{PRIMARY_K} over the effective queries of each "
               f"condition (from {worst:.3f} to {best:.3f}; a flat surface means the setting "
               "matters little). Star: the chosen condition; circle: the built-in one.")
    return Plot("plot-sweep", "Sweep surface", caption, draw, height=3.4)


def _candidates_plot(sweep: Sweep) -> Plot:
    """fusion-method's first phase (or feedback's only one): its candidates side by side, CI
    bars, marks."""
    phase1 = list(sweep.selection.phase1)

    def draw(ax: Axes) -> None:
        xs = list(range(len(phase1)))
        means = [sweep.mean(c) for c in phase1]
        errors = [sweep.stats[c][1] for c in phase1]
        line = ax.errorbar(xs, means, yerr=errors, marker="o", color=COLOURS[0], capsize=3)
        line[0].set_gid("sweep-surface")
        ax.set_xticks(xs, [_short(c, sweep, phase1) for c in phase1], fontsize=7)
        for c, colour, marker, gid, name in (
                (phase1_counterpart(sweep, sweep.current), CURRENT, "o", "tune-current",
                 "built-in"),
                (phase1_counterpart(sweep, sweep.chosen), CHOSEN, "*", "tune-chosen",
                 "chosen")):
            if c in phase1:
                point = ax.scatter([phase1.index(c)], [sweep.mean(c)], s=160, marker=marker,
                                   color=colour, zorder=3, label=name)
                point.set_gid(gid)
        ax.set_ylabel(f"mean nDCG@{PRIMARY_K} (95 % CI)")
        ax.legend(fontsize=8)

    if sweep.space == "feedback":
        return Plot("plot-sweep", "Sweep: vector feedback's beta",
                    "Each beta's mean nDCG@5 with its 95 % CI (0: feedback off).", draw,
                    height=3.8)
    if sweep.space == "per-note":
        return Plot("plot-sweep", "Sweep: hits per note",
                    "Each cap's mean nDCG@5 with its 95 % CI (0: no cap).", draw, height=3.8)
    return Plot("plot-sweep", "Sweep: the fusion candidates",
                "First phase: each candidate fusion's mean nDCG@5 with its 95 % CI.", draw,
                height=3.8)


def line_plot(sweep: Sweep) -> Plot:
    """The second phase: one axis swept at the first phase's choice, with the CI band."""
    phase2 = list(sweep.selection.phase2)

    def draw(ax: Axes) -> None:
        xs = list(range(len(phase2)))
        means = [sweep.mean(c) for c in phase2]
        half = [sweep.stats[c][1] for c in phase2]
        band = ax.fill_between(xs, [m - h for m, h in zip(means, half, strict=True)],
                               [m + h for m, h in zip(means, half, strict=True)],
                               color=COLOURS[0], alpha=0.15, linewidth=0, label="95 % CI")
        band.set_gid("sweep-ci-band")
        ax.plot(xs, means, marker="o", color=COLOURS[0], label=f"mean nDCG@{PRIMARY_K}")
        for c, colour, marker, gid, name in ((sweep.current, CURRENT, "o", "tune-current-2",
                                              "built-in"),
                                             (sweep.chosen, CHOSEN, "*", "tune-chosen-2",
                                              "chosen")):
            if c in phase2:
                point = ax.scatter([phase2.index(c)], [sweep.mean(c)], s=170, marker=marker,
                                   color=colour, zorder=3, label=name)
                point.set_gid(gid)
        ax.set_xticks(xs, [_short(c, sweep, phase2) for c in phase2], fontsize=7)
        ax.set_ylabel(f"mean nDCG@{PRIMARY_K}")
        ax.legend(fontsize=8, loc="lower right")

    return Plot("plot-sweep-line", "Second phase", (
        "The one axis the second phase sweeps at the first phase's choice; the band is the "
        "95 % CI of each mean (normal approximation over the effective queries)."), draw,
        height=3.4)


def loo_plot(report: TuneReport) -> Plot:
    diffs = sorted(float(d) for d in report.loo.held_out_diffs)

    def draw(ax: Axes) -> None:
        xs = list(range(len(diffs)))
        ax.bar(xs, diffs, color=[COLOURS[1] if d < 0 else COLOURS[2] for d in diffs],
                      width=1.0)
        ax.set_gid("held-out-deltas")  # a BarContainer has no id of its own
        ax.axhline(0, color="#444444", linewidth=0.8)
        ax.set_xticks([])
        ax.set_xlabel("held-out queries, sorted")
        ax.set_ylabel(f"Δ nDCG@{PRIMARY_K}")

    mean = report.loo.mean_delta
    caption = (f"Leave-one-out: each query's nDCG@{PRIMARY_K} under the condition chosen "
               "without it, minus the built-in condition's"
               + (f" (mean {mean:+.4f})." if mean is not None and math.isfinite(mean) else "."))
    return Plot("plot-held-out", "Held-out deltas", caption, draw, height=2.4)
