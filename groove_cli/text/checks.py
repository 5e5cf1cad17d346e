"""Text checks shared by every input and output path.

Python decodes command-line bytes that are not UTF-8 into lone surrogates (PEP 383), and JSON
or YAML escapes such as `\\udcff` produce them too; they cannot be written to SQLite, hashed
or printed as UTF-8. `surrogate_at` finds them so the input is refused with its position.
`printable` keeps a note's control characters (ESC, BEL, NUL, newlines in a path) from
reaching the terminal in text output; JSON output stays exact.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls except tab and newline, DEL and the C1 controls (a terminal acts on 0x9b as ESC [)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f]")

NOT_UTF8_HINT = "pass UTF-8 text (check the terminal's or the file's encoding, e.g. LANG)"


def surrogate_at(text: str) -> int | None:
    """The index of the first character that is not valid Unicode text, or None."""
    found = _SURROGATE.search(text)
    return found.start() if found else None


def not_utf8(what: str, text: str) -> str | None:
    """`{what} is not valid UTF-8 (…)` when `text` holds a surrogate, else None."""
    at = surrogate_at(text)
    if at is None:
        return None
    code = ord(text[at])
    byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
    return f"{what} is not valid UTF-8 text ({byte} at character {at + 1})"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code, f"\\x{code:02x}")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with control characters shown as `\\xNN` escapes (newlines kept unless told)."""
    pattern = _CONTROL if keep_newlines else _CONTROL_OR_NEWLINE
    return pattern.sub(_escape, text)


_REDUCED = re.compile(r"(\d{4})(?:-(\d{2}))?")


def iso_day(text: str, *, last: bool = False) -> str | None:
    """The `YYYY-MM-DD` day of an ISO-8601 date or date-time text, or None when `text` is not
    one (`yesterday`, `2025-13-45`, `05/06/2026`). A reduced date (`2026`, `2026-05`) stands
    for its first day, or its last one with `last`. Date filters compare these days."""
    import calendar
    from datetime import date, datetime

    value = text.strip()
    reduced = _REDUCED.fullmatch(value)
    if reduced:
        year, month = int(reduced.group(1)), int(reduced.group(2) or (12 if last else 1))
        if not 1 <= month <= 12 or year < 1:
            return None
        day = calendar.monthrange(year, month)[1] if last else 1
        return date(year, month, day).isoformat()
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value).date().isoformat()
    except ValueError:
        return None
