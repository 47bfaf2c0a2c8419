"""The findings engine: one test per claim (the audit's), one joint step-down per finding, the verdict rules, and
error rates measured on SIMULATED findings (nulls, the ROPE's edges, planted effects) at the sizes DG uses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.audit import claims as audit_claims
from dganalysis.findings import engine as E
from dganalysis.findings import power as P
from dganalysis.validation import ConfigError

ALPHA = 0.05


def _two_claims(rng: np.random.Generator, n: int, effect: float, sd_ratio: float = 4.0, shared: bool = False,
                rope: float = 1.0) -> list[E.Claim]:
    """Two claims 'arm above base' whose arms have unequal SDs (1 and ``sd_ratio``), unpaired unless ``shared``."""
    out = []
    for k in range(2):
        ids_a = np.arange(n)
        ids_b = np.arange(n) if shared else np.arange(100, 100 + n)
        a = pd.Series(effect + rng.normal(0, 1.0, n), index=ids_a)
        b = pd.Series(rng.normal(0, sd_ratio, n), index=ids_b)
        out.append(E.Claim(f"c{k}", a, b, +1, rope=rope))
    return out


def _rates(effect: float, n: int = 3, reps: int = 600, seed: int = 1, **kw) -> P.PowerResult:
    return P.verdict_rates(E.decide_finding, lambda rng, m: _two_claims(rng, m, effect, **kw), n, reps=reps, seed=seed)


def _bound(reps: int) -> float:
    return ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)


@pytest.mark.parametrize("sd_ratio", [1.0, 4.0, 10.0])  # variances equal, 16× and 100× apart
def test_no_false_reproduced_under_the_null_at_n3_with_unequal_variances(sd_ratio):
    """Effect 0 and the opposite effect at the ROPE's edge: 'reproduced' (both claims decided above) ≤ α."""
    for effect in (0.0, -1.0):
        r = _rates(effect, sd_ratio=sd_ratio)
        assert r.rate("reproduced") <= _bound(r.reps), (effect, r.rates)
        assert r.rate("partly") <= _bound(r.reps), (effect, r.rates)  # a claim decided the paper's way is false too


def test_no_false_not_reproduced_at_the_rope_edge_in_the_papers_direction():
    """At Δ = +rope (the paper's effect, at the edge of practical equivalence) neither claim may be called
    equivalent or decided the other way more than α of the time."""
    r = _rates(1.0, n=5, reps=600, shared=True, sd_ratio=1.0)
    assert r.rate("not reproduced") <= _bound(r.reps), r.rates


def test_planted_effect_is_found_and_power_grows_with_n():
    small = _rates(3.0, n=4, reps=300, shared=True, sd_ratio=1.0)
    big = _rates(3.0, n=10, reps=300, shared=True, sd_ratio=1.0)
    assert big.power > small.power
    assert big.power > 0.9


def test_claim_p_values_are_the_audits():
    """A mean claim's unadjusted p and equivalence p equal the audit's `claims.decide` on the same summaries."""
    rng = np.random.default_rng(3)
    a, b = pd.Series(rng.normal(2, 1, 4)), pd.Series(rng.normal(0, 3, 5), index=range(10, 15))
    res = E.decide_finding([E.Claim("x", a, b, +1, rope=1.5)])
    c = res.claims[0]
    d = audit_claims.decide(audit_claims.Summaries(np.array([a.mean()]), np.array([a.std(ddof=1) / 2]), 4),
                            audit_claims.Summaries(np.array([b.mean()]), np.array([b.std(ddof=1) / 5 ** 0.5]), 5),
                            rope=1.5)
    assert c.p == pytest.approx(float(d.p[0])) and c.p_equiv == pytest.approx(float(d.p_equiv[0]))
    assert c.test == audit_claims.TEST
    # paired: the exact t on the differences
    x = pd.Series(rng.normal(1, 1, 6))
    y = x - rng.normal(0.8, 0.5, 6)
    c2 = E.decide_finding([E.Claim("p", x, y, +1)]).claims[0]
    assert c2.p == pytest.approx(stats.ttest_rel(x, y).pvalue)
    assert c2.n_paired == 6 and c2.test.startswith("paired")


def test_pairing_on_partly_shared_seeds_counts_the_dropped():
    a = pd.Series([1.0, 2.0, 3.0, 4.0], index=[0, 1, 2, 3])
    b = pd.Series([0.5, 1.1, 2.9, 9.0], index=[1, 2, 3, 7])
    c = E.decide_finding([E.Claim("c", a, b)]).claims[0]
    assert c.n_paired == 3 and c.dropped == 2
    assert c.estimate == pytest.approx(np.mean([2 - 0.5, 3 - 1.1, 4 - 2.9]))
    assert "paired" in E.decide_finding([E.Claim("c", a, b)]).ours()
    one = E.decide_finding([E.Claim("c", a, pd.Series([0.5, 1.0, 2.0], index=[3, 8, 9]))]).claims[0]
    assert one.n_paired == 0 and one.test == audit_claims.TEST  # one shared seed: unpaired (use_pairs)


def test_zero_variance_never_decides():
    same = pd.Series([70.0, 70.0, 70.0])
    res = E.decide_finding([E.Claim("z", same, pd.Series([60.0, 60.0, 60.0]))])
    assert res.verdict == "not decided" and res.claims[0].outcome == "undecided"
    assert "zero variance" in res.why and np.isnan(res.claims[0].p)
    one_side = E.decide_finding([E.Claim("z", same, pd.Series([60.0, 61.0, 59.0], index=[5, 6, 7]))])
    assert "zero variance" in one_side.why and one_side.m == 0
    few = E.decide_finding([E.Claim("f", pd.Series([1.0]), pd.Series([0.0, 0.1], index=[4, 5]))])
    assert few.verdict == "not decided" and "at least 2" in few.why


def test_outcomes_and_the_verdict_rule():
    rng = np.random.default_rng(0)
    up = pd.Series(10 + rng.normal(0, 0.1, 8))
    zero = pd.Series(rng.normal(0, 0.1, 8))
    noisy = pd.Series(rng.normal(0, 5, 3))
    r = E.decide_finding([E.Claim("up", up, None, +1), E.Claim("down", -up, None, -1)])
    assert r.verdict == "reproduced" and r.counts["paper"] == 2 and r.why == ""
    r = E.decide_finding([E.Claim("up", up, None, +1), E.Claim("noisy", noisy, None, +1)])
    assert r.verdict == "partly" and "noisy" in r.why
    r = E.decide_finding([E.Claim("up", up, None, -1)])
    assert r.verdict == "not reproduced" and "against" in r.why
    r = E.decide_finding([E.Claim("flat", zero, None, +1, rope=1.0)])  # equivalent within the ROPE: against the paper
    assert r.verdict == "not reproduced" and "equivalent" in r.why
    r = E.decide_finding([E.Claim("flat", zero, None, 0, rope=1.0)])  # the paper says no difference: equivalence is its way
    assert r.verdict == "reproduced"
    assert E.decide_finding([E.Measurement("rho", 0.79)]).verdict == "measured"
    assert E.verdict_from_outcomes(["undecided", "undecided"]) == "not decided"


def test_family_is_the_findings_claims():
    """A claim decided alone can be undecided in a family of several (the joint step-down divides α)."""
    x = pd.Series([0.4, 1.6, 1.0, 0.8])  # one-sample p ≈ 0.032
    alone = E.decide_finding([E.Claim("x", x)])
    assert alone.verdict == "reproduced"
    rng = np.random.default_rng(1)
    others = [E.Claim(f"o{k}", pd.Series(rng.normal(0, 1, 4))) for k in range(5)]
    together = E.decide_finding([E.Claim("x", x), *others])
    assert together.m == 6 and together.claims[0].outcome == "undecided"
    assert "family of 6" in together.why
    counts = E.pooled([alone, E.decide_finding(others)])
    assert counts["reproduced"] == 0 and counts["not decided"] == 2


def test_rank_claim_exact_permutation_p():
    x, y = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]
    res = E.decide_finding([E.RankClaim("agree", x, y)]).claims[0]
    rho = stats.spearmanr(x, y).statistic
    import itertools

    null = [stats.spearmanr(p, y).statistic for p in itertools.permutations(x)]
    exact = np.mean(np.abs(null) >= abs(rho) - 1e-12)
    assert res.p == pytest.approx(exact) and "exact" in res.test
    assert res.estimate == pytest.approx(rho)


def test_permutation_claim_exact_and_sampled():
    vals = np.array([3.0, 2.5, 4.0, 3.5, 2.0])
    signs = np.array(list(__import__("itertools").product([-1, 1], repeat=5)))

    claim = E.PermutationClaim("mean>0", vals, statistic=lambda v: float(np.mean(v)),
                               permute=lambda v, rng: v * rng.choice([-1, 1], len(v)), count=32,
                               enumerate=lambda v: [v * s for s in signs])
    res = E.decide_finding([claim]).claims[0]
    assert res.p == pytest.approx(2 / 32) and "exact" in res.test
    sampled = E.decide_finding([E.PermutationClaim("mean>0", vals, statistic=lambda v: float(np.mean(v)),
                                           permute=lambda v, rng: v * rng.choice([-1, 1], len(v)))]).claims[0]
    assert abs(sampled.p - 2 / 32) < 0.02 and "Monte Carlo" in sampled.test


def test_bad_claims_are_refused_before_any_work():
    with pytest.raises(ConfigError, match="direction"):
        E.decide_finding([E.Claim("d", pd.Series([1.0, 2.0]), direction=2)])
    with pytest.raises(ConfigError, match="duplicate names"):
        E.decide_finding([E.Claim("d", pd.Series([1.0, 2.0])), E.Claim("d", pd.Series([1.0, 2.0]))])
    with pytest.raises(ConfigError, match="duplicate unit ids"):
        E.decide_finding([E.Claim("d", pd.Series([1.0, 2.0], index=[0, 0]))])
    with pytest.raises(ConfigError, match="alpha"):
        E.decide_finding([], alpha=1.5)


def test_trials_for_power_finds_the_smallest_n():
    """On a decision whose power is known in closed form (one paired claim, effect 1.2 SD, no ROPE), the search
    returns an n whose power reaches 0.8 while n − 1's does not (within Monte-Carlo error)."""
    def sim(rng, n):
        return [E.Claim("c", pd.Series(rng.normal(1.2, 1.0, n)))]

    res = P.simulated_trials_for_power(E.decide_finding, sim, 0.8, reps=300, seed=2)
    from statsmodels.stats.power import TTestPower

    exact = TTestPower().power(effect_size=1.2, nobs=res.n, alpha=ALPHA)
    below = TTestPower().power(effect_size=1.2, nobs=res.n - 1, alpha=ALPHA)
    assert abs(res.power - exact) < 3 * res.mc_se + 0.01
    assert below < 0.8 + 3 * res.mc_se
    assert P.simulated_trials_for_power(E.decide_finding, lambda rng, n: [E.Claim("c", pd.Series(rng.normal(0, 1, n)))], 0.8,
                              n_max=8, reps=50) is None


def test_design_power_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("DGANALYSIS_CACHE", str(tmp_path))
    calls = []

    def sim(rng, n):
        calls.append(n)
        return [E.Claim("c", pd.Series(rng.normal(3.0, 1.0, n)))]

    first = P.design_power(E.decide_finding, sim, 4, reps=20, cache_key="test-finding|effect=3")
    k = len(calls)
    second = P.design_power(E.decide_finding, sim, 4, reps=20, cache_key="test-finding|effect=3")
    assert second == first and len(calls) == k  # the second answer came from the cache
    assert (tmp_path / P.DESIGN_POWER_FILE).exists()


def test_existential_reversal_rule_is_kept_by_pooled_and_records():
    """A finding read by SOME_GROUP_REVERSES (one pair of methods under two training choices): a decided + and a
    decided − in one group is 'reproduced'; the rule survives the record and the notebook-wide family."""
    up, down = pd.Series([5.0, 5.2, 4.9, 5.1, 5.05]), pd.Series([-5.0, -5.2, -4.9, -5.1, -5.05])
    claims = [E.Claim("a−b | c1", up), E.Claim("a−b | c2", down)]
    res = E.decide_finding(claims, rule=E.SOME_GROUP_REVERSES, groups=[["a−b | c1", "a−b | c2"]])
    assert res.verdict == "reproduced"
    assert E.decide_finding(claims).verdict == "not reproduced"  # the conjunction would read c2 as against
    back = E.FindingResult.from_record(res.as_record())
    assert back.verdict == "reproduced" and back.rule == E.SOME_GROUP_REVERSES
    assert E.pooled([res])["reproduced"] == 1
    same = E.decide_finding([E.Claim("a−b | c1", up), E.Claim("a−b | c2", up)], rule=E.SOME_GROUP_REVERSES,
                    groups=[["a−b | c1", "a−b | c2"]])
    assert same.verdict == "not reproduced"  # decided, one sign throughout
    with pytest.raises(ConfigError, match="groups"):
        E.decide_finding(claims, rule=E.SOME_GROUP_REVERSES, groups=[["nope"]])
