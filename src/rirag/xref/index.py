"""Cross-references: the corpus index, a corpus's documents, names and rule numbers, and the lookups that turn a
parsed reference into passage ids."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping

from rirag.xref.named_rules import named_rule
from rirag.xref.numbers import NOT_CODES, Number, norm_name, parse_number, split_number, title_aliases
from rirag.xref.records import Passage, Reference

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
    #: An ingested footnote's mark -> the places (in ``entries``) of the passages numbered "footnote <mark>".
    footnotes: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    #: A footnote's id in its page (``FootnoteId``) -> the places of the passages with that id.
    anchors: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    #: A named rule's name (normalised: "fundamental rule") -> its number ("8") -> the places of the passages that
    #: state it ("Fundamental Rule 8: A firm must prepare for resolution ...", numbered 2.8;
    #: :func:`rirag.xref.named_rules.named_rule`).
    named: dict[str, dict[str, list[int]]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, entry: _Entry, named: tuple[str, str] | None = None, anchor: str = "") -> None:
        self.order[entry.id] = len(self.entries)
        mark = entry.number.container("footnote")
        if mark is not None and entry.nonempty:
            self.footnotes[mark].append(len(self.entries))
        if anchor and entry.nonempty:
            self.anchors[anchor].append(len(self.entries))
        if named is not None and entry.nonempty and not entry.number.guidance:
            self.named[named[0]].setdefault(named[1], []).append(len(self.entries))
        self.entries.append(entry)
        self.by_main[(entry.number.container("schedule"), entry.number.main)].append(entry)
        self.containers.update(k for k, _ in entry.number.containers)


def _same_type(a: str, b: str) -> bool:
    """Both paragraph labels numeric, or both letters / roman numerals."""
    return a[:1].isdigit() == b[:1].isdigit()


class _LazyDocs(Mapping[str, _Doc]):
    """Documents by id, each read from the corpus when it is first asked for (:meth:`CorpusIndex.by_document`)."""

    def __init__(self, titles: Mapping[str, str], read: Callable[[str], Iterable[Passage]],
                 add: Callable[[_Doc, Passage], None]):
        self._titles, self._read, self._add = titles, read, add
        self._docs: dict[str, _Doc] = {}

    def __getitem__(self, doc_id: str) -> _Doc:
        doc = self._docs.get(doc_id)
        if doc is None:
            if doc_id not in self._titles:
                raise KeyError(doc_id)
            doc = _Doc(doc_id, self._titles[doc_id])
            for p in self._read(doc_id):
                if p.document_id != doc_id:
                    raise ValueError(f"document {doc_id!r} was read with a passage of document {p.document_id!r}")
                self._add(doc, p)
            self._docs[doc_id] = doc
        return doc

    def __iter__(self) -> Iterator[str]:
        return iter(self._titles)

    def __len__(self) -> int:
        return len(self._titles)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._titles

    @property
    def read(self) -> int:
        """How many documents were read."""
        return len(self._docs)


class CorpusIndex:
    """A corpus's documents, names and rule numbers, and the lookups that turn a parsed reference into passage ids
    (:class:`rirag.xref.resolver.Resolver` finds the references in the text and resolves them here).

    Built from every passage of the corpus, or (:meth:`by_document`) from the documents' titles and a reader of one
    document's passages, which reads a document when a reference or a passage first needs it: what a few passages'
    references cost is then independent of the corpus's size."""

    def __init__(self, passages: Iterable[Passage], aliases: Mapping[str, str] | None = None,
                 titles: Mapping[str, str] | None = None, read: Callable[[str], Iterable[Passage]] | None = None,
                 tables: Mapping | None = None):
        self.numbers: dict[str, Number] = {}
        self.docs: Mapping[str, _Doc]
        if read is not None:
            self.docs = _LazyDocs(titles or {}, read, self._add)
        else:
            docs: dict[str, _Doc] = {}
            for p in passages:
                doc = docs.get(p.document_id)
                if doc is None:
                    doc = docs[p.document_id] = _Doc(p.document_id, p.document_title)
                self._add(doc, p)
            self.docs = docs
        if tables is not None:  # what name_tables() gave for these titles and aliases
            self.alias = dict(tables["alias"])
            self._codes, self._titles = list(tables["codes"]), list(tables["titles"])
            self._titles_norm = list(tables["titles_norm"])
        else:
            doc_titles = titles if read is not None else {d.id: d.title for d in self.docs.values()}
            self._name_documents(doc_titles or {}, aliases)

    def name_tables(self) -> dict:
        """The document-name tables built from the titles and aliases (JSON-ready): given back as ``tables``, they
        stand for the titles and aliases they were built from."""
        return {"alias": self.alias, "codes": self._codes, "titles": self._titles, "titles_norm": self._titles_norm}

    @classmethod
    def by_document(cls, titles: Mapping[str, str], read: Callable[[str], Iterable[Passage]],
                    aliases: Mapping[str, str] | None = None):
        """An index over the documents ``titles`` names (id -> title, in corpus order), each read by
        ``read(document_id)`` (its passages in corpus order) the first time it is needed. It resolves as the index
        over all the passages does, where every document has a passage."""
        return cls((), aliases, titles=titles, read=read)

    def _add(self, doc: _Doc, p: Passage) -> None:
        num = parse_number(p.number)
        self.numbers[p.id] = num
        doc.add(_Entry(p.id, num, p.chapter, bool(p.text.strip())), named_rule(p.text), p.anchor)

    def _name_documents(self, titles: Mapping[str, str], aliases: Mapping[str, str] | None) -> None:
        names: dict[str, set[str]] = defaultdict(set)
        spelled: dict[str, str] = {}
        exact = {norm_name(title): doc_id for doc_id, title in titles.items()}
        for doc_id, title in titles.items():
            for name in sorted(title_aliases(title)):  # sorted: the spelling kept for a name is not the hash seed's
                norm = norm_name(name)
                if exact.get(norm, doc_id) != doc_id:
                    continue  # "Reporting" is the Reporting Part's title, not also "Reporting (CRR)" without brackets
                names[norm].add(doc_id)
                spelled.setdefault(norm, name)
        for name, doc_id in (aliases or {}).items():
            norm = norm_name(name)
            if exact.get(norm, str(doc_id)) != str(doc_id):
                continue
            names[norm].add(str(doc_id))
            spelled.setdefault(norm, name)
        self.alias = {n: next(iter(ids)) for n, ids in names.items() if len(ids) == 1}
        codes = sorted({spelled[n] for n in self.alias if re.fullmatch(r"[A-Z][A-Z0-9]{1,7}", spelled[n])},
                       key=lambda n: (-len(n), n))
        names_spelled = sorted({spelled[n] for n in self.alias
                                if not re.fullmatch(r"[A-Z][A-Z0-9]{1,7}", spelled[n]) and len(n) >= 4},
                               key=lambda n: (-len(n), n))
        self._codes = [c for c in codes if c not in NOT_CODES]
        self._titles = names_spelled
        self._titles_norm = [norm_name(t) for t in names_spelled]

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

    def _footnote(self, passage: Passage, start: int, end: int, mark: str, target: str | None = None
                  ) -> Reference | None:
        """The footnote of the citing passage's document that mark ``mark`` points to: the first passage with the
        id in its page that the source's structure names (``target``), where there is one, else numbered "footnote
        <mark>", at or after the citing one (a rule row's footnotes follow it; a statement numbers its footnotes
        once), else the last before it; None where the document has no such footnote."""
        doc = self.docs[passage.document_id]
        places = (target and doc.anchors.get(target)) or doc.footnotes.get(mark)
        if not places:
            return None
        here = doc.order[passage.id]
        place = next((i for i in places if i >= here), places[-1])
        return Reference(passage.id, start, end, passage.text[start:end], "footnote", passage.document_id,
                         f"footnote {mark}", (doc.entries[place].id,))

    def _number(self, passage: Passage, start: int, end: int, kind: str, doc_id: str, main: str,
                paras: tuple[str, ...], quals: dict, under: bool, named: str | None = None) -> Reference:
        """``named``: the reference names a named rule ("Fundamental Rule 7": "fundamental rule"), looked up among
        the document's named rules first (:meth:`_named`)."""
        text = passage.text
        surface = text[start:end]
        label = main + "".join(f"({p})" for p in paras)
        doc = self.docs.get(doc_id)
        if doc is None:
            return Reference(passage.id, start, end, surface, kind, doc_id, label, reason="not_in_corpus")
        if named is not None and not paras and (hits := self._named(doc, main, named)):
            return Reference(passage.id, start, end, surface, kind, doc_id, self.numbers[hits[0]].main, hits)
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
            if not hits and kind == "rule" and not paras and (hits := self._named(doc, main)):
                # "Rule 8 in the Fundamental Rules Part": the Part numbers its rules 2.1 to 2.8 and names them
                return Reference(passage.id, start, end, surface, kind, doc_id, self.numbers[hits[0]].main, hits)
        if not hits:
            return Reference(passage.id, start, end, surface, kind, doc_id, label, reason="not_in_corpus")
        return Reference(passage.id, start, end, surface, kind, doc_id, label, tuple(hits))

    @staticmethod
    def _named(doc: _Doc, number: str, name: str | None = None) -> tuple[str, ...]:
        """The passages stating the named rule ``number`` of ``doc``: of the name ``name`` (normalised), else of
        the one name the document gives that number (none where several names do: "Individual Conduct Rule 1" and
        "Senior Manager Conduct Rule 1")."""
        if name is not None:
            places = doc.named.get(name, {}).get(number, [])
        else:
            found = [by[number] for by in doc.named.values() if number in by]
            places = found[0] if len(found) == 1 else []
        return tuple(doc.entries[i].id for i in places)

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
        ("6.1.1-6.1.4"), "chapters" (a comma-separated list) or "footnote" (the document's footnotes of that mark).
        Used to expand labelled references."""
        doc = self.docs.get(document_id)
        if doc is None:
            return ()
        if kind == "footnote":
            return tuple(doc.entries[i].id for i in doc.footnotes.get(number, ()))
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
        main, paras = split_number(number)
        return tuple(self._rule(doc, schedule, main, paras, under=True))
