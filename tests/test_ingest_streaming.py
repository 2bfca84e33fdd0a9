"""Streaming ingest (issue 48: "streaming ingest keeps peak RSS under 2x the largest file"): every reader yields
passages while its file is still being read, chunk seams change nothing, and a page parsed as it is read gives the
passages a walk over its whole tree gives. Peak memory itself is measured by ``benchmarks/ingest_memory.py``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rirag.data.ingest import html_page, raw
from rirag.data.ingest.corpus import Spool, ingest
from rirag.data.ingest.html_text import GenericPage, block_lines, is_hidden, section_child, tag_of
from rirag.data.ingest.raw import Dropped, RawDocument, document_key
from rirag.data.ingest.readers import reader_for
from rirag.errors import DataError

RULE = "A firm must keep adequate records of each transaction for five years after it is made."


def _markdown(n: int) -> str:
    return "# Records\n\n" + "".join(f"1.{i} {RULE}\n\n" for i in range(n))


def _html(n: int) -> str:
    return ("<html><head><title>Records | PRA</title></head><body><nav><a href='/'>Menu</a></nav><main>"
            + "".join(f"<h2>Chapter {i}</h2><p>1.{i} {RULE}</p><ul><li>(a) item {i}</li></ul>" for i in range(n))
            + "</main></body></html>")


def _jsonl(n: int) -> str:
    return "".join(json.dumps({"id": f"r{i}", "document": "GEN", "text": f"{i} {RULE}"}) + "\n" for i in range(n))


def _wrapped(n: int) -> str:
    """A page whose content sits in wrapper blocks (read as one paragraph unless a block starts inside them)."""
    return ("<html><body><div id='page'><section class='content'><div>" + "".join(
        f"<h3>Rule {i}</h3><div>1.{i} {RULE}</div>" for i in range(n)) + "</div></section></div></body></html>")


@pytest.mark.parametrize("name, text", [("rules.md", _markdown(400)), ("rules.html", _html(400)),
                                        ("wrapped.html", _wrapped(400)), ("rules.jsonl", _jsonl(400))])
def test_a_reader_yields_passages_before_it_has_read_its_file(tmp_path, monkeypatch, name, text):
    """Before streaming every reader returned its file's passages at once, after reading it whole; a page in
    wrappers is walked into as it is parsed, not held until its wrapper ends."""
    monkeypatch.setattr(raw, "CHUNK_BYTES", 256)
    monkeypatch.setattr(html_page, "BATCH", 1)
    read = []
    real = raw.read_input_chunks

    def counted(path, size, what=""):
        read.append(0)
        for chunk in real(path, size, what):
            read[-1] += 1
            yield chunk

    monkeypatch.setattr(raw, "read_input_chunks", counted)
    path = tmp_path / name
    path.write_text(text, "utf-8")
    chunks = -(-path.stat().st_size // 256)
    passages = reader_for(path).read(path, tmp_path, Dropped())
    next(passages)
    assert read[-1] < chunks / 2, f"the first passage came after {read[-1]} of {chunks} chunks of the last read"
    assert 1 + sum(1 for _ in passages) >= 400


SOURCES = {
    "crlf.md": "---\ntitle: x\n---\r\n# Title\r\n\r\n1.1 A firm must \u00e9crire\r\nrecords.\r\n\r\n- (a) one\r\n"
               "- (b) two\r\n\r\n| Term | Meaning |\r\n|---|---|\r\n| firm | a \u2013 person |\r\n",
    "wide.txt": ("2.1 Les r\u00e8gles s'appliquent \u00e0 chaque soci\u00e9t\u00e9.\n\n2.2 \u898f\u5247 apply.\n",
                 "utf-16"),
    "latin.txt": ("3.1 Caf\u00e9 r\u00e8gles apply.\r\n\r\n3.2 Another rule.\n", "latin-1"),
    "page.html": "<html><head><!-- a -- comment --><title>P\u00e4ge | X</title></head><body><main><h2>Sc\u00f6pe</h2>"
                 "<div>lead <b>bold</b><!-- c --> tail<ol><li>first</li></ol>after</div><p>4.1 A rule\u2014with"
                 " a dash.</p><table><tr><th>A</th><th>B</th></tr><tr><td>x</td><td>y</td></tr></table></main>"
                 "</body></html>",
    "quoted.csv": 'document,rule,text\nGEN,5.1,"A rule\nover two lines"\r\nGEN,5.2,Caf\u00e9 apply\n',
    "lines.jsonl": '{"document": "J", "text": "6.1 one \u2028 rule"}\n{"document": "J", "text": "6.2 two"}\n',
}


def _write_sources(folder: Path) -> None:
    folder.mkdir()
    for name, text in SOURCES.items():
        text, codec = text if isinstance(text, tuple) else (text, "utf-8")
        (folder / name).write_bytes(text.encode(codec))


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_chunk_seams_change_nothing_and_the_spool_is_gone(tmp_path, monkeypatch):
    """A \\r\\n, a UTF-8 or UTF-16 character, a comment or a quoted CSV newline split across two chunks reads as one."""
    _write_sources(tmp_path / "src")
    ingest(tmp_path / "src", tmp_path / "whole")
    for size in (1, 2, 3, 7):
        monkeypatch.setattr(raw, "CHUNK_BYTES", size)
        ingest(tmp_path / "src", tmp_path / f"chunks{size}")
        assert _files(tmp_path / f"chunks{size}") == _files(tmp_path / "whole"), size
    whole = _files(tmp_path / "whole")
    assert not any(Spool.NAME in name for name in whole)
    texts = [r["Passage"] for name, data in whole.items() if name.startswith("documents/")
             for r in json.loads(data)]
    assert "5.1" not in texts and any("A rule\nover two lines" in t for t in texts)
    assert any("\u898f\u5247 apply." in t for t in texts) and any("Caf\u00e9 r\u00e8gles" in t for t in texts)
    assert "6.1 one\nrule" in texts  # the record's line ends at \n only; its text's U+2028 breaks its text


# -- the whole-tree walk (how ingest read a page before it streamed): the oracle of the streamed one -------------
def _whole_tree_passages(path: Path) -> list[tuple]:
    from lxml import html

    root = html.document_fromstring(path.read_bytes(), parser=html.HTMLParser(encoding="utf-8"))
    key = document_key(path.stem)
    title = key
    for h1 in root.iter("h1"):
        if not any(tag_of(a) in ("nav", "header", "footer", "aside") for a in h1.iterancestors()):
            text = " ".join(block_lines(h1))
            if text:
                title = text
                break
    else:
        t = root.find(".//title")
        if t is not None and (t.text or "").strip():
            title = " ".join(t.text.split("|")[0].split())
    doc = RawDocument(key, title, path.name)
    part = next((el for el in root.iter() if isinstance(el.tag, str)
                 and "part-content" in (el.get("class") or "").split()), None)
    if part is not None:
        subheading = None
        for child in part:
            subheading = section_child(child, (doc.title,), subheading, doc, Dropped())
    else:
        body = root.find("body")
        body = root if body is None else body
        GenericPage(doc, Dropped()).walk(next((el for el in body.iter("main", "article") if not is_hidden(el)), body))
    return [(p.rule, p.headings, p.lines) for p in doc.passages]


WORDS = "a firm must keep records of each transaction for five years 1.2 (a) (b) Article 4 shall".split()


def _words(r: random.Random) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(0, 6)))


def _inline(r: random.Random, depth: int) -> str:
    if depth > 2 or r.random() < 0.5:
        return _words(r)
    tag = r.choice(["b", "span", "a", "sup", "em"])
    attrs = r.choice(["", "", ' class="tooltip"', " hidden"])
    return f"<{tag}{attrs}>{_inline(r, depth + 1)}</{tag}>{_words(r)}"


def _block(r: random.Random, depth: int) -> str:
    tail = _words(r) if r.random() < 0.2 else ""
    kinds = [
        lambda: f"<p>{_inline(r, depth)}{_inline(r, depth)}</p>",
        lambda: f"<ul>{''.join('<li>' + _inline(r, depth) + '</li>' for _ in range(r.randint(0, 3)))}</ul>",
        lambda: f"<h{r.randint(1, 4)}>{_inline(r, depth)}</h{r.randint(1, 4)}>",  # unbalanced on purpose
        lambda: f"<table><tr><th>{_words(r)}</th></tr><tr><td>{_inline(r, depth)}</td></tr></table>",
        lambda: f"<nav>{_inline(r, depth)}</nav>",
        lambda: f"<!-- {_words(r)} -- -->",
        lambda: f"<div{r.choice(['', ' class=hidden', ' class=breadcrumb'])}>"
                f"{''.join(_block(r, depth + 1) for _ in range(r.randint(0, 3)) if depth < 4)}</div>",
        lambda: f"<div>{_inline(r, depth)}</div>",
        lambda: f"<section>{_inline(r, depth)}{''.join(_block(r, depth + 1) for _ in range(2) if depth < 4)}</section>",
        lambda: f"<span>{''.join(_block(r, depth + 1) for _ in range(r.randint(0, 2)) if depth < 4)}</span>",
        lambda: f"<p>{_inline(r, depth)}<div>{_words(r)}</div>{_words(r)}</p>",
        lambda: f"{_words(r)}<br>{_words(r)}",
        lambda: f"<div><div>{_inline(r, depth)}<ol><li>{_words(r)}</li></ol></div></div>",
    ]
    return r.choice(kinds)() + tail


def _row(r: random.Random) -> str:
    number = r.choice(["", f"{r.randint(1, 3)}.{r.randint(1, 3)}", "1"])
    note = f'<div class="rb-footnotes"><ol><li>{_words(r)}</li></ol></div>' if r.random() < 0.2 else ""
    body = r.choice([_inline(r, 2), f"<h4>{_words(r)}</h4>", f"<p>{_words(r)}</p>{note}"])
    return (f'<div class="row-block"><div class="div-row"><div class="div-row__col-1"><span class="rule-number">'
            f'{number}</span></div><div class="div-row__col-2">{body}</div></div></div>')


def _section(r: random.Random, depth: int) -> str:
    head = (f'<div class="div-row"><div class="div-row__col-1"><span class="rule-number">{r.randint(1, 9)}</span>'
            f'</div><div class="div-row__col-2">{_words(r)}</div></div>')
    kids = [_row(r) if r.random() < 0.6 or depth > 2 else _section(r, depth + 1) for _ in range(r.randint(0, 4))]
    if r.random() < 0.8:
        kids.insert(r.randint(0, min(1, len(kids))), head)  # the heading row, first or after a row
    return f'<div class="chapter-section">{"".join(kids)}</div>'


def _page(r: random.Random) -> str:
    body = "".join(_block(r, 0) for _ in range(r.randint(1, 6)))
    if r.random() < 0.3:
        body = (f"<header><h1>{_words(r)}</h1></header>{body}"
                f"<main{r.choice(['', ' hidden'])}>{''.join(_block(r, 1) for _ in range(3))}</main>{body}")
    if r.random() < 0.3:
        body = (f'<h1>{_words(r)}</h1><div class="part-content">'
                f'{"".join(_section(r, 0) if r.random() < 0.6 else _row(r) for _ in range(r.randint(0, 4)))}</div>'
                + body)
    title = f"<title>{_words(r)} | PRA</title>" if r.random() < 0.7 else ""
    return f"<html><head>{title}</head><body>{body}</body></html>" if r.random() < 0.9 else body


def test_a_page_parsed_as_it_is_read_gives_the_passages_of_its_whole_tree(tmp_path, monkeypatch):
    """Random pages with wrappers, blocks inside blocks, unbalanced headings, hidden and navigation parts, comments
    and PRA-Rulebook sections whose heading row comes late, read in chunks of 61 bytes."""
    monkeypatch.setattr(raw, "CHUNK_BYTES", 61)
    compared = 0
    for seed in range(150):
        path = tmp_path / f"page{seed}.html"
        path.write_text(_page(random.Random(seed)), "utf-8")
        expected = _whole_tree_passages(path)
        try:
            got = [(p.rule, p.headings, p.lines) for _, p in html_page.read_html_page(path, tmp_path, Dropped())]
        except DataError as err:
            assert not expected and ("no text" in str(err) or "parsable" in str(err)), (seed, err)
            continue
        assert got == expected, seed
        compared += bool(expected)
    assert compared > 100


def test_a_rule_number_that_meets_the_numbering_of_repeats_is_refused_naming_the_file(tmp_path):
    rules = tmp_path / "rules.jsonl"
    rules.write_text("".join(json.dumps({"document": "GEN", "rule": rule, "text": f"Rule text {i}."}) + "\n"
                             for i, rule in enumerate(["a", "a", "a #2", "a #2 #2"])), "utf-8")
    with pytest.raises(DataError, match=r"rules.jsonl: two passages of one document would both be 'a #2 #2'"):
        ingest(rules, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _held_whole_labels(spec: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """The labelling over a document held whole, as ingest did it before it streamed: every label counted as a
    string, then collisions numbered in a second pass."""
    from collections import Counter

    from rirag.data.ingest.raw import BARE_NUMBER, HEADING_REF

    def ref(heads):
        for h in reversed(heads[1:] or heads):
            m = HEADING_REF.match(h)
            if m:
                return m.group(1)
        return heads[-1] if len(heads) > 1 else ""

    raw_counts, used, labels = Counter(rule for rule, _ in spec if rule), Counter(), []
    for rule, heads in spec:
        if rule and raw_counts[rule] == 1 and not (BARE_NUMBER.match(rule) and ref(heads)):
            label = rule
        elif rule:
            label = " ".join(x for x in (ref(heads), rule) if x)
        else:
            label = ref(heads) or "text"
        used[label] += 1
        labels.append(label if used[label] == 1 else f"{label} #{used[label]}")
    final, out = Counter(), []
    for label in labels:
        final[label] += 1
        out.append(label if final[label] == 1 else f"{label} #{final[label]}")
    return out


def test_labels_counted_by_digests_are_the_labels_of_a_document_held_whole():
    """Random documents of repeated, bare, heading-qualified and '#N' rule numbers: the same PassageIDs, and a
    refusal exactly where two would be the same (where a document held whole got one id for two passages)."""
    from rirag.data.ingest.labels import label_passages
    from rirag.data.ingest.raw import RawPassage

    rules = ["", "1", "1.1", "1.1 #2", "a", "a #2", "a #2 #2", "2", "(a)", "Article 4 2.", "Article 4", "text #2"]
    heads = [("T",), ("T", "Article 4"), ("T", "Part 1"), ("T", "Article 4", "x")]
    refused = 0
    for seed in range(3000):
        r = random.Random(seed)
        spec = [(r.choice(rules), r.choice(heads)) for _ in range(r.randint(1, 14))]
        expected = _held_whole_labels(spec)
        doc = RawDocument("k", "k", "s", [RawPassage(rule, h, ["x"]) for rule, h in spec])
        if len(set(expected)) < len(expected):
            with pytest.raises(DataError, match="would both be"):
                label_passages(doc)
            refused += 1
            continue
        label_passages(doc)
        assert [p.label for p in doc.passages] == expected, spec
    assert 0 < refused < 300


def test_the_digest_map_answers_as_a_dict_across_merges():
    """Keys sharing their high 8 bytes, repeats (the first value kept), absent keys, merges every 100 entries."""
    from rirag.data.ingest.digests import DigestMap

    r = random.Random(1)
    keys = [r.getrandbits(128) for _ in range(3000)] + [(7 << 64) | i for i in range(300)]
    keys += keys[:200]  # added again with another value: the first stays
    got, expected = DigestMap(pending_max=100), {}
    for k in keys:
        v = r.getrandbits(128)
        got.add(k, v)
        expected.setdefault(k, v)
    assert len(got) == len(expected)
    for k in keys + [r.getrandbits(128) for _ in range(500)] + [(7 << 64) | 999, 0]:
        assert got.get(k) == expected.get(k)
        assert (k in got) == (k in expected)
