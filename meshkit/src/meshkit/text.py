"""Text that goes into a model's instructions, made plain before it is stored.

A remembered line ends up between the markers of the instructions' remembered section
(``<<<REMEMBERED`` … ``REMEMBERED>>>``). Look-alikes could pose as a marker to a model that
reads past them: fullwidth ``＞``, a zero-width joiner or a bidi override inside the word.
:func:`one_line` folds compatibility characters to their plain form (Unicode NFKC: ``＞``
becomes ``>``, which the orchestrator then neutralises like any other), removes invisible
format and control characters (zero-width spaces and joiners, bidi embeddings, overrides
and isolates, the BOM) and collapses whitespace, newlines included, to single spaces.
"""

from __future__ import annotations

import unicodedata

_INVISIBLE = frozenset({"Cf", "Cc", "Cs"})  # format, control, lone surrogate


def one_line(text: str) -> str:
    """``text`` as one plain line: no invisible characters, NFKC, single spaces."""
    # Removed before folding: a joiner between two characters must not keep them apart.
    kept = "".join(
        char for char in text if char.isspace() or unicodedata.category(char) not in _INVISIBLE
    )
    return " ".join(unicodedata.normalize("NFKC", kept).split())
