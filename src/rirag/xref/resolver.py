"""Cross-references between the passages of one corpus: find each passage's references to other rules and
resolve them to passage ids of the same corpus.

Pure text: regular expressions over plain passage text (never HTML); the package's records, numbers and corpus index
only.

A passage is a :class:`Passage` record (id, document id, document title, number, text). Its ``number`` is the
rule or paragraph number the corpus gives it: ObliQA's PassageID (``"3.2.1"``, ``"3.2.1.(a)"``,
``"3.2.1.Guidance.2."``, ``"APP2.A2.1.1"``, ``"Part 4.38.(6)"`` for section 38(6) of a regulation,
``"Schedule 1.Part 2.Chapter 1.4."`` for paragraph 4 of Schedule 1) or a PRA rule (``"2.1"``) or CRR article
paragraph (``"273.(1)"``). :func:`rirag.xref.numbers.parse_number` reads it into containers (Part, Chapter,
Schedule, Appendix), a main number, a paragraph path and a guidance flag; references are looked up on those.

Forms found: "Rule 9.5.2", "Rules 9.5.2 and 9.5.3", "Rules 6.1.1 to 6.1.4", "GEN 3.3.31", "PRU 6.8",
"MKT Rule 3.3.1(1)(b)", "PIN Chapter 4", "section 61 of FSMR", "paragraph 4 of Schedule 1", "Chapter 9",
"App 2", "Part 6", relative "paragraph (2)" / "subsection (7)" / "subject to (2)" / "point (a) of this
paragraph", PRA "Article 277(3)", "paragraph 2 of this Article", "Chapter 4 of this Part", bare "2.1" or
"2.1 to 2.3", "Matching Adjustment 4.3", "2.2 of the Conditions Governing Business Part", a named rule
("Fundamental Rule 7", "Rule 8 in the Fundamental Rules Part": a Part that states "Fundamental Rule 7: ..." in its
rule 2.7) and a footnote mark (where the source's structure gives it, an ingested page's ``FootnoteMarks``; else
"the Combined Code 5 as appropriate", a number standing alone, where the page has "footnote 5").
References to other instruments ("section 55J of the Act", "Article 206 of the CRR", "SUP 15.3.22D", "Art. 77a of
the Solvency II Directive") are found and kept unresolved.

Resolution rule (what a reference resolves to): ids of non-empty passages only, guidance left out --

* a rule, section or article ("Rule 9.5.2", "section 61 of FSMR", "Article 277"): the passages numbered so
  (the rule and its paragraph passages); with a paragraph path ("Rule 9.5.2(1)(a)") the passages of the
  longest path prefix that has passages of its own ("9.5.2.(1)", which holds (a));
* a dotted number that heads others ("PRU 6.8", "Section 4.13"): its heading and the rules under it;
* a chapter, part, schedule or appendix ("Chapter 9", "Part 4 of FSMR", "App 2"): every passage in it;
* a relative paragraph ("paragraph (2)"): paragraph (2) of the citing passage's own rule; where the rule has
  no paragraph passages (the paragraph is inside the citing passage), the citing passage itself;
* a range ("Rules 6.1.1 to 6.1.4", "Chapters 5B to 5F"): the passages from the first to the last, in corpus
  order;
* a named rule: the passages that state it ("Fundamental Rule 7: ..."), in the Part titled by the name's plural
  ("Fundamental Rules") or in the citing passage's own document; a number a Part gives no rule of its own but one
  named rule ("Rule 8" of the Fundamental Rules Part) is that rule;
* a footnote mark: the first passage of the citing one's document with the mark's target as its ``FootnoteId``
  (read from the text: numbered "footnote <mark>") at or after it, else the last before it.

Unresolved references keep a reason: ``external`` (another instrument: an Act, a Directive, the CRR, the FCA
Handbook), ``not_in_corpus`` (this corpus has no such number) or ``ambiguous`` (several candidates and nothing
to choose between them).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Iterable, Mapping

from rirag.xref.footnotes import footnote_marks
from rirag.xref.index import CorpusIndex
from rirag.xref.named_rules import names_at, reference_pattern
from rirag.xref.numbers import EXTERNAL_NAME, KIND_OF_WORD, NOT_CODES, WORD_NUMBER, norm_name, split_number
from rirag.xref.records import Passage, Reference

#: A word of a name or a text, as :meth:`Resolver._names_in` compares them.
_WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=4096)
def _name_patterns(codes: tuple[str, ...], titles: tuple[str, ...], sp: str, num: str, para: str, sep: str
                   ) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """The patterns of a reference led by a document's code ("GEN 3.3.31") or title ("Matching Adjustment 4.3"),
    and of a title just before a bracket ("Technical Provisions (Chapter 8)"), over the given names (longest
    first)."""
    code_alt = "|".join(map(re.escape, codes)) or r"(?!x)x"
    code_re = re.compile(
        rf"(?<![\w-])(?P<code>{code_alt})(?:\s+(?P<ckw>Rules?|RULES?|Chapters?|Sections?|App(?:endix)?|APP))?"
        rf"{sp}(?P<list>{num}{para}(?:{sep}{num}{para})*)(?![\w.]*\d)")
    title_alt = "|".join(re.sub(r"(?:\\?[-–—])", "[-–—]", re.escape(t)) for t in titles) or r"(?!x)x"
    title_re = re.compile(rf"(?<![\w-])(?=[A-Z])(?i:(?P<title>{title_alt}))(?:\s+Part)?,?{sp}"
                          rf"(?P<list>{num}{para}(?:{sep}{num}{para})*)(?![\w.]*\d)")
    before_re = re.compile(rf"(?<![\w-])(?=[A-Z])(?i:(?P<title>{title_alt}))(?:\s+Part)?\s*\(\s*$")
    return code_re, title_re, before_re


class _Taken:
    """The references found in one passage so far, and the spans they and what they consumed cover."""

    def __init__(self) -> None:
        self.found: list[Reference] = []
        self.spans: list[tuple[int, int]] = []

    def free(self, a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in self.spans)

    def add(self, refs: list[Reference], consumed: tuple[int, int] | None = None) -> None:
        """Keep the references that overlap none found before; ``consumed`` (what the reference read after its
        list, "of this Part") is taken too when any is kept."""
        kept = [r for r in refs if self.free(r.start, r.end)]
        for r in kept:
            self.found.append(r)
            self.spans.append((r.start, r.end))
        if consumed and kept:
            self.spans.append(consumed)


class Resolver(CorpusIndex):
    """Find and resolve the references of a corpus's passages.

    ``aliases`` maps extra names (short codes, other titles) to document ids; every document's title and the
    bracketed code in it ("(GEN)") are aliases already. A name several documents share names none of them.
    """

    def __init__(self, passages: Iterable[Passage], aliases: Mapping[str, str] | None = None,
                 titles: Mapping[str, str] | None = None, read: Callable[[str], Iterable[Passage]] | None = None,
                 tables: Mapping | None = None):
        super().__init__(passages, aliases, titles=titles, read=read, tables=tables)
        self._build_patterns()

    # ---------------------------------------------------------------- patterns

    def _build_patterns(self) -> None:
        sp = r"[ \t\u200e\u200f\u00a0]+"
        num = r"\u200e?(?:[A-Z]{1,2}\d+\.)?\d+(?:[A-Z]{1,2}|[a-z](?![a-z]))?(?:\.\d+[A-Z]{0,2})*"
        para = r"(?:\u200e?\s?\(\s?(?:\d+[A-Za-z]?|[a-z]{1,5}|[A-Z])\s?\))*"
        rel = r"\((?:\d+[A-Za-z]?|[a-z]{1,5})\)"
        item = rf"(?:{num}{para}|{rel}(?:{rel})*)"
        sep = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s+and/or\s+|\s*(?:to|-|–|through)\s*)"
        self._range_sep = re.compile(r"\s*(?:to|-|–|through)\s*")
        kw = (r"(?P<kw>Rules?|RULES?|rules?|Sections?|sections?|SECTION|Articles?|articles?|Art\.?|"
              r"Chapters?|CHAPTER|chapters?|Parts?|PART|Schedules?|schedules?|Appendix|Appendices|APP|App\.?|"
              r"[Pp]aragraphs?|[Ss]ub-?\s?paragraphs?|[Ss]ub-?sections?|[Pp]oints?|[Rr]egulation)")
        again = r"(?:(?:Rules?|Sections?|Articles?|Chapters?|Parts?|[Pp]aragraphs?|[Pp]oints?)\s+)?"
        self._kw_re = re.compile(rf"(?<![\w-])(?:{kw}{sp}|(?P<app>App|APP)(?=\d))(?P<list>{item}"
                                 rf"(?:{sep}{again}{item})*)")
        self._item_re = re.compile(rf"(?P<item>{item})")
        self._named_re = reference_pattern(sp, num, para, sep)  # "Fundamental Rule 7" (:meth:`_named_rules`)
        self._again_re = re.compile(again[3:-2] + "$")  # the repeated keyword at the end of a separator
        self._sep_re = re.compile(sep)
        # The document names (codes, titles) a passage can hold: each pattern is compiled over the names whose words
        # all occur in the passage (:meth:`_names_in`), not over every name of the corpus. An alternation of every
        # title of a corpus of 11,585 documents takes 15 s to compile, and removing alternatives that cannot match
        # anywhere in the text changes no match.
        self._list_parts = (sp, num, para, sep)
        self._title_words = [frozenset(_WORD.findall(t.lower())) for t in self._titles]
        self._titles_by_word: dict[str, list[int]] = {}  # each title under its longest word; "" without words
        for i, need in enumerate(self._title_words):
            self._titles_by_word.setdefault(max(need, key=lambda w: (len(w), w)) if need else "", []).append(i)
        self._codes_set = frozenset(self._codes)
        self._names_norm = self._titles_norm + [norm_name(c) for c in self._codes]
        self._ext_code_re = re.compile(rf"(?<![\w-])(?P<code>[A-Z][A-Z0-9]{{1,7}})[ \u00a0]+"
                                       rf"(?P<num>\d+[A-Z]{{0,2}}(?:\.\d+[A-Z]{{0,2}})*[A-Z]?{para})(?![\w.]*\d)")
        bare = r"\d+[A-Z]{0,2}(?:\.\d+[A-Z]{0,2})+"
        self._bare_re = re.compile(
            rf"(?<![\w.\-/£$€,])(?P<list>{bare}{para}(?:\s*(?:to|–|-)\s*{bare}{para})?)"
            rf"(?![\w]|\.\d|\t|\s?%|\s?(?:per|million|billion|bn|m)\b)")
        rel_sep = r"(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+)"
        self._rel_re = re.compile(
            rf"(?<![\w)])(?P<cue>[Ss]ubject to|in|under|with|by|of|to|see)"
            rf"[ \u200e\u00a0]+(?P<list>{rel}(?:{rel})*(?:{rel_sep}{rel}(?:{rel})*)*)"
            r"(?=[\s,;.:]|$)(?! *\t)")
        self._tail_re = re.compile(
            r"\s*,?\s*(?P<prep>of|in|under|to)\s+(?P<det>the\s+|this\s+|these\s+|that\s+|those\s+)?"
            r"(?P<name>(?:[A-Z][\w'’\-&]*|\([A-Z]+\))"
            r"(?:\s+(?:[A-Z][\w'’\-&]*|of|and|the|for|on|in|\d{4}|\d+/\d+|No\.?|\([A-Z]+\)|\(EU\)|\(EC\)))*)")
        self._this_re = re.compile(r"\s*,?\s*(?:of|in|under|to)\s+(?:this|these)\s+\w+")
        self._qual_re = re.compile(
            rf"\s*,?\s*(?:of|in)\s+(?:the\s+)?(?P<k>Part|Chapter|Schedule|Section|Appendix|App|Article|Title|"
            rf"paragraph|Annex)\s+(?P<v>\d+[A-Za-z]?(?:\s?\(\d+\))?|{WORD_NUMBER})(?![\w.])")

    def _names_in(self, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The codes and titles that can occur in ``text``, in the patterns' order: a code as a word of it (codes are
        matched case-sensitively and whole), a title whose every word is a word of it, case-folded as the pattern
        matches titles. (Python's case-insensitive matching also equates a few letters that ``str.lower`` keeps
        apart, such as the long s "ſ"; a title spelled with them in the text is not found.)"""
        words = set(_WORD.findall(text))
        codes = tuple(c for c in self._codes if c in words) if self._codes_set & words else ()
        lower = {w.lower() for w in words} | {""}
        hits = sorted(i for w in lower for i in self._titles_by_word.get(w, ()) if self._title_words[i] <= lower)
        titles = tuple(self._titles[i] for i in hits)
        return codes, titles

    # ---------------------------------------------------------------- finding

    def references(self, passage: Passage) -> list[Reference]:
        """The references of one passage, in text order, non-overlapping."""
        if passage.document_id in self.docs:
            self.docs[passage.document_id]  # read now, where the index reads documents when first needed
        if passage.id not in self.numbers:
            raise KeyError(f"passage {passage.id!r} is not in the resolver's corpus")
        text = passage.text
        taken = _Taken()
        codes, titles = self._names_in(text)
        code_re, title_re, _ = _name_patterns(codes, titles, *self._list_parts)
        self._footnote_marks(passage, taken, structured=True)  # where the source says where its marks are: first
        self._named_rules(passage, taken)
        for m in code_re.finditer(text):
            taken.add(*self._from_code(passage, m))
        for m in title_re.finditer(text):
            taken.add(*self._from_title(passage, m))
        self._keywords(passage, taken)
        self._external_codes(passage, taken)
        for m in self._bare_re.finditer(text):
            if taken.free(m.start(), m.end()):
                taken.add(*self._bare(passage, m))
        for m in self._rel_re.finditer(text):
            if taken.free(m.start("list"), m.end()):
                taken.add(self._relative_list(passage, m))
        self._footnote_marks(passage, taken, structured=False)
        return sorted(taken.found, key=lambda r: (r.start, r.end))

    def _named_rules(self, passage: Passage, taken: _Taken) -> None:
        """References to named rules (:mod:`rirag.xref.named_rules`), looked up in the Part titled by the name's
        plural ("Fundamental Rules"), else in the citing passage's document: the longest name that one of them gives
        the first number wins. A rule's own label is none; a singular name is one rule ("Fundamental Rule 7, 8
        explaining": 8 marks a footnote). Where no document names the rule, the other matchers read the text."""
        text = passage.text
        for m in self._named_re.finditer(text):
            items = self._items(m)[:None if m.group("plural") else 1]
            if not items:
                continue
            first = split_number(items[0][2])[0]
            for start, name in names_at(m):
                if not text[:start].strip() and text[items[-1][1]:].lstrip().startswith(":"):
                    taken.spans.append((start, items[-1][1]))  # the passage's own label
                    break
                doc_id = next((d for d in (self.alias.get(f"{name}s"), passage.document_id)
                               if d in self.docs and first in self.docs[d].named.get(name, {})), None)
                if doc_id is not None:
                    taken.add(self._resolve_list(passage, m, "rule", doc_id, {}, under=True, first_start=start,
                                                 items=items, named=name))
                    break

    def _footnote_marks(self, passage: Passage, taken: _Taken, structured: bool) -> None:
        """Footnote marks: those the source's structure gives (``passage.marks``: an ingested HTML page's), else
        (plain text, JSONL) a number standing alone after a word or a closing mark ("the Combined Code 5 as
        appropriate": :func:`rirag.xref.footnotes.footnote_marks`) where the document has a footnote so marked
        (:meth:`~rirag.xref.index.CorpusIndex._footnote`); a footnote never marks itself. ``structured``: read only
        the marks of a passage that carries them (else only those of one that does not)."""
        if (passage.marks is not None) != structured or self.numbers[passage.id].container("footnote") is not None:
            return
        found = ([(a, b, passage.text[a:b], target) for a, b, target in passage.marks]
                 if passage.marks is not None else
                 [(a, b, mark, None) for a, b, mark in footnote_marks(passage.text)]
                 if self.docs[passage.document_id].footnotes else [])
        for start, end, mark, target in found:
            if taken.free(start, end) and (ref := self._footnote(passage, start, end, mark, target)) is not None:
                taken.add([ref])

    def _keywords(self, passage: Passage, taken: _Taken) -> None:
        """The references led by a keyword ("Rule 9.5.2", "Chapters 5B to 5F"), left to right: a match that reads
        less than it spans is searched again from where its references end."""
        text = passage.text
        pos = 0
        while (m := self._kw_re.search(text, pos)) is not None:
            refs, consumed = self._from_keyword(passage, m) if taken.free(m.start(), m.start("list")) else ([], None)
            taken.add(refs, consumed)
            reached = max([r.end for r in refs] + [consumed[1] if consumed else 0])
            pos = reached if m.start() < reached < m.end() else m.end()

    def _external_codes(self, passage: Passage, taken: _Taken) -> None:
        """A code no document of the corpus goes by, with a rule number ("SUP 15.3.22D"): another instrument."""
        for m in self._ext_code_re.finditer(passage.text):
            code, n = m.group("code"), m.group("num")
            if norm_name(code) in self.alias or code in NOT_CODES or not taken.free(m.start(), m.end()):
                continue
            if "." in n or re.search(r"\d[A-Z]$", n):
                taken.add([Reference(passage.id, m.start(), m.end(), m.group(0), "rule", None, n, reason="external")])

    # ---------------------------------------------------------------- matchers

    def _items(self, m: re.Match) -> list[tuple[int, int, str, str]]:
        """(start, end, item, separator before it) for each item of a reference list."""
        out: list[tuple[int, int, str, str]] = []
        base, s = m.start("list"), m.group("list")
        prev_end = 0
        for im in self._item_re.finditer(s):
            between = s[prev_end:im.start()]
            kw = self._again_re.search(between)
            if kw and kw.end() == len(between) and kw.start() < kw.end():
                head = (m.groupdict().get("kw") or "")[:4].lower()
                if kw.group(0)[:4].lower() != head:
                    break  # "chapter 13, Article 21": another kind of reference
                between = between[:kw.start()]
            if out and not self._sep_re.fullmatch(between):
                break
            out.append((base + im.start(), base + im.end(), im.group("item"), between))
            prev_end = im.end()
        return out

    def _tail(self, passage: Passage, end: int) -> tuple[str, str | None, dict, int]:
        """What follows a reference: (status, document id, qualifiers, end of what was read). Status is "doc"
        (a document of the corpus), "same" ("of this Part"), "external" (another instrument) or "none"."""
        text = passage.text
        quals: dict[str, str] = {}
        q = self._qual_re.match(text, end)
        while q:
            quals[q.group("k").lower()] = q.group("v")
            end = q.end()
            q = self._qual_re.match(text, end)
        if "annex" in quals:
            return "annex", None, quals, end  # an annex's instructions or templates: not a rule
        if "title" in quals or re.fullmatch(WORD_NUMBER, quals.get("part", "0")):
            return "external", None, quals, end  # "Chapter 6 of Title II of Part Three of the CRR"
        t = self._this_re.match(text, end)
        if t:
            return "same", passage.document_id, quals, t.end()
        m = self._tail_re.match(text, end)
        if not m:
            return "none", None, quals, end
        det = (m.group("det") or "").strip().lower()
        name = m.group("name").strip()
        if det in {"that", "those"}:
            if re.match(r"(?:Rules?|Articles?|Sections?|Chapters?|Parts?|[Pp]aragraphs?)\b", name):
                return "anaphora", None, quals, m.end()  # "paragraph (2) of that Rule": which rule is not read
            return "external", None, quals, m.end()
        doc = self._doc_by_name(name)
        if doc is not None:
            return "doc", doc, quals, m.end()
        if EXTERNAL_NAME.search(name) or re.match(r"[A-Z]{2,}\b", name):
            return "external", None, quals, m.end()
        return "none", None, quals, end

    def _doc_by_name(self, name: str) -> str | None:
        """The document named at the start of ``name`` (longest alias first), or None."""
        norm = norm_name(re.sub(r"[\s,.;:)]+$", "", name))
        for alias in self._names_norm:
            if norm == alias or norm.startswith(alias + " "):
                if norm.startswith(alias + " part") or norm == alias or not self._longer_name(norm, alias):
                    return self.alias[alias]
        return None

    @staticmethod
    def _longer_name(norm: str, alias: str) -> bool:
        """True when the words after the alias continue a longer proper name ("FSMR Rules" is fine)."""
        rest = norm[len(alias):].split()
        return bool(rest) and rest[0] in {"act", "regulations", "order", "directive", "law"}

    def _from_code(self, passage: Passage, m: re.Match):
        doc = self.alias.get(norm_name(m.group("code")))
        ckw = (m.group("ckw") or "rule").lower().rstrip("s")
        kind = "chapter" if ckw == "chapter" else "appendix" if ckw.startswith("app") else "rule"
        return self._resolve_list(passage, m, kind, doc, {}, under=True, first_start=m.start()), None

    def _from_title(self, passage: Passage, m: re.Match):
        doc = self.alias.get(norm_name(m.group("title")))
        return self._resolve_list(passage, m, "rule", doc, {}, under=True, first_start=m.start()), None

    def _from_keyword(self, passage: Passage, m: re.Match):
        word = (m.group("kw") or m.group("app")).lower().rstrip(".")
        kind = "section" if word == "regulation" else KIND_OF_WORD.get(word, "paragraph")
        items = self._point_ranges([it for it in self._items(m) if not re.fullmatch(r"(?:19|20)\d\d", it[2])])
        if not items or self._not_a_reference(passage, m, kind, items):
            return [], None
        status, doc, quals, end = self._tail(passage, items[-1][1])
        if status == "annex":
            return [], None
        consumed = (items[-1][1], end)
        if status in ("external", "anaphora"):
            reason = "external" if status == "external" else "ambiguous"
            text = passage.text
            return [Reference(passage.id, m.start() if i == 0 else s, e, text[m.start() if i == 0 else s:e], kind,
                              None, item, reason=reason) for i, (s, e, item, _) in enumerate(items)], consumed
        doc = self._keyword_document(passage, m, kind, status, doc)
        if doc is None:
            return [], None
        return self._resolve_list(passage, m, kind, doc, quals, under=False, first_start=m.start(),
                                  items=items), consumed

    def _point_ranges(self, items: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
        """Items with "points (a) to (f)" merged into one item "(a)-(f)"."""
        merged: list[tuple[int, int, str, str]] = []
        for it in items:
            if (merged and it[2].startswith("(") and merged[-1][2].startswith("(")
                    and self._range_sep.fullmatch(it[3])):
                last = merged.pop()
                it = (last[0], it[1], f"{last[2]}-{it[2]}", last[3])
            merged.append(it)
        return merged

    @staticmethod
    def _not_a_reference(passage: Passage, m: re.Match, kind: str, items: list[tuple[int, int, str, str]]) -> bool:
        """A keyword and number that are no reference: a permission or statement, a heading, a qualifier of the
        reference before it, a rule's own label."""
        text = passage.text
        after = text[items[-1][1]:items[-1][1] + 16]
        if re.match(r"\s*(?:permissions?|undertakings?|Statements?)\b", after):
            return True
        if m.start() == 0 and kind in ("chapter", "part", "section") and re.match(r"\s+[A-Z][a-z]", after):
            return True  # a heading: "Chapter 4 Format and Frequency of Reporting"
        if re.search(r"(?:\d|\))\s*(?:of|in)\s+(?:the\s+)?$", text[max(0, m.start() - 12):m.start()]):
            return True  # a qualifier of the reference before it: "2.30-2.37 of Chapter 2"
        # a rule's own label: "Fundamental Rule 3: ..."
        return bool(re.fullmatch(r"\s*(?:[A-Z][a-z]+\s+){0,2}", text[:m.start()]) and after.lstrip().startswith(":"))

    def _keyword_document(self, passage: Passage, m: re.Match, kind: str, status: str, doc: str | None
                          ) -> str | None:
        """The document a keyword reference is to, from what its tail read (status "doc", "same" or "none"); None
        where it is no reference of this document."""
        if status == "none":
            # "Technical Provisions (Chapter 8)": a chapter of the Part named just before the bracket
            window = passage.text[max(0, m.start() - 150):m.start()]
            before = _name_patterns((), self._names_in(window)[1], *self._list_parts)[2].search(window)
            if before and self.alias.get(norm_name(before.group("title"))):
                return self.alias[norm_name(before.group("title"))]
            if kind in ("part", "schedule") and kind not in self.docs[passage.document_id].containers:
                return None  # "Part 4A permission", "Schedule 16 Statement": not a part of this document
            return passage.document_id
        if status == "same":
            return passage.document_id
        return doc

    def _resolve_list(self, passage: Passage, m: re.Match, kind: str, doc_id: str | None, quals: dict,
                      under: bool, first_start: int, items=None, named: str | None = None) -> list[Reference]:
        text = passage.text
        items = items if items is not None else self._items(m)
        out: list[Reference] = []
        prev: tuple[str, tuple[str, ...]] | None = None
        for i, (s, e, item, between) in enumerate(items):
            start = first_start if i == 0 else s
            if doc_id is None:
                out.append(Reference(passage.id, start, e, text[start:e], kind, None, item, reason="ambiguous"))
                continue
            ref: Reference | None
            if item.lstrip("\u200e").startswith("("):
                ref = self._bracketed(passage, start, e, kind, doc_id, item, prev, quals, under)
            else:
                main, paras = split_number(item)
                own = self.numbers[passage.id]
                if kind == "paragraph" and "." not in main and not quals.get("schedule") \
                        and own.container("schedule") and doc_id == passage.document_id:
                    quals = {**quals, "schedule": own.container("schedule")}  # "paragraph 4" inside a Schedule
                if kind == "paragraph" and "." not in main and not quals.get("schedule") and own.paras \
                        and own.paras[0].isdigit() and doc_id == passage.document_id and not own.guidance:
                    # "paragraph 2" inside paragraph 1 of an article: a sibling paragraph
                    ref = self._relative(passage, start, e, (main, *paras), cue=False)
                    prev = None
                else:
                    ref = self._number(passage, start, e, kind, doc_id, main, paras, quals, under, named)
                    prev = (main, paras)
            if ref is None:
                continue
            if self._range_sep.fullmatch(between) and out and out[-1].resolved and ref.resolved \
                    and out[-1].target_document == ref.target_document:
                out[-1] = self._range(passage, out[-1], ref, doc_id)  # "Rules 6.1.1 to 6.1.4", "10 to 13"
                continue
            out.append(ref)
        return out

    def _bracketed(self, passage: Passage, start: int, end: int, kind: str, doc_id: str, item: str,
                   prev: tuple[str, tuple[str, ...]] | None, quals: dict, under: bool) -> Reference | None:
        """A list item that is a bracketed paragraph ("(b)", "(a)-(f)"): of the rule before it in the list, of the
        article or section the reference is qualified by, else of the citing passage's own rule."""
        paras = tuple(re.findall(r"\(([^)]+)\)", item.split("-")[0]))
        if prev is not None:  # "Rule 6.1.1(a) or (b)": (b) of the same rule
            main, pparas = prev
            base = pparas[:max(0, len(pparas) - len(paras))]
            return self._number(passage, start, end, kind, doc_id, main, base + paras, quals, under)
        if quals.get("article") or quals.get("section"):  # "point (c) of Article 66"
            main, qparas = split_number(quals.get("article") or quals["section"])
            return self._number(passage, start, end, "article", doc_id, main, qparas + paras, quals, under)
        if doc_id == passage.document_id:
            return self._relative(passage, start, end, paras, cue=False)
        return None

    def _bare(self, passage: Passage, m: re.Match):
        """A bare rule number ("in accordance with 2.1", "2.1 to 2.3", "2.2 of the Conditions Governing Business
        Part"): a reference only where the named (or the citing) document has that number."""
        text = passage.text
        before = text[max(0, m.start() - 12):m.start()]
        if re.search(r"(?:USD|AED|GBP|EUR|£|\$|€|Table|Figure|row|column|version|Level|template|point|"
                     r"[A-Z]{2,})\s*$", before):
            return [], None
        items = self._items(m)
        if re.match(r"\s*(?:to|under)\s", text[items[-1][1]:]):
            status, doc, quals, end = "none", None, {}, items[-1][1]
        else:
            status, doc, quals, end = self._tail(passage, items[-1][1])
        if status in ("external", "annex", "anaphora"):
            return [], None
        doc = doc or passage.document_id
        refs = self._resolve_list(passage, m, "rule", doc, {}, under=False, first_start=m.start(), items=items)
        if not refs or not all(r.resolved for r in refs):
            return [], None
        if any(r.targets == (passage.id,) and ("(" not in r.surface or r.start == 0) for r in refs):
            return [], None  # the passage's own number (a heading, a table cell), not a reference
        return refs, ((items[-1][1], end) if end > items[-1][1] else None)

    def _relative_list(self, passage: Passage, m: re.Match) -> list[Reference]:
        out = []
        for im in re.finditer(r"(?:\((?:\d+[A-Za-z]?|[a-z]{1,4})\))+", m.group("list")):
            s, e = m.start("list") + im.start(), m.start("list") + im.end()
            ref = self._relative(passage, s, e, tuple(re.findall(r"\(([^)]+)\)", im.group(0))), cue=True)
            if ref is None:
                break
            out.append(ref)
        return out

