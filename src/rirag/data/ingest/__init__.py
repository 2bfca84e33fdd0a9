"""Corpus ingestion (``rirag data ingest``): a regulator's rulebook (saved HTML pages, PDF or Word files, JSONL/CSV
passages, or text/Markdown/reST files) into a corpus folder in the ObliQA layout, which
:func:`rirag.data.obliqa.load_obliqa` reads like ObliQA itself.

Written to ``--out`` (atomically: a failure leaves it untouched)::

    documents/1.json ... documents/N.json   lists of {ID, DocumentID, PassageID, Passage, Rule, Headings, Source}
    document_map.json                       DocumentID -> [source file, title]
    ingest_report.json                      documents, passages, dropped passages by reason, length distribution

Each passage keeps its document, its rule or paragraph number (``PassageID``; ``Rule`` is the number as the source
prints it, empty when it has none), its heading path (``Headings``) and its text, one line per paragraph, list item
and table row (a row carries its table's header: ``Header: cell; Header: cell``).

Ids are stable: ``ID`` is a UUID5 of the document key and the ``PassageID`` (never of run order or of the folder the
input lies in), documents are numbered in the order of their keys, and the same input gives byte-identical output.

Ingest streams: a source is read and decoded chunk by chunk, each reader yields passages as it reads them, they
wait on disk (a spool in the temporary corpus folder) until their document's turn, and each document's file is
written record by record; what is held is a digest a passage (to find duplicates across the corpus), never the
text (``benchmarks/ingest_memory.py`` measures it).

The package, one module a part:

- :mod:`~rirag.data.ingest.readers`: the one table of source formats, file suffix -> reader;
- one reader module a format: :mod:`~rirag.data.ingest.html_page` (``.html``, ``.htm``; the text of an element in
  :mod:`~rirag.data.ingest.html_text`, the walk as a page is parsed in :mod:`~rirag.data.ingest.html_walk`),
  :mod:`~rirag.data.ingest.pdf_file` (``.pdf``; PDFium), :mod:`~rirag.data.ingest.docx_file` (``.docx``;
  python-docx), :mod:`~rirag.data.ingest.text_file` (``.txt``, ``.md``, ``.markdown``),
  :mod:`~rirag.data.ingest.records` (``.jsonl``, ``.csv``), :mod:`~rirag.data.ingest.rst_file` (``.rst``; docutils
  reads a file whole);
- :mod:`~rirag.data.ingest.blocks`: the passages of a PDF's or Word file's blocks (headings, paragraphs, list items,
  table rows, footnotes), as the HTML reader makes them;
- :mod:`~rirag.data.ingest.raw`: the documents and passages every reader yields, and the decoding of a file as it
  is read (:class:`~rirag.data.ingest.raw.SourceText`);
- :mod:`~rirag.data.ingest.labels`: each passage's PassageID, long passages cut into parts;
- :mod:`~rirag.data.ingest.corpus`: the corpus assembled, reported and written
  (:func:`~rirag.data.ingest.corpus.ingest`).
"""
