"""Cross-references: the records (passages, references), rule numbers parsed, document names and aliases."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

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


def _same_type(a: str, b: str) -> bool:
    """Both paragraph labels numeric, or both letters / roman numerals."""
    return a[:1].isdigit() == b[:1].isdigit()


class CorpusIndex:
    """A corpus's documents, names and rule numbers, and the lookups that turn a parsed reference into passage ids
    (:class:`rirag.text.xref.Resolver` finds the references in the text and resolves them here)."""

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
