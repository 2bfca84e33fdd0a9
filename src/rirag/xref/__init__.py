"""Cross-references between the passages of a corpus: found in the text, resolved to passage ids, written as the
corpus's ``xref`` graph and read back.

=============  =====================================================================================================
module         what
=============  =====================================================================================================
records        the records: :class:`~rirag.xref.records.Passage` (what the resolver reads) and
               :class:`~rirag.xref.records.Reference` (what it finds)
numbers        rule and paragraph numbers parsed (:func:`~rirag.xref.numbers.parse_number`), names and aliases
index          the corpus index: documents, names, numbers and the lookups that resolve a parsed reference
resolver       :class:`~rirag.xref.resolver.Resolver`: the references of a passage, found and resolved
passages       a corpus folder read as the resolver's passages and aliases (:func:`~rirag.xref.passages.xref_passages`)
graph          the graph written (``rirag data xref``) and read back by passage
               (:class:`~rirag.xref.graph.ReferenceGraph`)
expansion      a retriever's run expanded by the graph (:class:`~rirag.xref.expansion.XrefExpansion`)
=============  =====================================================================================================

The package sits between ``text`` / ``data`` (it reads corpus folders through :mod:`rirag.data.obliqa`) and
``retrieval`` / ``generation``, which use the graph; ``text`` does not import it.
"""
