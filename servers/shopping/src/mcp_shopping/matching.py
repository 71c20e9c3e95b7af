"""Fuzzy item names: what "the Kirkland water" or "kirkand watr" means among known items.

A name and a query are compared word by word (lowercase, accents dropped, stop words
such as "the", "my", "some" left out). A query word scores 1 against the same word,
0.9 against a word it begins ("kirk" → "Kirkland"), and up to 0.85 against a word
difflib finds close (a typo); 0 otherwise. The score of a name is mostly how well
the query's words are covered (0.85) and a little how much of the name they cover
(0.15), so "water" prefers "Sparkling Water" to "Kirkland Signature Purified Water
40pk" only slightly, and both are offered. Names written as one word ("peanutbutter")
are caught by comparing the words run together.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from difflib import SequenceMatcher
from typing import TypeVar

T = TypeVar("T")

STOP_WORDS = frozenset(
    {"a", "an", "the", "my", "our", "your", "some", "any", "of", "for", "please", "usual"}
    | {"again", "another", "s"}
)
MIN_SCORE = 0.5  # below this a name is not offered at all
CLEAR_SCORE = 0.6  # a single pick must score at least this...
CLEAR_LEAD = 0.15  # ...and lead the next best by this much
_WORD = re.compile(r"[^\W_]+")
_PREFIX = 0.9
_TYPO_WEIGHT = 0.85
_TYPO_RATIO = 0.8
_RUN_TOGETHER_RATIO = 0.9
_QUERY_SHARE = 0.85


def words(text: str) -> list[str]:
    """Lowercase words without accents or stop words (all words if only stop words)."""
    plain = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(char for char in plain if not unicodedata.combining(char))
    found = _WORD.findall(plain)
    kept = [word for word in found if word not in STOP_WORDS]
    return kept or found


def key(name: str) -> str:
    """A name with case and spacing evened out: equal keys, same item."""
    return " ".join(name.casefold().split())


def score(query: Sequence[str], name: Sequence[str]) -> float:
    """How well a name's words match the query's words, 0 to 1."""
    if not query or not name:
        return 0.0
    pairs = [[_pair(q, n) for n in name] for q in query]
    query_covered = sum(max(row) for row in pairs) / len(query)
    name_covered = sum(max(row[i] for row in pairs) for i in range(len(name))) / len(name)
    by_word = _QUERY_SHARE * query_covered + (1 - _QUERY_SHARE) * name_covered
    run_together = SequenceMatcher(None, "".join(query), "".join(name)).ratio()
    return max(by_word, run_together if run_together >= _RUN_TOGETHER_RATIO else 0.0)


def rank(query: str, candidates: Iterable[T], name: Callable[[T], str]) -> list[tuple[T, float]]:
    """Candidates scoring at least MIN_SCORE, best first (stable for equal scores)."""
    wanted = words(query)
    scored = [(candidate, score(wanted, words(name(candidate)))) for candidate in candidates]
    kept = [(candidate, round(value, 2)) for candidate, value in scored if value >= MIN_SCORE]
    return sorted(kept, key=lambda pair: -pair[1])


def pick(query: str, ranked: Sequence[tuple[T, float]], name: Callable[[T], str]) -> T | None:
    """The one candidate the query clearly means, or None (none, or several alike).

    An exact name (ignoring case) wins outright; otherwise the best must score well
    and lead the runner-up clearly.
    """
    exact = [candidate for candidate, _ in ranked if key(name(candidate)) == key(query)]
    if len(exact) == 1:
        return exact[0]
    if exact or not ranked:
        return None
    best, best_score = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if best_score >= CLEAR_SCORE and best_score - runner_up >= CLEAR_LEAD:
        return best
    return None


def _pair(query_word: str, name_word: str) -> float:
    if query_word == name_word:
        return 1.0
    if len(query_word) >= 2 and name_word.startswith(query_word):
        return _PREFIX
    ratio = SequenceMatcher(None, query_word, name_word).ratio()
    return _TYPO_WEIGHT * ratio if ratio >= _TYPO_RATIO else 0.0
