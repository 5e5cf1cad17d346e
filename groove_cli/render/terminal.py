"""What text output shows a person: paths that open from here, escaped control characters,
and (on a terminal only) colour, highlighted matches and OSC-8 links, drawn with rich.

Plain output (piped, `--no-color`, `NO_COLOR`) carries no escape sequence at all, so scripts
and `grep` see exactly the text; on a terminal the same lines are styled, never reworded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from groove_cli.render.output import use_color
from groove_cli.results import absolute
from groove_cli.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def shown_path(kb_root: str | Path | None, rel: str) -> str:
    """A hit's path as it opens from the current directory (ripgrep-style): relative to the
    working directory; the KB-relative path when the KB root is unknown."""
    full = absolute(kb_root, rel)
    if full is None:
        return rel
    try:
        return os.path.relpath(full, Path.cwd())
    except ValueError:  # another drive (Windows)
        return str(full)


def location(path: str, line: int | None) -> str:
    """`path:line`, or the bare path when the line is unknown."""
    return f"{path}:{line}" if line is not None else path


class Painter:
    """Writes lines to a stream: plain text, or rich-styled text on a colour terminal."""

    def __init__(self, stream: TextIO | None = None, *, no_color: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.color = use_color(self.stream, no_color)
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, force_terminal=True, highlight=False,
                                    markup=False, emoji=False, soft_wrap=True)
        return self._console

    def text(self) -> Text:
        from rich.text import Text

        return Text()

    def line(self, parts: Sequence[tuple[str, str | None]], link: Path | None = None, *,
             keep_newlines: bool = False) -> None:
        """One line from (text, rich style) parts; `link` makes the whole line an OSC-8
        hyperlink to that file on a terminal. Control characters are shown escaped
        (`text.printable`), newlines too unless `keep_newlines` (a block of content)."""
        if not self.color:
            self.stream.write("".join(printable(t, keep_newlines=keep_newlines)
                                      for t, _ in parts) + "\n")
            return
        from rich.style import Style

        out = self.text()
        for text, style in parts:
            piece = Style.parse(style) if style else Style()
            if link is not None:
                piece = piece + Style(link=link.resolve().as_uri())
            out.append(printable(text, keep_newlines=keep_newlines), style=piece)
        self.console.print(out)

    def highlighted(self, content: str, spans: Sequence[tuple[int, int]] | None,
                    style: str = "bold red") -> None:
        """A block of text with the match spans styled (plain: the text as is, escaped)."""
        if not self.color or not spans:
            self.line([(content, None)], keep_newlines=True)
            return
        out = self.text()
        at = 0
        for start, end in spans:
            out.append(printable(content[at:start]))
            out.append(printable(content[start:end]), style=style)
            at = end
        out.append(printable(content[at:]))
        self.console.print(out)

    def flush(self) -> None:
        self.stream.flush()


def print_excerpt(path: Path, line_start: int, line_end: int, lines: Iterable[str], fmt: str, *,
                  no_color: bool = False) -> None:
    """`groove get`: JSON, or the lines (numbered on a terminal, as they are when piped),
    written as they are read."""
    if fmt == "json":
        from groove_cli.render.output import print_json

        print_json({"path": str(path.resolve()), "line_start": line_start,
                    "line_end": line_end, "content": "\n".join(lines)})
        return
    painter = Painter(no_color=no_color)
    if not painter.color:
        for line in lines:  # a file's tabs stay tabs
            painter.line([(line, None)], keep_newlines=True)
        painter.flush()
        return
    width = len(str(max(line_end, line_start)))
    for number, line in enumerate(lines, line_start):
        painter.line([(f"{number:>{width}} ", "green"), ("│ ", "dim"), (line, None)],
                     keep_newlines=True)
    painter.flush()
