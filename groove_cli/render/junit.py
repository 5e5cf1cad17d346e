"""`groove eval --format junit`: the run as JUnit XML, which every CI system displays.

Shape (the common JUnit schema: testsuites > testsuite > properties, testcase):

- one testcase per golden query (classname `groove.eval.query`): failed when no expected note
  is in the top k (k = the largest k), skipped when the query has no expected entries (it is
  left out of the aggregates); its metrics go to `system-out`;
- one testcase per gate check (classname `groove.eval.gate`), only under --fail-on-regression;
- the aggregate metrics, their CIs and the settings as testsuite properties.

The document is built and serialised by ElementTree, and every text and attribute goes through
`xml_safe` first: a character XML 1.0 cannot carry (NUL, ESC, BEL and the other C0 controls
but tab and line breaks, U+FFFE/U+FFFF, lone surrogates) is written as a visible `\\xNN` /
`\\uNNNN` escape, so the file is always well-formed whatever a query, id or path holds.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groove_cli.evaluate.baseline import Comparison
from groove_cli.evaluate.history import is_judged, is_miss
from groove_cli.evaluate.metrics import block_items, metric_label
from groove_cli.render.gate import title_text, verdict_text

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """`text` with each character XML 1.0 cannot carry as a visible escape (`\\x1b`)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def _made_safe(root: ET.Element) -> ET.Element:
    """Every text, tail and attribute of the tree through `xml_safe`."""
    for element in root.iter():
        if element.text:
            element.text = xml_safe(element.text)
        if element.tail:
            element.tail = xml_safe(element.tail)
        for name, value in element.attrib.items():
            element.set(name, xml_safe(value))
    return root


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One check of the regression gate: `failure` is the message when it failed; `skipped`
    the reason when there was nothing to check."""

    name: str
    failure: str | None = None
    skipped: str | None = None


def gate_checks(*, enabled: bool, comparison: Comparison | None, compared_timestamp: str | None,
                regression_error: str | None) -> list[GateCheck]:
    """The gate's checks as JUnit sees them (none unless --fail-on-regression was given)."""
    if not enabled:
        return []
    if comparison is not None:
        name = f"{metric_label(comparison.primary.metric)} against {title_text(comparison)}"
        return [GateCheck(name, failure=regression_error if comparison.regressed else None)]
    if compared_timestamp is not None:
        return [GateCheck(f"aggregate against the run of {compared_timestamp}",
                          failure=regression_error)]
    return [GateCheck("regression gate", skipped="no compatible previous run; nothing to "
                                                 "compare against")]


def _k_max(run: Mapping[str, Any]) -> int:
    return max([int(k) for k in run["fingerprint"].get("k_values") or [0]])


def _aggregate_properties(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    aggregate = run["aggregate"]
    ci = aggregate.get("ci95", {})
    props: list[tuple[str, str]] = []

    def add(name: str, value: object, interval: object) -> None:
        props.append((name, repr(value)))
        if isinstance(interval, list):
            props.append((f"{name}.ci95", f"{interval[0]!r},{interval[1]!r}"))

    for metric, k, value in block_items(aggregate):
        add(metric.full_name(k), value, metric.of_block(ci, metric.aggregate_key, k))
    props.append(("query_count", str(aggregate["query_count"])))
    return props


def _settings_properties(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    props = [(f"fingerprint.{key}", value if isinstance(value, str) else json.dumps(value))
             for key, value in run["fingerprint"].items()]
    corpus = run["corpus"]
    props += [("corpus.documents", str(corpus["documents"])),
              ("corpus.chunks", str(corpus["chunks"])), ("corpus.digest", str(corpus["digest"]))]
    return props


def _query_case(suite: ET.Element, entry: Mapping[str, Any], k_max: int) -> tuple[bool, bool]:
    """Add one query's testcase; returns (failed, skipped)."""
    case = ET.SubElement(suite, "testcase", classname="groove.eval.query", name=str(entry["id"]))
    metrics = entry["metrics"]
    top = [f"{h['rank']}. {h['path']}" + (f"#{h['heading']}" if h.get("heading") else "")
           for h in entry.get("top_k", [])[:k_max]]
    expected = [e["path"] + (f"#{e['heading']}" if e.get("heading") else "")
                for e in entry["expected"]]
    if not is_judged(entry):
        ET.SubElement(case, "skipped", message="no relevant expected entry; not scored")
        return False, True
    failed = is_miss(entry, k_max)
    if failed:
        failure = ET.SubElement(case, "failure", type="miss",
                                message=f"no expected note in the top {k_max}")
        failure.text = (f"query: {entry['query']}\nexpected: {', '.join(expected)}\n"
                        f"top {k_max}:\n" + "\n".join(f"  {line}" for line in top))
    out = ET.SubElement(case, "system-out")
    lines = [f"{metric.query_name(k)}: {v!r}" for metric, k, v in block_items(metrics, key="query")]
    out.text = "\n".join(lines) + "\n"
    return failed, False


def render_junit(run: Mapping[str, Any], *, suite_name: str,
                 checks: Sequence[GateCheck] = ()) -> str:
    """The JUnit XML document (UTF-8 declaration, trailing newline)."""
    k_max = _k_max(run)
    root = ET.Element("testsuites", name="groove eval")
    suite = ET.SubElement(root, "testsuite", name=suite_name, timestamp=run["timestamp"])
    properties = ET.SubElement(suite, "properties")
    for name, value in _aggregate_properties(run) + _settings_properties(run):
        ET.SubElement(properties, "property", name=name, value=value)
    failures = skipped = 0
    for entry in run["per_query"]:
        failed, skip = _query_case(suite, entry, k_max)
        failures += failed
        skipped += skip
    for check in checks:
        case = ET.SubElement(suite, "testcase", classname="groove.eval.gate", name=check.name)
        if check.failure is not None:
            ET.SubElement(case, "failure", type="regression", message=check.failure)
            failures += 1
        elif check.skipped is not None:
            ET.SubElement(case, "skipped", message=check.skipped)
            skipped += 1
    tests = len(run["per_query"]) + len(checks)
    for element in (root, suite):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", "0")
        element.set("skipped", str(skipped))
    ET.indent(_made_safe(root))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["GateCheck", "gate_checks", "render_junit", "verdict_text", "xml_safe"]
