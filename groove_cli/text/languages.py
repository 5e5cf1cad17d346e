"""Which languages a sample of texts is written in, told from their scripts and, for Latin
script, their frequent words: enough for a server to say "English, Japanese" of a KB."""

from __future__ import annotations

import re
from collections.abc import Iterable

SCRIPTS = (
    (0x00C0, 0x024F, "Latin"), (0x0370, 0x03FF, "Greek"), (0x0400, 0x04FF, "Cyrillic"),
    (0x0590, 0x05FF, "Hebrew"), (0x0600, 0x06FF, "Arabic"), (0x0900, 0x097F, "Devanagari"),
    (0x0E00, 0x0E7F, "Thai"), (0x1100, 0x11FF, "Korean"), (0x3040, 0x30FF, "Japanese"),
    (0x3400, 0x4DBF, "Chinese"), (0x4E00, 0x9FFF, "Chinese"), (0xAC00, 0xD7AF, "Korean"),
)
"""Code point ranges of the scripts a chunk may be written in (ASCII letters are Latin), in
order; kana are Japanese, Han Chinese unless the chunk has kana too."""
_STARTS = [low for low, _, _ in SCRIPTS]
STOPWORDS = {
    "English": "the and of to is that it for with this are be you which",
    "German": "der die und das ist nicht ein eine mit den auf für sich auch wird",
    "French": "le les et des est une pour dans du pas sur avec ce qui",
    "Spanish": "el los las y del por para es al su lo como más pero",
    "Italian": "il di che è per della sono gli non anche nel alla questo",
    "Portuguese": "os não em uma com da dos ao pelo são também seu",
    "Dutch": "het een van niet op voor zijn ook dat te wordt bij aan",
}
"""Frequent words that tell Latin-script languages apart (no word in two lists)."""
_WORDS = re.compile(r"[^\W\d_]+")
_ASCII = re.compile(r"[\x00-\x7f]+")
_ASCII_LETTERS = re.compile(r"[A-Za-z]")
_STOPWORD_LANGUAGE = {word: name for name, words in STOPWORDS.items() for word in words.split()}


def languages(texts: Iterable[str]) -> tuple[str, ...]:
    """The languages of a sample of chunks, most frequent first: each chunk counts for its
    main script (Japanese when it has kana), and a Latin-script chunk for the language whose
    frequent words it uses most; a language of under a tenth of the sample is left out."""
    from bisect import bisect_right

    counts: dict[str, int] = {}
    total = 0
    for text in texts:
        text = text[:1000]
        letters = {"Latin": len(_ASCII_LETTERS.findall(text))}
        for char in _ASCII.sub("", text)[:300]:  # the other scripts: in the non-ASCII rest
            at = bisect_right(_STARTS, ord(char)) - 1
            if at >= 0 and ord(char) <= SCRIPTS[at][1]:
                name = SCRIPTS[at][2]
                letters[name] = letters.get(name, 0) + 1
        script, most = max(letters.items(), key=lambda pair: pair[1])
        if most == 0:
            continue
        if script == "Chinese" and letters.get("Japanese"):
            script = "Japanese"
        if script == "Latin":
            votes: dict[str, int] = {}
            for word in _WORDS.findall(text.lower()):
                language = _STOPWORD_LANGUAGE.get(word)
                if language is not None:
                    votes[language] = votes.get(language, 0) + 1
            best = max(votes.items(), key=lambda pair: pair[1], default=("", 0))
            script = best[0] if best[1] >= 3 else "Latin script"
        counts[script] = counts.get(script, 0) + 1
        total += 1
    ranked = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    return tuple(name for name, count in ranked if count * 10 >= total)
