"""Cross-references: rule and paragraph numbers parsed, document names normalised, and the aliases documents go
by."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

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


def _without_heading(s: str) -> str:
    """An ingested label qualified by its heading, as the number alone: "3D24 Specific Exposures 2." is 3D24.2,
    "3 Organisational Structure 3.2" is 3.2, "Interim compensation payments 20." is 20; any other label as it is."""
    qualified = re.match(r"(.*[A-Za-z]{3,}.*?)\s+(\d[\w.()]*)$", s)
    if not qualified or re.search(r"(?i)guidance", s) or re.match(
            r"(?i)(?:article|part|chapter|schedule|app|appendix|annex|section|rule|regulation)\b", s):
        return s
    head = re.match(r"(\d+[A-Z]+\d+[A-Z]?)\s", s)
    tail = qualified.group(2)
    return f"{head.group(1)}.{tail}" if head and "." not in tail.rstrip(".") else tail


def parse_number(number: str) -> Number:
    """Read a passage number into containers, main number, paragraph path and guidance flag."""
    s = number.translate(_INVISIBLE).strip()
    if s[:8].lower() == "footnote" and not (s[8:9].isalnum() or s[8:9] == "_"):  # the word "footnote" opens it
        return Number((("footnote", s[8:].strip()),), "", (), False)  # an ingested footnote: not a provision
    # "Article 72 #2": a repeated label; "Article 279b 1. (part 2)": a long paragraph cut in parts
    s = re.sub(r"\s*(?:#\d+|\(part \d+\))$", "", s)
    return _read_tokens(_without_heading(s))


def _read_tokens(s: str) -> Number:
    """A clean passage label read token by token (:func:`parse_number`)."""
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


def split_number(number: str) -> tuple[str, tuple[str, ...]]:
    """"9.5.2(1)(a)" -> ("9.5.2", ("1", "a"))."""
    clean = re.sub(r"\s+", "", number.translate(_INVISIBLE))
    main = re.match(r"[^()]*", clean).group(0).rstrip(".")
    return main, tuple(re.findall(r"\(([^)]+)\)", clean))


def norm_name(name: str) -> str:
    if not name.isascii():  # the invisible characters and dashes mapped are all outside ASCII
        name = name.translate(_INVISIBLE).translate(_DASHES)
    return " ".join(name.split()).casefold()


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


#: Words that make the name after "of" another instrument, not a document of this corpus.
EXTERNAL_NAME = re.compile(
    r"\b(?:Act|Acts|Law|Laws|Decree|Directive|Delegated|Order|Handbook|Convention|Treaty|Statute|MiFID|MiFIR|"
    r"CRR|CRD|EMIR|Solvency II|Companies Regulations|Insolvency Regulations|Federal|Cabinet|Basel|IFRS|IAS|"
    r"FATF|Recommendations?|Code|Regulations?)\b"
)
def title_aliases(title: str) -> set[str]:
    """Names a document goes by, read from its title: the title, the title without brackets, a bracketed code
    ("General Rulebook (GEN)" -> "GEN")."""
    out: set[str] = set()
    t = " ".join(title.translate(_INVISIBLE).split())
    if not t:
        return out
    out.add(t)
    for m in re.finditer(r"\(([A-Z][A-Z0-9]{1,7})\)", t):
        if not EXTERNAL_NAME.fullmatch(m.group(1)):  # "Own Funds (CRR)": a Part of the CRR, not "the CRR"
            out.add(m.group(1))
    bare = re.sub(r"\s*\([^)]*\)\s*", " ", t).strip()
    if bare:
        out.add(bare)
    return out


NOT_CODES = {"USD", "AED", "EUR", "GBP", "US", "UK", "UAE", "ADGM", "PRA", "FSRA", "FCA", "CET", "AT", "NI", "QRT",
              "IR", "SS", "SOP", "TWD", "MA", "BEL", "SCR", "MCR", "LCR", "NSFR", "RWA", "CDD", "KYC", "ESG", "IT"}
WORD_NUMBER = r"(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Eleven|Twelve|[IVX]+)"
KIND_OF_WORD = {"rule": "rule", "rules": "rule", "section": "section", "sections": "section", "article": "article",
                 "articles": "article", "art": "article", "chapter": "chapter", "chapters": "chapter",
                 "part": "part", "parts": "part", "schedule": "schedule", "schedules": "schedule",
                 "appendix": "appendix", "appendices": "appendix", "app": "appendix"}
