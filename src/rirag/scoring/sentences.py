"""RePASs' sentence splitter, kept importable here: the module is :mod:`rirag.sentences` (below the scoring and
generation layers, which both split text). This name is an alias of that module, so attributes set on either (as
tests do) are seen by both."""

import sys

from rirag import sentences

sys.modules[__name__] = sentences
