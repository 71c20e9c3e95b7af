"""Text that goes into a model's instructions, made plain before it is stored.

A remembered line ends up between the markers of the instructions' remembered section
(``<<<REMEMBERED`` … ``REMEMBERED>>>``). Look-alikes could pose as a marker to a model that
reads past them: fullwidth ``＞``, a zero-width joiner or a bidi override inside the word.
:func:`one_line` folds compatibility characters to their plain form (Unicode NFKC: ``＞``
becomes ``>``, which the orchestrator then neutralises like any other), removes invisible
format and control characters (zero-width spaces and joiners, bidi embeddings, overrides
and isolates, the BOM) and collapses whitespace, newlines included, to single spaces.

The chat's lines use the same parts: :func:`shown_line` (a server's words after a label the
server cannot choose) and :func:`readable` (a registry or client name for a person).
"""

from __future__ import annotations

import unicodedata

_INVISIBLE = frozenset({"Cf", "Cc", "Cs"})  # format, control, lone surrogate


def one_line(text: str) -> str:
    """``text`` as one plain line: no invisible characters, NFKC, single spaces."""
    return " ".join(unicodedata.normalize("NFKC", _visible(text)).split())


def shown_line(text: str) -> str:
    """``text`` as one line, as written: no invisible characters, whitespace (newlines too)
    collapsed to single spaces, but no folding. For a line a person reads after a label
    (a proposal's summary after the server's name): it cannot begin a line of its own, nor
    reorder what comes before it with a bidi override."""
    return " ".join(_visible(text).split())


def readable(name: str) -> str:
    """A registry or client name as a person reads it: ``weather`` → "Weather",
    ``claude-desktop`` → "Claude Desktop", ``remote_notes`` → "Remote Notes"."""
    words = name.replace("_", "-").split("-")
    return " ".join(word[:1].upper() + word[1:] for word in words if word)


def _visible(text: str) -> str:
    # Removed before folding: a joiner between two characters must not keep them apart.
    return "".join(
        char for char in text if char.isspace() or unicodedata.category(char) not in _INVISIBLE
    )
