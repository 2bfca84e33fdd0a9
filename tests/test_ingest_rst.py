"""The reStructuredText reader (``.rst``, docutils): sections become heading paths, paragraphs passages, a list
joins the paragraph before it; on a tiny file the test writes."""

from __future__ import annotations

import json

from rirag.data.ingest.corpus import ingest, passage_uuid

RST = """\
Capital Rules
=============

Scope
-----

1.1 A firm must hold
capital at all times.

It must report:

- monthly, and
- to the PRA.

Reporting
---------

2.1 A firm must keep *records* for five years.

.. a comment is not a passage

.. include:: /etc/passwd
"""


def test_rst_sections_and_paragraphs_become_passages(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "capital.rst").write_text(RST, "utf-8")
    report = ingest(src, tmp_path / "out")
    records = json.loads((tmp_path / "out" / "documents" / "1.json").read_text("utf-8"))
    got = [(r["PassageID"], r["Passage"], r["Headings"]) for r in records]
    assert got == [("1.1", "1.1 A firm must hold capital at all times.", ["Capital Rules", "Scope"]),
                   ("Scope", "It must report:\nmonthly, and\nto the PRA.", ["Capital Rules", "Scope"]),
                   ("2.1", "2.1 A firm must keep records for five years.", ["Capital Rules", "Reporting"])]
    assert [r["ID"] for r in records] == [passage_uuid("capital", label) for label, _, _ in got]
    assert json.loads((tmp_path / "out" / "document_map.json").read_text("utf-8")) == {
        "1": ["capital.rst", "Capital Rules"]}
    assert "skipped" not in report and "root:" not in " ".join(t for _, t, _ in got)  # include:: read nothing
