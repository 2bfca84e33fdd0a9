"""Cross-references between the passages of one corpus: find each passage's references to other rules and
resolve them to passage ids of the same corpus.

Pure text: regular expressions over plain passage text (never HTML); no other rirag package.

A passage is a :class:`Passage` record (id, document id, document title, number, text). Its ``number`` is the
rule or paragraph number the corpus gives it: ObliQA's PassageID (``"3.2.1"``, ``"3.2.1.(a)"``,
``"3.2.1.Guidance.2."``, ``"APP2.A2.1.1"``, ``"Part 4.38.(6)"`` for section 38(6) of a regulation,
``"Schedule 1.Part 2.Chapter 1.4."`` for paragraph 4 of Schedule 1) or a PRA rule (``"2.1"``) or CRR article
paragraph (``"273.(1)"``). :func:`parse_number` reads it into containers (Part, Chapter, Schedule, Appendix),
a main number, a paragraph path and a guidance flag; references are looked up on those.

Forms found: "Rule 9.5.2", "Rules 9.5.2 and 9.5.3", "Rules 6.1.1 to 6.1.4", "GEN 3.3.31", "PRU 6.8",
"MKT Rule 3.3.1(1)(b)", "PIN Chapter 4", "section 61 of FSMR", "paragraph 4 of Schedule 1", "Chapter 9",
"App 2", "Part 6", relative "paragraph (2)" / "subsection (7)" / "subject to (2)" / "point (a) of this
paragraph", PRA "Article 277(3)", "paragraph 2 of this Article", "Chapter 4 of this Part", bare "2.1" or
"2.1 to 2.3", "Matching Adjustment 4.3", "2.2 of the Conditions Governing Business Part". References to other
instruments ("section 55J of the Act", "Article 206 of the CRR", "SUP 15.3.22D", "Art. 77a of the Solvency II
Directive") are found and kept unresolved.

Resolution rule (what a reference resolves to): ids of non-empty passages only, guidance left out --

* a rule, section or article ("Rule 9.5.2", "section 61 of FSMR", "Article 277"): the passages numbered so
  (the rule and its paragraph passages); with a paragraph path ("Rule 9.5.2(1)(a)") the passages of the
  longest path prefix that has passages of its own ("9.5.2.(1)", which holds (a));
* a dotted number that heads others ("PRU 6.8", "Section 4.13"): its heading and the rules under it;
* a chapter, part, schedule or appendix ("Chapter 9", "Part 4 of FSMR", "App 2"): every passage in it;
* a relative paragraph ("paragraph (2)"): paragraph (2) of the citing passage's own rule; where the rule has
  no paragraph passages (the paragraph is inside the citing passage), the citing passage itself;
* a range ("Rules 6.1.1 to 6.1.4", "Chapters 5B to 5F"): the passages from the first to the last, in corpus
  order.

Unresolved references keep a reason: ``external`` (another instrument: an Act, a Directive, the CRR, the FCA
Handbook), ``not_in_corpus`` (this corpus has no such number) or ``ambiguous`` (several candidates and nothing
to choose between them).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from rirag.io import atomic_dir

#: Reference kinds.
KINDS = ("rule", "section", "article", "paragraph", "chapter", "part", "schedule", "appendix", "range")
#: Reasons a reference stays unresolved.
REASONS = ("external", "not_in_corpus", "ambiguous")


@dataclass(frozen=True)
class Passage:
    """The minimal record the resolver needs."""

    id: str
    document_id: str
    document_title: str
    number: str
    text: str
    chapter: str | None = None  # a heading-level chapter number, where the number does not carry it


@dataclass(frozen=True)
class Reference:
    source_id: str
    start: int
    end: int
    surface: str
    kind: str
    target_document: str | None  # document id; None when external or not known
    target_number: str  # the number as read: "9.5.2(1)", "9", "(2)", "6.1.1-6.1.4"
    targets: tuple[str, ...] = ()
    reason: str | None = None  # why it is unresolved

    @property
    def resolved(self) -> bool:
        return bool(self.targets)

    def as_dict(self) -> dict:
        return {
            "source_id": self.source_id,
            "start": self.start,
            "end": self.end,
            "surface": self.surface,
            "kind": self.kind,
            "target_document": self.target_document,
            "target_number": self.target_number,
            "targets": list(self.targets),
            "resolved": self.resolved,
            "reason": self.reason,
        }


# --------------------------------------------------------------------------------------------------
# Passage numbers
# --------------------------------------------------------------------------------------------------

_INVISIBLE = dict.fromkeys(map(ord, "\u200e\u200f\u200b\ufeff\u00ad"), None)
_DASHES = str.maketrans({"–": "-", "—": "-", "‑": "-"})
_NUMBER_TOKEN = re.compile(
    r"(?P<art>article|regulation|rule)\s+(?P<aval>\d+[A-Za-z]{0,2})(?![\w])"
    r"|(?P<cont>part|chapter|schedule|app(?:endix)?|section)\s*(?P<cval>[0-9]+[A-Z]?|[IVXL]+)(?![\w])"
    r"|(?P<guid>guidance)"
    r"|\((?P<para>[0-9]+[A-Za-z]?|[a-z]{1,5}|[A-Z])\)"
    r"|(?<![A-Za-z0-9])(?P<main>[A-Z]{0,2}\d+(?:[A-Za-z]{1,2}\d+)*[A-Za-z]{0,2}|[A-Z](?![a-z]))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Number:
    containers: tuple[tuple[str, str], ...]  # (("part", "4"), ("chapter", "1"))
    main: str  # "9.5.2", "38", "A2.1.1", "273"; "" for a container heading
    paras: tuple[str, ...]  # ("1", "a")
    guidance: bool

    def container(self, kind: str) -> str | None:
        for k, v in self.containers:
            if k == kind:
                return v
        return None


def parse_number(number: str) -> Number:
    """Read a passage number into containers, main number, paragraph path and guidance flag."""
    s = number.translate(_INVISIBLE).strip()
    if re.match(r"footnote\b", s, re.IGNORECASE):
        return Number((("footnote", s[8:].strip()),), "", (), False)  # an ingested footnote: not a provision
    # "Article 72 #2": a repeated label; "Article 279b 1. (part 2)": a long paragraph cut in parts
    s = re.sub(r"\s*(?:#\d+|\(part \d+\))$", "", s)
    qualified = re.match(r"(.*[A-Za-z]{3,}.*?)\s+(\d[\w.()]*)$", s)
    if qualified and not re.match(r"(?i)(?:article|part|chapter|schedule|app|appendix|annex|section|rule|regulation)\b",
                                  s) \
            and not re.search(r"(?i)guidance", s):
        # an ingested label qualified by its heading: "3D24 Specific Exposures 2." is 3D24.2, "3 Organisational
        # Structure 3.2" is 3.2, "Interim compensation payments 20." is 20
        head = re.match(r"(\d+[A-Z]+\d+[A-Z]?)\s", s)
        tail = qualified.group(2)
        s = f"{head.group(1)}.{tail}" if head and "." not in tail.rstrip(".") else tail
    containers: list[tuple[str, str]] = []
    main: list[str] = []
    paras: list[str] = []
    guidance = article = False
    for m in _NUMBER_TOKEN.finditer(s):
        if m.group("guid"):
            guidance = True
            break
        if m.group("art"):  # "Article 277 2." (an ingested CRR article's paragraph 2): main 277, paragraph 2
            if not main:
                main.append(m.group("aval"))
                article = True
            continue
        if m.group("cont"):
            if main:
                continue
            kind = m.group("cont").lower()
            kind = "appendix" if kind.startswith("app") else kind
            containers.append((kind, m.group("cval").upper() if kind == "section" else m.group("cval")))
        elif m.group("para"):
            paras.append(m.group("para"))
        elif m.group("main") and article:
            paras.append(m.group("main"))
        elif m.group("main") and not paras:
            main.append(m.group("main"))
    return Number(tuple(containers), ".".join(main), tuple(paras), guidance)


def _split(number: str) -> tuple[str, tuple[str, ...]]:
    """"9.5.2(1)(a)" -> ("9.5.2", ("1", "a"))."""
    clean = re.sub(r"\s+", "", number.translate(_INVISIBLE))
    main = re.match(r"[^()]*", clean).group(0).rstrip(".")
    return main, tuple(re.findall(r"\(([^)]+)\)", clean))


def _norm_name(name: str) -> str:
    return " ".join(name.translate(_INVISIBLE).translate(_DASHES).split()).casefold()


def aliases_from_names(names: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Aliases from a document's other names (ObliQA's document_map: file stem, short code, titles): short codes
    ("GEN") as they are, titles without a trailing bracket ("General Rulebook (GEN)" -> "General Rulebook")."""
    out: dict[str, str] = {}
    for doc_id, doc_names in names.items():
        for n in doc_names:
            n = " ".join(str(n).split())
            if re.fullmatch(r"[A-Z][A-Z0-9]{1,7}", n):
                out[n] = str(doc_id)
            elif n:
                out[re.sub(r"\s*\([^)]*\)\s*$", "", n).strip() or n] = str(doc_id)
    return out


# --------------------------------------------------------------------------------------------------
# The corpus index
# --------------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    id: str
    number: Number
    chapter: str | None
    nonempty: bool


@dataclass
class _Doc:
    id: str
    title: str
    entries: list[_Entry] = field(default_factory=list)
    by_main: dict[tuple[str | None, str], list[_Entry]] = field(default_factory=lambda: defaultdict(list))
    containers: set[str] = field(default_factory=set)
    order: dict[str, int] = field(default_factory=dict)

    def add(self, entry: _Entry) -> None:
        self.order[entry.id] = len(self.entries)
        self.entries.append(entry)
        self.by_main[(entry.number.container("schedule"), entry.number.main)].append(entry)
        self.containers.update(k for k, _ in entry.number.containers)


#: Words that make the name after "of" another instrument, not a document of this corpus.
_EXTERNAL_NAME = re.compile(
    r"\b(?:Act|Acts|Law|Laws|Decree|Directive|Delegated|Order|Handbook|Convention|Treaty|Statute|MiFID|MiFIR|"
    r"CRR|CRD|EMIR|Solvency II|Companies Regulations|Insolvency Regulations|Federal|Cabinet|Basel|IFRS|IAS|"
    r"FATF|Recommendations?|Code|Regulations?)\b"
)
def _title_aliases(title: str) -> set[str]:
    """Names a document goes by, read from its title: the title, the title without brackets, a bracketed code
    ("General Rulebook (GEN)" -> "GEN")."""
    out: set[str] = set()
    t = " ".join(title.translate(_INVISIBLE).split())
    if not t:
        return out
    out.add(t)
    for m in re.finditer(r"\(([A-Z][A-Z0-9]{1,7})\)", t):
        if not _EXTERNAL_NAME.fullmatch(m.group(1)):  # "Own Funds (CRR)": a Part of the CRR, not "the CRR"
            out.add(m.group(1))
    bare = re.sub(r"\s*\([^)]*\)\s*", " ", t).strip()
    if bare:
        out.add(bare)
    return out


_NOT_CODES = {"USD", "AED", "EUR", "GBP", "US", "UK", "UAE", "ADGM", "PRA", "FSRA", "FCA", "CET", "AT", "NI", "QRT",
              "IR", "SS", "SOP", "TWD", "MA", "BEL", "SCR", "MCR", "LCR", "NSFR", "RWA", "CDD", "KYC", "ESG", "IT"}
_WORD_NUMBER = r"(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Eleven|Twelve|[IVX]+)"
_KIND_OF_WORD = {"rule": "rule", "rules": "rule", "section": "section", "sections": "section", "article": "article",
                 "articles": "article", "art": "article", "chapter": "chapter", "chapters": "chapter",
                 "part": "part", "parts": "part", "schedule": "schedule", "schedules": "schedule",
                 "appendix": "appendix", "appendices": "appendix", "app": "appendix"}


class Resolver:
    """Find and resolve the references of a corpus's passages.

    ``aliases`` maps extra names (short codes, other titles) to document ids; every document's title and the
    bracketed code in it ("(GEN)") are aliases already. A name several documents share names none of them.
    """

    def __init__(self, passages: Iterable[Passage], aliases: Mapping[str, str] | None = None):
        self.docs: dict[str, _Doc] = {}
        self.numbers: dict[str, Number] = {}
        for p in passages:
            doc = self.docs.get(p.document_id)
            if doc is None:
                doc = self.docs[p.document_id] = _Doc(p.document_id, p.document_title)
            num = parse_number(p.number)
            self.numbers[p.id] = num
            doc.add(_Entry(p.id, num, p.chapter, bool(p.text.strip())))
        names: dict[str, set[str]] = defaultdict(set)
        spelled: dict[str, str] = {}
        exact = {_norm_name(doc.title): doc.id for doc in self.docs.values()}
        for doc in self.docs.values():
            for name in _title_aliases(doc.title):
                if exact.get(_norm_name(name), doc.id) != doc.id:
                    continue  # "Reporting" is the Reporting Part's title, not also "Reporting (CRR)" without brackets
                names[_norm_name(name)].add(doc.id)
                spelled.setdefault(_norm_name(name), name)
        for name, doc_id in (aliases or {}).items():
            if exact.get(_norm_name(name), str(doc_id)) != str(doc_id):
                continue
            names[_norm_name(name)].add(str(doc_id))
            spelled.setdefault(_norm_name(name), name)
        self.alias = {n: next(iter(ids)) for n, ids in names.items() if len(ids) == 1}
        codes = sorted({spelled[n] for n in self.alias if re.fullmatch(r"[A-Z][A-Z0-9]{1,7}", spelled[n])},
                       key=lambda n: (-len(n), n))
        titles = sorted({spelled[n] for n in self.alias
                         if not re.fullmatch(r"[A-Z][A-Z0-9]{1,7}", spelled[n]) and len(n) >= 4},
                        key=lambda n: (-len(n), n))
        self._codes = [c for c in codes if c not in _NOT_CODES]
        self._titles = titles
        self._titles_norm = [_norm_name(t) for t in titles]
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
        self._again_re = re.compile(again[3:-2] + "$")  # the repeated keyword at the end of a separator
        self._sep_re = re.compile(sep)
        codes = "|".join(map(re.escape, self._codes)) or r"(?!x)x"
        self._code_re = re.compile(
            rf"(?<![\w-])(?P<code>{codes})(?:\s+(?P<ckw>Rules?|RULES?|Chapters?|Sections?|App(?:endix)?|APP))?"
            rf"{sp}(?P<list>{num}{para}(?:{sep}{num}{para})*)(?![\w.]*\d)")
        titles = "|".join(re.sub(r"(?:\\?[-–—])", "[-–—]", re.escape(t)) for t in self._titles) or r"(?!x)x"
        self._title_re = re.compile(rf"(?<![\w-])(?=[A-Z])(?i:(?P<title>{titles}))(?:\s+Part)?,?{sp}"
                                    rf"(?P<list>{num}{para}(?:{sep}{num}{para})*)(?![\w.]*\d)")
        self._title_before_re = re.compile(rf"(?<![\w-])(?=[A-Z])(?i:(?P<title>{titles}))(?:\s+Part)?\s*\(\s*$")
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
            rf"paragraph|Annex)\s+(?P<v>\d+[A-Za-z]?(?:\s?\(\d+\))?|{_WORD_NUMBER})(?![\w.])")

    # ---------------------------------------------------------------- finding

    def references(self, passage: Passage) -> list[Reference]:
        """The references of one passage, in text order, non-overlapping."""
        if passage.id not in self.numbers:
            raise KeyError(f"passage {passage.id!r} is not in the resolver's corpus")
        text = passage.text
        found: list[Reference] = []
        taken: list[tuple[int, int]] = []

        def free(a: int, b: int) -> bool:
            return all(b <= x or a >= y for x, y in taken)

        def add(refs: list[Reference], consumed: tuple[int, int] | None = None) -> None:
            kept = [r for r in refs if free(r.start, r.end)]
            for r in kept:
                found.append(r)
                taken.append((r.start, r.end))
            if consumed and kept:
                taken.append(consumed)

        for m in self._code_re.finditer(text):
            add(*self._from_code(passage, m))
        for m in self._title_re.finditer(text):
            add(*self._from_title(passage, m))
        pos = 0
        while (m := self._kw_re.search(text, pos)) is not None:
            refs, consumed = self._from_keyword(passage, m) if free(m.start(), m.start("list")) else ([], None)
            add(refs, consumed)
            reached = max([r.end for r in refs] + [consumed[1] if consumed else 0])
            pos = reached if m.start() < reached < m.end() else m.end()
        for m in self._ext_code_re.finditer(text):
            code, n = m.group("code"), m.group("num")
            if _norm_name(code) in self.alias or code in _NOT_CODES or not free(m.start(), m.end()):
                continue
            if "." in n or re.search(r"\d[A-Z]$", n):
                add([Reference(passage.id, m.start(), m.end(), m.group(0), "rule", None, n, reason="external")])
        for m in self._bare_re.finditer(text):
            if free(m.start(), m.end()):
                add(*self._bare(passage, m))
        for m in self._rel_re.finditer(text):
            if free(m.start("list"), m.end()):
                add(self._relative_list(passage, m))
        found.sort(key=lambda r: (r.start, r.end))
        return found

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
        if "title" in quals or re.fullmatch(_WORD_NUMBER, quals.get("part", "0")):
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
        if _EXTERNAL_NAME.search(name) or re.match(r"[A-Z]{2,}\b", name):
            return "external", None, quals, m.end()
        return "none", None, quals, end

    def _doc_by_name(self, name: str) -> str | None:
        """The document named at the start of ``name`` (longest alias first), or None."""
        norm = _norm_name(re.sub(r"[\s,.;:)]+$", "", name))
        for alias in self._titles_norm + [_norm_name(c) for c in self._codes]:
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
        doc = self.alias.get(_norm_name(m.group("code")))
        ckw = (m.group("ckw") or "rule").lower().rstrip("s")
        kind = "chapter" if ckw == "chapter" else "appendix" if ckw.startswith("app") else "rule"
        return self._resolve_list(passage, m, kind, doc, {}, under=True, first_start=m.start()), None

    def _from_title(self, passage: Passage, m: re.Match):
        doc = self.alias.get(_norm_name(m.group("title")))
        return self._resolve_list(passage, m, "rule", doc, {}, under=True, first_start=m.start()), None

    def _from_keyword(self, passage: Passage, m: re.Match):
        word = (m.group("kw") or m.group("app")).lower().rstrip(".")
        kind = _KIND_OF_WORD.get(word, "paragraph")
        if word == "regulation":
            kind = "section"
        items = [it for it in self._items(m) if not re.fullmatch(r"(?:19|20)\d\d", it[2])]
        merged: list[tuple[int, int, str, str]] = []
        for it in items:  # "points (a) to (f)": one reference
            if (merged and it[2].startswith("(") and merged[-1][2].startswith("(")
                    and self._range_sep.fullmatch(it[3])):
                last = merged.pop()
                it = (last[0], it[1], f"{last[2]}-{it[2]}", last[3])
            merged.append(it)
        items = merged
        if not items:
            return [], None
        text = passage.text
        after = text[items[-1][1]:items[-1][1] + 16]
        if re.match(r"\s*(?:permissions?|undertakings?|Statements?)\b", after):
            return [], None
        if m.start() == 0 and kind in ("chapter", "part", "section") and re.match(r"\s+[A-Z][a-z]", after):
            return [], None  # a heading: "Chapter 4 Format and Frequency of Reporting"
        if re.search(r"(?:\d|\))\s*(?:of|in)\s+(?:the\s+)?$", text[max(0, m.start() - 12):m.start()]):
            return [], None  # a qualifier of the reference before it: "2.30-2.37 of Chapter 2"
        if re.fullmatch(r"\s*(?:[A-Z][a-z]+\s+){0,2}", text[:m.start()]) and after.lstrip().startswith(":"):
            return [], None  # a rule's own label: "Fundamental Rule 3: ..."
        status, doc, quals, end = self._tail(passage, items[-1][1])
        if status == "annex":
            return [], None
        own = self.docs[passage.document_id]
        if status in ("external", "anaphora"):
            reason = "external" if status == "external" else "ambiguous"
            return [Reference(passage.id, m.start() if i == 0 else s, e, text[m.start() if i == 0 else s:e], kind,
                              None, item, reason=reason) for i, (s, e, item, _) in enumerate(items)], \
                (items[-1][1], end)
        if status == "none":
            # "Technical Provisions (Chapter 8)": a chapter of the Part named just before the bracket
            before = self._title_before_re.search(text[max(0, m.start() - 150):m.start()])
            if before and self.alias.get(_norm_name(before.group("title"))):
                status, doc = "doc", self.alias[_norm_name(before.group("title"))]
        if status in ("none", "same"):
            doc = passage.document_id
            if status == "none" and kind in ("part", "schedule") and kind not in own.containers:
                return [], None  # "Part 4A permission", "Schedule 16 Statement": not a part of this document
        return self._resolve_list(passage, m, kind, doc, quals, under=False, first_start=m.start(),
                                  items=items), (items[-1][1], end)

    def _resolve_list(self, passage: Passage, m: re.Match, kind: str, doc_id: str | None, quals: dict,
                      under: bool, first_start: int, items=None) -> list[Reference]:
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
                paras = tuple(re.findall(r"\(([^)]+)\)", item.split("-")[0]))
                if prev is not None:  # "Rule 6.1.1(a) or (b)": (b) of the same rule
                    main, pparas = prev
                    base = pparas[:max(0, len(pparas) - len(paras))]
                    ref = self._number(passage, start, e, kind, doc_id, main, base + paras, quals, under)
                elif quals.get("article") or quals.get("section"):  # "point (c) of Article 66"
                    main, qparas = _split(quals.get("article") or quals["section"])
                    ref = self._number(passage, start, e, "article", doc_id, main, qparas + paras, quals, under)
                elif doc_id == passage.document_id:
                    ref = self._relative(passage, start, e, paras, cue=False)
                else:
                    ref = None
            else:
                main, paras = _split(item)
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
                    ref = self._number(passage, start, e, kind, doc_id, main, paras, quals, under)
                    prev = (main, paras)
            if ref is None:
                continue
            if self._range_sep.fullmatch(between) and out and out[-1].resolved and ref.resolved \
                    and out[-1].target_document == ref.target_document:
                out[-1] = self._range(passage, out[-1], ref, doc_id)  # "Rules 6.1.1 to 6.1.4", "10 to 13"
                continue
            out.append(ref)
        return out

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

    # ---------------------------------------------------------------- resolving

    def _relative(self, passage: Passage, start: int, end: int, paras: tuple[str, ...], cue: bool
                  ) -> Reference | None:
        """Paragraph ``paras`` of the citing passage's own rule."""
        own = self.numbers[passage.id]
        doc = self.docs[passage.document_id]
        text = passage.text
        label = "".join(f"({p})" for p in paras)
        if not own.main:
            return None
        outside = text[:start] + text[end:]
        marker = f"({paras[0]})"
        siblings = [e for e in doc.by_main.get((own.container("schedule"), own.main), [])
                    if not e.number.guidance and e.number.paras and e.nonempty]
        same_level = [e for e in siblings if _same_type(e.number.paras[0], paras[0])]
        hits = []
        for n in range(len(paras), 0, -1):
            hits = [e for e in same_level if e.number.paras[:n] == paras[:n]]
            if hits:
                break
        if hits:
            return Reference(passage.id, start, end, text[start:end], "paragraph", passage.document_id,
                             own.main + label, tuple(e.id for e in hits))
        if marker in outside or not cue:
            # the paragraph is inside the citing passage (its own list), or the rule is one passage
            return Reference(passage.id, start, end, text[start:end], "paragraph", passage.document_id,
                             own.main + "".join(f"({p})" for p in own.paras) + label, (passage.id,))
        return None

    def _number(self, passage: Passage, start: int, end: int, kind: str, doc_id: str, main: str,
                paras: tuple[str, ...], quals: dict, under: bool) -> Reference:
        text = passage.text
        surface = text[start:end]
        label = main + "".join(f"({p})" for p in paras)
        doc = self.docs.get(doc_id)
        if doc is None:
            return Reference(passage.id, start, end, surface, kind, doc_id, label, reason="not_in_corpus")
        if kind in ("chapter", "part", "schedule", "appendix") and "." not in main:
            hits = self._container(doc, kind, main, quals)
            if hits is None:
                return Reference(passage.id, start, end, surface, kind, doc_id, label, reason="ambiguous")
        elif kind == "section" and "." not in main and "part" not in doc.containers:
            hits = []  # "Section 3" of a document without numbered sections (of a CRR chapter, of an Act)
        else:
            hits = self._rule(doc, quals.get("schedule"), main, paras, under=under or "." in main)
            if not hits and kind == "appendix":
                hits = self._container(doc, kind, main, quals) or []
        if not hits:
            return Reference(passage.id, start, end, surface, kind, doc_id, label, reason="not_in_corpus")
        return Reference(passage.id, start, end, surface, kind, doc_id, label, tuple(hits))

    def _rule(self, doc: _Doc, schedule: str | None, main: str, paras: tuple[str, ...], under: bool = True
              ) -> list[str]:
        entries = [e for e in doc.by_main.get((schedule, main), []) if not e.number.guidance]
        prefix = main + "."
        if entries and not paras and under and "." in main and all(not e.number.paras for e in entries):
            below = [e.id for e in doc.entries if e.nonempty and not e.number.guidance
                     and e.number.container("schedule") == schedule and e.number.main.startswith(prefix)]
            if below:  # a heading ("PRU 6.8", "Section 4.13"): it and the rules under it
                return [e.id for e in entries if e.nonempty] + below
        if entries:
            for n in range(len(paras), 0, -1):
                sub = [e.id for e in entries if e.number.paras[:n] == paras[:n] and e.nonempty]
                if sub:
                    return sub
            sub = [e.id for e in entries if e.nonempty]
            if sub:
                return sub
        if not under:
            return []
        return [e.id for e in doc.entries if e.nonempty and not e.number.guidance
                and e.number.container("schedule") == schedule and e.number.main.startswith(prefix)]

    def _container(self, doc: _Doc, kind: str, value: str, quals: dict) -> list[str] | None:
        hits = [e for e in doc.entries if e.number.container(kind) == value]
        if kind == "chapter" and not hits:
            hits = [e for e in doc.entries if e.chapter == value]
        if kind == "chapter" and not hits:
            prefix = value + "."
            hits = [e for e in doc.entries if not e.number.containers
                    and (e.number.main == value or e.number.main.startswith(prefix))]
            if not any(e.number.main.startswith(prefix) for e in hits):
                hits = []
        for qk, qv in quals.items():
            qk = "appendix" if qk.startswith("app") else qk
            if qk != kind and qk in doc.containers:
                hits = [e for e in hits if e.number.container(qk) == qv]
        if kind == "chapter" and len({(e.number.container("schedule"), e.number.container("part"))
                                      for e in hits}) > 1:
            return None  # "Chapter 1" of a regulation with several Parts, and no Part named
        return [e.id for e in hits if e.nonempty and not e.number.guidance]

    def _range(self, passage: Passage, a: Reference, b: Reference, doc_id: str) -> Reference:
        doc = self.docs[doc_id]
        lo = min(doc.order[t] for t in a.targets)
        hi = max(doc.order[t] for t in b.targets)
        surface = passage.text[a.start:b.end]
        label = f"{a.target_number}-{b.target_number}"
        if hi < lo:
            return Reference(passage.id, a.start, b.end, surface, "range", doc_id, label, reason="ambiguous")
        ids = tuple(e.id for e in doc.entries[lo:hi + 1] if e.nonempty and not e.number.guidance)
        return Reference(passage.id, a.start, b.end, surface, "range", doc_id, label, ids)

    # ---------------------------------------------------------------- public lookups

    def lookup(self, document_id: str, kind: str, number: str, schedule: str | None = None) -> tuple[str, ...]:
        """The passage ids a provision resolves to under the resolution rule: ``kind`` is "rule" (any numbered
        provision: "9.5.2(1)", "A6.3", "273(1)"), "chapter", "part", "schedule", "appendix", "range"
        ("6.1.1-6.1.4") or "chapters" (a comma-separated list). Used to expand labelled references."""
        doc = self.docs.get(document_id)
        if doc is None:
            return ()
        if kind in ("range", "chapters"):
            sub = "rule" if kind == "range" else "chapter"
            parts = [self.lookup(document_id, sub, n, schedule) for n in re.split(r"[-,]", number)]
            if kind == "chapters":
                return tuple(dict.fromkeys(i for p in parts for i in p))
            if not parts[0] or not parts[-1]:
                return ()
            lo, hi = min(doc.order[t] for t in parts[0]), max(doc.order[t] for t in parts[-1])
            return tuple(e.id for e in doc.entries[lo:hi + 1] if e.nonempty and not e.number.guidance)
        if kind in ("chapter", "part", "schedule", "appendix"):
            return tuple(self._container(doc, kind, number, {}) or ())
        main, paras = _split(number)
        return tuple(self._rule(doc, schedule, main, paras, under=True))


def _same_type(a: str, b: str) -> bool:
    """Both paragraph labels numeric, or both letters / roman numerals."""
    return a[:1].isdigit() == b[:1].isdigit()


def find_references(passages: Iterable[Passage], aliases: Mapping[str, str] | None = None
                    ) -> dict[str, list[Reference]]:
    """Every passage's references: passage id -> references (empty list when none)."""
    passages = list(passages)
    resolver = Resolver(passages, aliases)
    return {p.id: resolver.references(p) for p in passages}


# --------------------------------------------------------------------------------------------------
# The graph: every reference of a corpus, written beside it as a datasets config of its own
# --------------------------------------------------------------------------------------------------

#: Folder (beside the corpus) and datasets config name of the cross-reference graph.
GRAPH_CONFIG = "xref"
GRAPH_FILE = "references.jsonl"
SUMMARY_FILE = "summary.json"


def graph_rows(passages: Iterable[Passage], aliases: Mapping[str, str] | None = None) -> list[dict]:
    """One row per reference, in corpus order then text order (the same input gives the same rows)."""
    passages = list(passages)
    resolver = Resolver(passages, aliases)
    rows = []
    for p in passages:
        for ref in resolver.references(p):
            row = ref.as_dict()
            row["source_document"] = p.document_id
            row["source_number"] = p.number
            rows.append(row)
    return rows


def graph_summary(rows: list[dict], passages: int) -> dict:
    """Counts for the build report and the card."""
    by_kind: dict[str, int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)
    for r in rows:
        by_kind[r["kind"]] += 1
        if not r["resolved"]:
            reasons[r["reason"] or "unknown"] += 1
    resolved = sum(1 for r in rows if r["resolved"])
    return {
        "passages": passages,
        "passages_with_references": len({r["source_id"] for r in rows}),
        "references": len(rows),
        "resolved": resolved,
        "unresolved": dict(sorted(reasons.items())),
        "edges": sum(len(r["targets"]) for r in rows),
        "by_kind": dict(sorted(by_kind.items())),
    }


def card_section(summary: dict) -> str:
    """The dataset card's section on the ``xref`` config."""
    unresolved = ", ".join(f"{k} {v}" for k, v in summary["unresolved"].items()) or "none"
    kinds = ", ".join(f"{k} {v}" for k, v in summary["by_kind"].items())
    return (
        "## Cross-references (`xref` config)\n\n"
        f"`{GRAPH_CONFIG}/{GRAPH_FILE}`: one row per reference a passage makes to another rule, found in the "
        "passage text by `rirag.text.xref` and resolved to passage ids of this corpus. Fields: `source_id`, "
        "`source_document`, `source_number`, `start`/`end` (character offsets in the passage text), `surface`, "
        "`kind`, `target_document`, `target_number`, `targets` (passage ids), `resolved`, `reason` (why a "
        "reference is unresolved: `external` for another instrument, `not_in_corpus`, `ambiguous`).\n\n"
        "A rule resolves to its own passages (its paragraphs, not its guidance); a section, chapter, part or "
        "appendix to the passages in it; a relative paragraph (\"paragraph (2)\") to that paragraph of the citing "
        "rule; a range to the passages from its first to its last number.\n\n"
        f"{summary['references']} references in {summary['passages_with_references']} of {summary['passages']} "
        f"passages; {summary['resolved']} resolved ({summary['edges']} edges); unresolved: {unresolved}. "
        f"By kind: {kinds}.\n"
    )


def write_graph(rows: list[dict], summary: dict, out: str | os.PathLike) -> Path:
    """Write the graph folder atomically: ``references.jsonl``, ``summary.json`` and a ``README.md`` whose
    front matter declares the ``xref`` datasets config."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        with open(tmp / GRAPH_FILE, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        (tmp / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        front = (f"---\nconfigs:\n- config_name: {GRAPH_CONFIG}\n  data_files:\n  - split: train\n"
                 f"    path: {GRAPH_FILE}\n---\n\n")
        (tmp / "README.md").write_text(front + card_section(summary), encoding="utf-8")
    return out
