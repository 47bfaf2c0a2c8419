"""The audit's words (:mod:`dganalysis.audit.words`): built once with the result, they agree with its claims."""

from __future__ import annotations

from dganalysis.audit import words
from dganalysis.audit.run import run_audit


def test_words_count_and_state_every_claim_of_each_family():
    r = run_audit(["shipped:domainbed"], selection="training_domain", sweep_analyses=False)
    (a,) = r.audits
    cl = a.claims
    assert list(a.words.families) == list(dict.fromkeys(zip(cl["board"], cl["selection"])))
    for (board, sel), said in a.words.families.items():
        part = cl[(cl["board"] == board) & (cl["selection"] == sel)]
        assert said.notes["counts"] == words.summary_counts(part)
        assert sum(said.notes["counts"][v] for v in ("better", "worse", "equivalent", "undecided")) == len(part)
        assert len(said.decided) == int((part["verdict"] != "undecided").sum())
        assert all(s.startswith(f"{x} is ") for s, x in zip(said.decided, part.loc[part["verdict"] != "undecided",
                                                                                     "algorithm"]))
        assert said.wilcoxon.startswith("Wilcoxon signed-rank")
    assert r.summary == a.words.summary and r.summary[0].startswith("audit shipped:domainbed")
