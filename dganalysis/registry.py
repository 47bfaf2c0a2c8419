"""A tiny name → object registry filled by decorators (as timm does), with tags for families.

A tag names a family an entry belongs to (e.g. an algorithm's ``"wc"`` worst-case variants or ``"grl"``
gradient-reversal ones), so code asks the registry (``names(tag="wc")``) instead of parsing names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from dganalysis.validation import UnknownKeyError

T = TypeVar("T")


def suggest(name: object, known: Iterable[str]) -> list[str]:
    """The known names closest to ``name`` (difflib's ratio ≥ 0.6, case ignored; at most three, best first)."""
    known = list(known)
    if not isinstance(name, str) or not known:
        return []
    lower = {k.lower(): k for k in known}
    exact = [lower[name.lower()]] if name.lower() in lower else []
    close = difflib.get_close_matches(name.lower(), list(lower), n=3, cutoff=0.6)
    return list(dict.fromkeys(exact + [lower[c] for c in close]))


def unknown_name(kind: str, name: object, known: Iterable[str]) -> str:
    """``unknown algorithm 'CORALL' (did you mean 'CORAL'?); known: ...``: the one wording of an unknown name,
    for algorithms, datasets, selection methods and every other registry."""
    known = sorted(known)
    close = suggest(name, known)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return f"unknown {kind} {name!r}{hint}; known: {', '.join(known) or '(none)'}"


class Registry(Generic[T]):
    """Maps names to objects (and each name to its tags); unknown names fail with the list of known ones (an
    :class:`~dganalysis.validation.UnknownKeyError`: a ``KeyError`` and a ``ConfigError``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._tags: dict[str, frozenset[str]] = {}

    def register(self, name: str, tags: Iterable[str] = ()) -> Callable[[T], T]:
        """Decorator registering its object as ``name`` with the family ``tags``."""
        if isinstance(tags, str):
            raise ValueError(f"{self.kind} {name!r}: tags must be a collection of strings, got the string {tags!r}")
        tag_set = frozenset(tags)

        def deco(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            self._tags[name] = tag_set
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise UnknownKeyError(unknown_name(self.kind, name, self._items)) from None

    def names(self, tag: str | None = None) -> list[str]:
        """Registered names, sorted; with ``tag``, only those carrying it."""
        return sorted(n for n in self._items if tag is None or tag in self._tags[n])

    def tags(self, name: str) -> frozenset[str]:
        """The tags ``name`` was registered with."""
        self.get(name)
        return self._tags[name]

    def all_tags(self) -> list[str]:
        """Every tag some entry carries, sorted."""
        return sorted(set().union(*self._tags.values())) if self._tags else []

    def __contains__(self, name: object) -> bool:
        return name in self._items
