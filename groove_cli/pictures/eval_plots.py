"""The plots of an eval history (eval.md §15): the quality metrics over the stored runs with
their 95 % CIs and every settings or corpus change marked, the per-query deltas of a run
against its reference, and, for `--ablate`, one bar per configuration.

`eval --report` (render/eval_pictures.py) draws them from the public API's answers: the run and
its compared run (`Index.evaluate`), the stored runs (`Index.history`), a baseline file's run
(`Index.baseline`), the ablation document (`Index.ablate`). The web view's history page draws
the stored runs alone (`history_document`, through `Index.history_pictures`). Drawing is
draw.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groove_cli.evaluate.baseline import settings_diff, value_text
from groove_cli.evaluate.history import find_compared, is_judged
from groove_cli.evaluate.metrics import metric_label
from groove_cli.pictures.draw import COLOURS, Plot, plain, svg

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from groove_cli.evaluate.report import EvalReport

Run = Mapping[str, Any]
MAX_QUERY_BARS = 30
"""Per-query plot: at most this many queries (the largest losses and gains)."""


def k_max(run: Run) -> int:
    return max(int(k) for k in run["fingerprint"].get("k_values") or [10])


def _series(run: Run, name: str, k: int) -> tuple[float, list[float] | None]:
    """A metric's mean and 95 % CI in a run's aggregate (`ndcg_at_k` at k, or `mrr`)."""
    agg, ci = run["aggregate"], run["aggregate"].get("ci95") or {}
    if name == "mrr":
        return float(agg["mrr"]), ci.get("mrr")
    return float(agg[name][str(k)]), (ci.get(name) or {}).get(str(k))


def _run_label(number: int, run: Run) -> str:
    stamp = str(run.get("timestamp", ""))
    return f"{number}\n{stamp[5:10]} {stamp[11:16]}"


def changes(runs: Sequence[Run]) -> list[tuple[int, str, str]]:
    """Every change between consecutive runs (oldest first): `(index of the later run, kind,
    text)`, kind `settings` (the fingerprint differs: which settings, from what to what) or
    `corpus` (the notes changed)."""
    found: list[tuple[int, str, str]] = []
    for i in range(1, len(runs)):
        before, after = runs[i - 1], runs[i]
        diff = settings_diff(before["fingerprint"], after["fingerprint"])
        if diff:
            found.append((i, "settings", "; ".join(
                f"{d['setting']}: {value_text(d['before'])} → {value_text(d['after'])}"
                for d in diff)))
        if before.get("corpus", {}).get("digest") != after.get("corpus", {}).get("digest"):
            b, a = before.get("corpus", {}), after.get("corpus", {})
            found.append((i, "corpus", f"notes changed ({b.get('documents')} → "
                                       f"{a.get('documents')} notes, {b.get('chunks')} → "
                                       f"{a.get('chunks')} chunks)"))
    return found


def history_plot(runs: Sequence[Run]) -> Plot:
    """The metrics over the runs (oldest first), CI bands, changes as numbered vertical lines."""
    k = k_max(runs[-1])
    metrics = [("ndcg_at_k", f"nDCG@{k}"), ("recall_at_k", f"recall@{k}"), ("mrr", "MRR")]
    marks = changes(runs)
    notes = [f"{'S' if kind == 'settings' else 'C'}{n}, before run {i + 1}: {text}"
             for n, (i, kind, text) in enumerate(marks, start=1)]

    def draw(ax: Axes) -> None:
        xs = list(range(len(runs)))
        low, high = 1.0, 0.0
        for colour, (name, label) in zip(COLOURS, metrics, strict=False):
            values, lows, highs = [], [], []
            for run in runs:
                value, ci = _series(run, name, k)
                values.append(value)
                lows.append(ci[0] if ci else value)
                highs.append(ci[1] if ci else value)
            low, high = min(low, *lows), max(high, *highs)
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.15, linewidth=0)
            ax.plot(xs, values, marker="o", color=colour, label=plain(label), linewidth=1.6)
        settings_n = corpus_n = 0
        for n, (i, kind, _) in enumerate(marks, start=1):
            if kind == "settings":
                settings_n += 1
                gid, style, colour = f"settings-change-{settings_n}", "--", "#444444"
            else:
                corpus_n += 1
                gid, style, colour = f"corpus-change-{corpus_n}", ":", "#999999"
            line = ax.axvline(i - 0.5, linestyle=style, color=colour, linewidth=1.2)
            line.set_gid(gid)
            text = ax.annotate(f"{'S' if kind == 'settings' else 'C'}{n}", (i - 0.5, 1.0),
                               xycoords=("data", "axes fraction"), ha="center", va="bottom",
                               fontsize=8, color=colour)
            text.set_gid(gid + "-label")
        ax.set_xticks(xs, [_run_label(i + 1, run) for i, run in enumerate(runs)], fontsize=7)
        ax.set_xlim(-0.5, max(len(runs) - 0.5, 0.5))
        ax.set_ylim(max(0.0, low - 0.05), min(1.02, high + 0.05))
        ax.set_ylabel("score (95 % CI band)")
        ax.legend(loc="lower left", fontsize=8, ncols=3)

    caption = (f"{len(runs)} stored runs, oldest first; bands are the 95 % bootstrap CIs of each "
               "mean. Dashed lines (S) mark a change of settings, dotted lines (C) a change of "
               "the notes, between two runs.")
    return Plot("plot-history", "Quality over the stored runs", caption, draw, notes=notes)


def query_deltas(run: Run, reference: Run) -> list[tuple[str, float]]:
    """(query id, Δ nDCG@k) of every query judged in both runs whose value changed, worst
    first."""
    k = str(k_max(run))
    before = {q["id"]: q for q in reference.get("per_query", []) if is_judged(q)}
    found = []
    for query in run.get("per_query", []):
        old = before.get(query["id"])
        if old is None or not is_judged(query):
            continue
        delta = (float(query["metrics"]["ndcg_at_k"][k])
                 - float(old["metrics"]["ndcg_at_k"].get(k, 0.0)))
        if abs(delta) > 1e-12:
            found.append((str(query["id"]), delta))
    return sorted(found, key=lambda item: (item[1], item[0]))


def deltas_plot(run: Run, reference: Run, against: str) -> Plot:
    k = k_max(run)
    deltas = query_deltas(run, reference)
    shown = deltas if len(deltas) <= MAX_QUERY_BARS else (
        deltas[:MAX_QUERY_BARS // 2] + deltas[-MAX_QUERY_BARS // 2:])
    worse = sum(d < 0 for _, d in deltas)

    def draw(ax: Axes) -> None:
        if not shown:
            ax.text(0.5, 0.5, f"no query's nDCG@{k} changed", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
            return
        ys = list(range(len(shown)))
        ax.barh(ys, [d for _, d in shown],
                       color=[COLOURS[1] if d < 0 else COLOURS[2] for _, d in shown])
        ax.set_gid("query-deltas")  # a BarContainer has no id of its own
        ax.set_yticks(ys, [plain(q) for q, _ in shown], fontsize=7)
        ax.invert_yaxis()
        ax.axvline(0, color="#444444", linewidth=0.8)
        ax.set_xlabel(f"Δ nDCG@{k} (this run − {plain(against)})")

    height = max(2.0, 0.9 + 0.2 * len(shown))
    caption = (f"{len(deltas)} queries changed against {against}: {worse} worse (red), "
               f"{len(deltas) - worse} better (green)"
               + (f"; the {len(shown)} largest changes shown" if len(shown) < len(deltas) else "")
               + ".")
    return Plot("plot-query-deltas", f"Per-query nDCG@{k} against {against}", caption, draw,
                height=height)


def ablation_plot(report: Mapping[str, Any]) -> Plot:
    """One bar per configuration of `eval --ablate`: Δ of its metric against the default with
    its paired 95 % CI."""
    rows = list(report["configurations"])
    label = metric_label(report["metric"])

    def draw(ax: Axes) -> None:
        ys = list(range(len(rows)))
        deltas = [float(r["delta"]) for r in rows]
        errors = [[max(0.0, d - (r["ci95"] or [d, d])[0]) for d, r in zip(deltas, rows,
                                                                         strict=True)],
                  [max(0.0, (r["ci95"] or [d, d])[1] - d) for d, r in zip(deltas, rows,
                                                                         strict=True)]]
        ax.barh(ys, deltas, xerr=errors, capsize=3,
                       color=[COLOURS[1] if r["significantly_worse"] else COLOURS[0]
                              for r in rows])
        ax.set_gid("ablation-bars")  # a BarContainer has no id of its own
        ax.set_yticks(ys, [plain(r["name"]) for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="#444444", linewidth=0.8)
        ax.set_xlabel(f"Δ {label} against the default configuration (95 % CI)")

    caption = ("Each configuration switches one part; red: significantly worse than the "
               f"default (paired randomization p < 0.05). Cheapest not worse: "
               f"{report.get('cheapest_not_worse')}.")
    return Plot("plot-ablation", f"Ablation: {label} per configuration", caption, draw,
                height=max(2.2, 0.9 + 0.3 * len(rows)))


def reference_for(report: EvalReport, runs: Sequence[Run], baseline: Run | None
                  ) -> tuple[Run, str] | None:
    """What the per-query deltas compare with: the `--baseline` file's run, else the compared
    (previous compatible) run, else the run before this one."""
    if baseline is not None:
        return baseline, "the baseline"
    if report.compared is not None:
        return report.compared, "the previous compatible run"
    older = [r for r in runs if r.get("timestamp") != report.run.get("timestamp")]
    return (older[-1], "the previous run") if older else None


def run_meta(run: Run) -> str:
    """A run in one line: when, model, reranker, judged queries."""
    fp = run["fingerprint"]
    return (f"run {run.get('timestamp')} · model {fp.get('model')} · reranker "
            f"{fp.get('reranker') or 'none'} · {run['aggregate'].get('query_count')} judged "
            "queries")


def history_reference(runs: Sequence[Run]) -> tuple[Run, str] | None:
    """What the newest stored run's per-query deltas compare with (`runs` newest first): the
    newest older run with its fingerprint (the run `eval` compared it with), else the run
    before it; None for a single run."""
    if len(runs) < 2:
        return None
    compared = find_compared([dict(run) for run in runs[1:]], runs[0]["fingerprint"])
    if compared is not None:
        return compared, "the previous compatible run"
    return runs[1], "the previous run"


def history_document(history: Sequence[Run]) -> dict[str, Any]:
    """The stored runs as pictures, for a page to show (`Index.history_pictures`; `history`
    newest first, as the history file keeps it): `{runs, meta, plots: [{id, title, caption,
    notes, svg}]}` — the history plot and the newest run's per-query deltas against
    `history_reference`. No run: no plots, and matplotlib is not loaded."""
    if not history:
        return {"runs": 0, "meta": [], "plots": []}
    plots = [history_plot(list(reversed(history)))]
    reference = history_reference(history)
    meta = [f"newest {run_meta(history[0])}"]
    if reference is None:
        meta.append("one stored run: no earlier run to compare queries with")
    else:
        plots.append(deltas_plot(history[0], *reference))
    return {"runs": len(history), "meta": meta,
            "plots": [{"id": plot.id, "title": plot.title, "caption": plot.caption,
                       "notes": list(plot.notes), "svg": svg(plot)} for plot in plots]}
