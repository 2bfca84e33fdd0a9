"""Named rules: a Part that states its rules by name ("Fundamental Rule 8: A firm must prepare for resolution ...",
numbered 2.8; "Senior Manager Conduct Standard 4: You must ...") is cited by that name ("consistent with Fundamental
Rule 8", "Fundamental Rules 2–6 and 8"). What a passage states (:func:`named_rule`, recorded by the corpus index) and
where a reference by name may start (:func:`reference_pattern`, :func:`names_at`); the resolver looks the names up
(:meth:`rirag.xref.resolver.Resolver._named_rules`)."""

from __future__ import annotations

import re
from typing import Iterator

from rirag.xref.numbers import norm_name

#: A passage that states a named rule of its Part: one to four capitalised words ending in "Rule" or "Standard", its
#: number and a colon, at the passage's start.
NAMED_RULE = re.compile(r"\s*(?P<name>(?:[A-Z][\w’'&-]*\s+){1,4}(?:Rule|Standard))\s+(?P<number>\d{1,3}[A-Z]?)\s*:")

_WORD = re.compile(r"[A-Z][\w’'&-]*")


def named_rule(text: str) -> tuple[str, str] | None:
    """(normalised name, number) of the named rule a passage states at its start ("Fundamental Rule 8: ..." ->
    ("fundamental rule", "8")), or None."""
    m = NAMED_RULE.match(text)
    return (norm_name(m.group("name")), m.group("number")) if m else None


def reference_pattern(sp: str, num: str, para: str, sep: str) -> re.Pattern:
    """A reference by name: one to four capitalised words, "Rule(s)" or "Standard(s)", a list of numbers
    ("PRA Fundamental Rules 2–6 and 8"); ``sp``, ``num``, ``para``, ``sep``: the resolver's pattern parts."""
    return re.compile(rf"(?<![\w-])(?P<title>(?:[A-Z][\w’'&-]*{sp}){{1,4}})(?P<kw>Rule|Standard)(?P<plural>s?){sp}"
                      rf"(?P<list>{num}{para}(?:{sep}{num}{para})*)(?![\w.]*\d)")


def names_at(m: re.Match) -> Iterator[tuple[int, str]]:
    """The names a :func:`reference_pattern` match may cite, longest first: (where the name starts, the name
    normalised and singular). "PRA Fundamental Rules 2" -> "pra fundamental rule", "fundamental rule"."""
    text, kw = m.string, m.group("kw")
    for word in _WORD.finditer(m.group("title")):
        start = m.start("title") + word.start()
        yield start, norm_name(f"{text[start:m.start('kw')]}{kw}")
