#!/usr/bin/env python3
"""Rebuild the benchmark suite's public test collections (issue 25) from their sources.

    python bench/suite_collections.py [--mirrors DIR] [--only med,adi] [--record]

Each collection of `bench/collections.json` (the manifest: source repository, commit, files
and their sha256, licence, how it is built) is written to `.cache/collections/<name>/` in the
layout of $GROOVE_DATASETS: `docs/<doc id>.md`, `queries.jsonl` (`{"id", "query",
"relevant", "grades"}`), `qrels.tsv` (TREC) and `provenance.json`. Sources are public GitHub
repositories read from local git snapshots: `--mirrors DIR` (default $GROOVE_MIRRORS) holds
them as `DIR/<owner>+<name>/repo` (the layout the search tool's `fetch` writes), or `--repo
owner/name=GIT_DIR` names one. Every source file is checked against its manifest sha256
before use, and the built folder's digest against `built_sha256` (`--record` writes the
digests instead). Collections kept in $GROOVE_DATASETS (CISI, JSQuAD) are only digested.

Samples are drawn with `random.Random(seed)` from the manifest, so a rebuild is identical.
Reviewers hold out Cranfield, NPL, CACM and JaQuAD: no builder reads them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import datasets_root, mirrors_root

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "bench" / "collections.json"
OUT = ROOT / ".cache" / "collections"
FORBIDDEN = re.compile(r"cran|npl|vaswani|cacm|jaquad", re.IGNORECASE)
"""Source paths of the held-out collections: a manifest naming one is refused."""


@dataclass
class Built:
    """A collection in memory: docs (id → (title, text)), queries and graded judgments."""

    docs: dict[str, tuple[str, str]] = field(default_factory=dict)
    queries: list[dict[str, Any]] = field(default_factory=list)


class Source:
    """Reads files of one repository snapshot at the manifest's commit, checking sha256."""

    def __init__(self, git_dir: Path, spec: dict[str, Any]) -> None:
        self.git_dir = git_dir
        self.commit = spec["commit"]
        self.files: dict[str, str] = spec.setdefault("files", {})
        self.record = False

    def _rev(self) -> str:
        """The manifest's commit when the snapshot has it, else HEAD (checksums still decide)."""
        proc = subprocess.run(["git", "--git-dir", str(self.git_dir), "cat-file", "-e",
                               f"{self.commit}^{{commit}}"], capture_output=True, check=False)
        return self.commit if proc.returncode == 0 else "HEAD"

    def _cat(self, paths: list[str]) -> dict[str, bytes]:
        """Blob contents of `paths` at the commit, through one `git cat-file --batch`."""
        for path in paths:
            if FORBIDDEN.search(path):
                raise SystemExit(f"collections: error: {path} is a held-out collection")
        rev = self._rev()
        request = "".join(f"{rev}:{path}\n" for path in paths).encode()
        proc = subprocess.run(["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                              input=request, capture_output=True, check=True)
        out, pos = {}, 0
        data = proc.stdout
        for path in paths:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            if header[-1] == b"missing":
                raise SystemExit(f"collections: error: {path} not found in {self.git_dir}")
            size = int(header[2])
            out[path] = data[end + 1:end + 1 + size]
            pos = end + 2 + size
        return out

    def _check(self, label: str, digest: str, expected: str | None) -> None:
        if not self.record and digest != expected:
            raise SystemExit(f"collections: error: {label} in {self.git_dir} has sha256 "
                             f"{digest}, the manifest expects {expected}")

    def read(self, path: str) -> bytes:
        data = self._cat([path])[path]
        digest = hashlib.sha256(data).hexdigest()
        self._check(path, digest, self.files.get(path))
        if self.record:
            self.files[path] = digest
        return data

    def text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding).replace("\r\n", "\n").replace("\r", "\n")

    def folder(self, spec: dict[str, Any]) -> dict[str, str]:
        """Every file under `spec["folders"]` matching `spec["pattern"]`, as text; checked
        against `spec["folder_sha256"]` (sha256 over sorted path + file sha256 pairs)."""
        listing = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "ls-tree", "-r", "--name-only",
             self._rev(), "--", *spec["folders"]],
            capture_output=True, text=True, check=True).stdout.split("\n")
        wanted = re.compile(spec["pattern"])
        paths = sorted(f for f in listing if f and wanted.search(f))
        blobs = self._cat(paths)
        h = hashlib.sha256()
        for path in paths:
            h.update(path.encode() + b"\0" + hashlib.sha256(blobs[path]).digest())
        self._check("+".join(spec["folders"]), h.hexdigest(), spec.get("folder_sha256"))
        if self.record:
            spec["folder_sha256"] = h.hexdigest()
        return {p: b.decode("utf-8").replace("\r\n", "\n") for p, b in blobs.items()}


# --------------------------------------------------------------------------- source formats


def smart_records(text: str) -> dict[str, dict[str, str]]:
    """SMART-format records (`.I id` then `.T`/`.W`/`.A`/… fields) as id → field → text."""
    records: dict[str, dict[str, str]] = {}
    current: dict[str, list[str]] | None = None
    tag = ""
    for line in text.split("\n"):
        if line.startswith(".I "):
            current = {}
            records[line[3:].strip()] = current  # type: ignore[assignment]
            tag = ""
        elif re.fullmatch(r"\.[A-Z]\s*", line) and current is not None:
            tag = line[1]
            current.setdefault(tag, [])
        elif current is not None and tag:
            current[tag].append(line.strip())
    return {rid: {k: " ".join(" ".join(v).split()) for k, v in rec.items()}  # type: ignore[union-attr]
            for rid, rec in records.items()}


def build_smart(src: Source, p: dict[str, Any]) -> Built:
    """A classic SMART collection: doc = `.T` title + `.W` text; binary judgments."""
    out = Built()
    for rid, rec in smart_records(src.text(p["docs"], "latin-1")).items():
        out.docs[rid] = (rec.get("T", ""), rec.get("W", ""))
    rel: dict[str, list[str]] = {}
    for line in src.text(p["rel"], "latin-1").split("\n"):
        cols = line.split()
        if len(cols) >= 2:
            qid, doc = cols[0], cols[p.get("rel_doc_column", 1)]
            if doc in out.docs and doc not in rel.setdefault(qid, []):
                rel[qid].append(doc)
    for qid, rec in smart_records(src.text(p["queries"], "latin-1")).items():
        if rel.get(qid):
            out.queries.append({"id": qid, "query": rec.get("W", ""), "relevant": rel[qid],
                                "grades": {d: 1 for d in rel[qid]}})
    return out


def safe_id(raw: str, taken: set[str]) -> str:
    """A file-name-safe doc id for a source id (`<dbpedia:Foo>` → `dbpedia_Foo`)."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", raw).strip("_.")[:80] or "doc"
    doc_id = base
    if doc_id in taken:
        doc_id = f"{base}-{hashlib.sha1(raw.encode()).hexdigest()[:8]}"
    taken.add(doc_id)
    return doc_id


def build_beir(src: Source, p: dict[str, Any]) -> Built:
    """A BEIR-layout subset (corpus.jsonl, queries.jsonl, qrels/test.tsv); grade 0 kept as a
    judged non-relevant document (it counts in no metric)."""
    out = Built()
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for line in src.text(p["corpus"]).split("\n"):
        if line.strip():
            row = json.loads(line)
            ids[row["_id"]] = safe_id(row["_id"], taken)
            out.docs[ids[row["_id"]]] = (row.get("title") or "", row["text"])
    grades: dict[str, dict[str, int]] = {}
    for line in src.text(p["qrels"]).split("\n")[1:]:
        cols = line.split("\t")
        if len(cols) == 3 and cols[1] in ids:
            grades.setdefault(cols[0], {})[ids[cols[1]]] = int(cols[2])
    for line in src.text(p["queries"]).split("\n"):
        if line.strip():
            row = json.loads(line)
            g = grades.get(row["_id"], {})
            if any(v > 0 for v in g.values()):
                out.queries.append({"id": row["_id"], "query": row["text"],
                                    "relevant": [d for d, v in g.items() if v > 0], "grades": g})
    if "docs_sample" in p:  # every relevant document stays; the others are a seeded sample
        judged = {d for q in out.queries for d, g in q["grades"].items() if g > 0}
        others = sorted(set(out.docs) - judged)
        keep = judged | set(random.Random(p["seed"]).sample(
            others, max(0, min(len(others), p["docs_sample"] - len(judged)))))
        out.docs = {d: v for d, v in out.docs.items() if d in keep}
    return out


def build_livedoor(src: Source, p: dict[str, Any]) -> Built:
    """livedoor news: a seeded sample of articles; doc = body (URL, date and title lines
    dropped), query = the article's title, its one relevant doc = the article."""
    rng = random.Random(p["seed"])
    texts = src.folder(p["files"])
    picked = sorted(rng.sample(sorted(texts), p["docs_sample"]))
    out = Built()
    titles: dict[str, str] = {}
    for path in picked:
        lines = texts[path].split("\n")
        doc_id = Path(path).stem
        titles[doc_id] = lines[2].strip()
        out.docs[doc_id] = ("", "\n".join(line.strip() for line in lines[3:]).strip())
    seen: set[str] = set()
    for doc_id in rng.sample(sorted(titles), len(titles)):
        if len(out.queries) == p["queries_sample"]:
            break
        if titles[doc_id] in seen:
            continue
        seen.add(titles[doc_id])
        out.queries.append({"id": doc_id, "query": titles[doc_id], "relevant": [doc_id],
                            "grades": {doc_id: 1}})
    return out


HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(\{#[^}]*\})?\s*$")
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def page_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A Markdown page's `# ` title and its `## ` sections as (heading, text) pairs; headings
    inside fenced code blocks are text."""
    title = ""
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.split("\n"):
        fenced = fenced != line.lstrip().startswith("```")
        match = None if fenced else HEADING.match(line)
        if match and len(match.group(1)) == 1 and not title:
            title = match.group(2)
        elif match and len(match.group(1)) == 2:
            sections.append((match.group(2), []))
        elif sections:
            sections[-1][1].append(line)
    return title, [(h, "\n".join(body).strip()) for h, body in sections]


def build_sections(src: Source, p: dict[str, Any]) -> Built:
    """Markdown pages split at `##` headings: doc = `# page title` + the section's text with
    its heading removed; query = the heading (only headings that name one section, have CJK
    text and ≥ 3 characters), relevant = that section. A seeded sample of the queries."""
    out = Built()
    by_heading: dict[str, list[str]] = {}
    texts = src.folder(p["files"])
    for path in sorted(texts):
        title, sections = page_sections(texts[path])
        kept = [(h, body) for h, body in sections if len(body) >= p["min_chars"]]
        for n, (heading, body) in enumerate(kept, start=1):
            doc_id = safe_id(f"{Path(path).with_suffix('')}-{n}", set(out.docs))
            out.docs[doc_id] = (title, body)
            by_heading.setdefault(heading, []).append(doc_id)
    usable = sorted(h for h, ids in by_heading.items()
                    if len(ids) == 1 and len(h) >= 3 and CJK.search(h))
    rng = random.Random(p["seed"])
    for i, h in enumerate(sorted(rng.sample(usable, min(p["queries_sample"], len(usable))))):
        doc_id = by_heading[h][0]
        out.queries.append({"id": f"q{i + 1}", "query": h, "relevant": [doc_id],
                            "grades": {doc_id: 1}})
    return out


WORD = re.compile(r"[A-Za-z]{2,}")


def usable_heading(text: str, language: str) -> bool:
    """A heading that reads as a query: ≥ 3 CJK characters for `ja`, ≥ 2 words otherwise;
    headings that are only code (`` `Box<T>` ``) are not."""
    if language == "ja":
        return len(CJK.findall(text)) >= 3
    return len(WORD.findall(re.sub(r"`[^`]*`", "", text))) >= 2


def build_pages(src: Source, p: dict[str, Any]) -> Built:
    """Long Markdown pages kept whole, headings and all (what users keep). Queries are the
    texts of `##`–`####` headings that name one section in the whole set (anchors and
    backticks dropped, `usable_heading`); relevant = the page. A seeded sample of them is
    taken, and each sampled heading's line is removed from its page so that the query is not
    a free exact match: the page must be found by what the section says."""
    texts = src.folder(p["files"])
    if p.get("drop_html_comments"):  # book-ja keeps the English original in comments
        texts = {k: re.sub(r"<!--.*?-->\n?", "", v, flags=re.DOTALL) for k, v in texts.items()}
    found: dict[str, list[tuple[str, int]]] = {}
    lines_of: dict[str, list[str]] = {}
    for path in sorted(texts):
        lines_of[path] = texts[path].split("\n")
        fenced = False
        for n, line in enumerate(lines_of[path]):
            fenced = fenced != line.lstrip().startswith("```")
            match = None if fenced else HEADING.match(line)
            if match and 2 <= len(match.group(1)) <= 4:
                query = " ".join(match.group(2).replace("`", "").split())
                found.setdefault(query, []).append((path, n))
    usable = sorted(h for h, where in found.items()
                    if len(where) == 1 and usable_heading(h, p["language"]))
    rng = random.Random(p["seed"])
    picked = sorted(rng.sample(usable, min(p["queries_sample"], len(usable))))
    dropped: dict[str, set[int]] = {}
    out = Built()
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for path in sorted(texts):
        ids[path] = safe_id(str(Path(path).relative_to(p["strip_prefix"]).with_suffix("")),
                            taken)
    for i, heading in enumerate(picked):
        path, n = found[heading][0]
        dropped.setdefault(path, set()).add(n)
        out.queries.append({"id": f"q{i + 1}", "query": heading, "relevant": [ids[path]],
                            "grades": {ids[path]: 1}})
    for path, lines in lines_of.items():
        gone = dropped.get(path, set())
        out.docs[ids[path]] = ("", "\n".join(line for n, line in enumerate(lines)
                                             if n not in gone))
    return out


def build_sts(src: Source, p: dict[str, Any]) -> Built:
    """A sentence-similarity set turned to retrieval (JSTS): docs = the distinct second
    sentences, queries = first sentences with a pair scored ≥ `min_label`; grade 2 for a pair
    scored ≥ 4, 1 for ≥ `min_label`, 0 (judged, not relevant) below. A seeded query sample."""
    pairs = [json.loads(line) for line in src.text(p["file"]).split("\n") if line.strip()]
    out = Built()
    doc_of: dict[str, str] = {}
    for row in pairs:
        text = row["sentence2"].strip()
        if text not in doc_of:
            doc_of[text] = f"s{len(doc_of) + 1:05d}"
            out.docs[doc_of[text]] = ("", text)
    grades: dict[str, dict[str, int]] = {}
    for row in pairs:
        label = float(row["label"])
        grade = 2 if label >= 4 else 1 if label >= p["min_label"] else 0
        doc = doc_of[row["sentence2"].strip()]
        per = grades.setdefault(row["sentence1"].strip(), {})
        per[doc] = max(per.get(doc, 0), grade)
    usable = sorted(q for q, g in grades.items() if any(v > 0 for v in g.values()))
    rng = random.Random(p["seed"])
    for i, query in enumerate(sorted(rng.sample(usable, min(p["queries_sample"], len(usable))))):
        g = grades[query]
        out.queries.append({"id": f"q{i + 1}", "query": query,
                            "relevant": [d for d, v in g.items() if v > 0], "grades": g})
    return out


BUILDERS: dict[str, Callable[[Source, dict[str, Any]], Built]] = {
    "smart": build_smart, "beir": build_beir, "livedoor": build_livedoor,
    "sections": build_sections, "pages": build_pages, "sts": build_sts,
}


# --------------------------------------------------------------------------- writing, digests


def write(built: Built, folder: Path, provenance: dict[str, Any]) -> None:
    """The shared/datasets layout; a previous build is replaced whole."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "docs").mkdir(parents=True)
    for doc_id, (title, text) in built.docs.items():
        head = f"# {title}\n\n" if title else ""
        (tmp / "docs" / f"{doc_id}.md").write_text(head + text.strip() + "\n", encoding="utf-8")
    with (tmp / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for q in built.queries:
            handle.write(json.dumps(q, ensure_ascii=False) + "\n")
    with (tmp / "qrels.tsv").open("w", encoding="utf-8") as handle:
        for q in built.queries:
            for doc, grade in q["grades"].items():
                handle.write(f"{q['id']}\t0\t{doc}\t{grade}\n")
    (tmp / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n",
                                         encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def folder_digest(folder: Path, names: Iterable[str]) -> str:
    """sha256 over the sorted relative paths and contents of `docs/*.md` and `names`."""
    h = hashlib.sha256()
    files = sorted((folder / "docs").glob("*.md")) + [folder / n for n in names]
    for path in files:
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def collection_dir(entry: dict[str, Any]) -> Path:
    """Where a manifest entry's collection lives (shared ones are read in place, under
    $GROOVE_DATASETS)."""
    name = str(entry["name"])
    return datasets_root() / name if entry["build"] == "shared" else OUT / name


def load_manifest() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))["collections"]
    return entries


def repo_dir(repo: str, mirrors: Path | None, explicit: dict[str, Path]) -> Path:
    if repo in explicit:
        return explicit[repo]
    path = mirrors_root(mirrors) / repo.replace("/", "+") / "repo"
    if not path.is_dir():
        raise SystemExit(f"collections: error: no snapshot of {repo} at {path} "
                         "(fetch it there, or pass --repo OWNER/NAME=GIT_DIR)")
    return path


def rebuild(entry: dict[str, Any], mirrors: Path | None, explicit: dict[str, Path],
            record: bool) -> str:
    """Build one collection (or digest a shared one); returns its folder digest."""
    folder = collection_dir(entry)
    if entry["build"] != "shared":
        spec = entry["source"]
        src = Source(repo_dir(spec["repo"], mirrors, explicit), spec)
        src.record = record
        built = BUILDERS[entry["build"]](src, entry["params"])
        write(built, folder, {"source": spec["repo"], "commit": spec["commit"],
                              "builder": entry["build"], "params": entry["params"]})
    digest = folder_digest(folder, [entry.get("queries_file", "queries.jsonl")])
    if record:
        entry["built_sha256"] = digest
    elif entry.get("built_sha256") != digest:
        raise SystemExit(f"collections: error: {entry['name']} built with digest {digest}, "
                         f"the manifest expects {entry.get('built_sha256')}")
    return digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path,
                        help="folder of <owner>+<name>/repo snapshots (default $GROOVE_MIRRORS)")
    parser.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=GIT_DIR")
    parser.add_argument("--only", help="comma-separated collection names")
    parser.add_argument("--record", action="store_true",
                        help="write source and built digests into the manifest (maintainers)")
    args = parser.parse_args()
    explicit = {k: Path(v) for k, v in (item.split("=", 1) for item in args.repo)}
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    wanted = set(args.only.split(",")) if args.only else None
    for entry in data["collections"]:
        if wanted and entry["name"] not in wanted:
            continue
        digest = rebuild(entry, args.mirrors, explicit, args.record)
        folder = collection_dir(entry)
        n_docs = sum(1 for _ in (folder / "docs").glob("*.md"))
        print(f"{entry['name']}: {n_docs} docs, {folder} ({digest[:12]})", file=sys.stderr)
    if args.record:
        MANIFEST.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                            encoding="utf-8")


if __name__ == "__main__":
    main()
