"""The vocabulary of a verdict on a paper's claim, and when a run is too small to decide one.

Protocols (:mod:`dganalysis.protocols`, :mod:`dganalysis.shift`, :mod:`dganalysis.dro`) make verdicts; the studies
record and list them (:mod:`dganalysis.studies.findings`).

Verdicts are a :class:`Verdict` (a ``str`` enum: ``"reproduced"``, ``"partly"``, ``"not reproduced"``, ``"not
decided"``), optionally followed by a reason in parentheses, e.g. ``"not decided (too small: n = 4 models …)"``.
Two rules say when a run is too small to decide, applied where verdicts are made:

- **too few units for the test** — :func:`~dganalysis.stats.rank_tests.spearman_test` returns the exact
  permutation p-value for small n and :func:`spearman_too_small` says when no outcome can reach p < α: a two-sided
  Spearman test over n items has smallest p = 2/n! (both perfect orders), 1/12 ≈ 0.083 at n = 4, so it needs
  n ≥ 5 for α = 0.05. p-values are printed with :func:`format_p`, never as ``p=0``.
- **too short a run to refute** — :func:`verdict_to_record` (called by :func:`record_finding` / :func:`replace_findings` with
  the run's ``steps``) turns "not reproduced" and "partly" from a run shorter than :data:`PAPER_STEPS` (DomainBed's
  5,000 steps, Gulrajani & Lopez-Paz 2021, the training length of the claims tested here) into
  ``"not decided (too small: steps = 10 < 5,000 …)"``; a positive verdict stands (a short run that shows the
  effect shows it).
"""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """The verdict on one paper's claim (a ``str``: compares and serialises as its value)."""

    REPRODUCED = "reproduced"
    PARTLY = "partly"
    NOT_REPRODUCED = "not reproduced"
    NOT_DECIDED = "not decided"
    MEASURED = "measured"  #: a finding that holds only measurements (no test): listed, never counted as reproduced

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @classmethod
    def parse(cls, text: object) -> tuple[Verdict, str]:
        """``(verdict, reason)`` of ``"<verdict>"`` or ``"<verdict> (<reason>)"``; ValueError for anything else."""
        s = str(text.value if isinstance(text, Verdict) else text)
        for v in sorted(cls, key=lambda v: -len(v.value)):  # "not reproduced" before "reproduced"
            if s == v.value:
                return v, ""
            if s.startswith(v.value + " (") and s.endswith(")"):
                return v, s[len(v.value) + 2:-1]
        raise ValueError(f"verdict={text!r}: expected one of {VERDICTS}, optionally followed by ' (reason)'")


VERDICTS = tuple(v.value for v in Verdict)
#: DomainBed's default training length (Gulrajani & Lopez-Paz 2021), the length of the runs behind the claims tested
PAPER_STEPS = 5000


def too_small(reason: str) -> str:
    """``"not decided (too small: <reason>)"``."""
    return f"{Verdict.NOT_DECIDED.value} (too small: {reason})"


def verdict_to_record(verdict: str | Verdict, *, steps: int | None = None, min_steps: int = PAPER_STEPS) -> str:
    """The verdict to record: a negative one ("not reproduced", "partly") from a run of fewer than ``min_steps``
    training steps becomes ``not decided (too small: steps = …)``; anything else is returned unchanged."""
    v, _ = Verdict.parse(verdict)
    if steps is not None and steps < min_steps and v in (Verdict.NOT_REPRODUCED, Verdict.PARTLY):
        return too_small(f"steps = {steps:,} < {min_steps:,}, the papers' training length; a shorter run cannot "
                         f"refute the claim; it read {v.value!r}")
    return str(verdict.value if isinstance(verdict, Verdict) else verdict)


def spearman_too_small(n: int, alpha: float = 0.05, what: str = "models") -> str | None:
    """``not decided (too small: n = …)`` when no ranking of ``n`` items can reach p < ``alpha``, else None (the
    smallest p-value is :func:`~dganalysis.stats.rank_tests.spearman_min_p`'s)."""
    from dganalysis.stats.rank_tests import spearman_min_p  # deferred: reading findings needs no numpy/scipy

    if spearman_min_p(n) < alpha:
        return None
    need = next(k for k in range(2, 20) if spearman_min_p(k) < alpha)
    return too_small(f"n = {n} {what}; a two-sided Spearman test needs n ≥ {need} to reach p < {alpha:g} "
                     f"(smallest exact p with n = {n}: 2/{n}! = {spearman_min_p(n):.3g})")


def format_p(p: float, digits: int = 2) -> str:
    """``p=0.083``; never ``p=0``: below 1e-4 it reads ``p<0.0001``; NaN reads ``p=n/a``."""
    if p is None or p != p:
        return "p=n/a"
    if p < 1e-4:
        return "p<0.0001"
    return f"p={p:.{digits}g}"
