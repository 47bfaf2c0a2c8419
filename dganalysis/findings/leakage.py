"""Yu et al. (2024, CVPR), "Rethinking the Evaluation Protocol of Domain Generalization": its leakage findings as
claims decided by the audit's engine (:func:`dganalysis.findings.engine.decide_finding`).

Five findings, one public decision function each, every one taking a frame with **one row per unit** (a trial: its
``trial_seed``; the oracle frames one row per training group and trial) and returning a
:class:`~dganalysis.findings.engine.FindingResult`:

* :func:`lp_ft_leakage` — Sec. 2.1, Tables 1–3: supervised pretraining on test-like data leaks, so linear probing
  (LP, frozen featurizer) beats full fine-tuning (FT) on the test domains (Gap > 0); self-supervised pretraining
  does not: its LP stays below FT (Gap < 0). Two claims, paired over trial seeds.
* :func:`held_out_leaks` — Sec. 2.2, Table 4: the held-out oracle (DomainBed's: chooses on the test domains' ``out``
  split, reports ``in``) scores above training-domain validation (IID) at K = 1. One claim per training group.
* :func:`held_out_leakage_falls` — Table 4: that leakage falls from K = 1 to K = 3 (``drop`` = leak₁ − leak₃ > 0).
* :func:`literal_leakage_small` — Table 4: the literal oracle's K = 1 leakage (chooses on the very accuracy it
  reports: ≥ 0 by construction) is *small*, within Table 4's largest, 1.26 points — an equivalence claim.
* :func:`literal_leakage_falls` — Table 4: the literal oracle's leakage falls from K = 2 to K = 3 (from K = 1 to any
  K > 1 it falls by construction, a maximum over the draws; from 2 to 3 nothing guarantees it).

Each function has a ``simulate_<finding>(rng, n, *, effect, sd, ...)`` returning a SIMULATED frame of the same
columns, ``effect`` signed in the paper's direction (the finding's designs and calibration tests use them).

**ROPEs, in accuracy points** (the quantity's unit; Table 4 reports points to two decimals):

* :data:`ROPE_LP_FT` = 1 point: an LP−FT difference under a point is within DomainBed's trial-to-trial spread
  (Gulrajani & Lopez-Paz 2021, Table 4 ff.: standard errors of 0.1–1 point over 3 trials) and is not what the
  paper reads as LP beating or trailing FT (our choice; Yu et al. state no threshold).
* :data:`ROPE_LEAK` = 0.04 points: Table 4's smallest K = 1 leakage, which the paper counts as leakage; a smaller
  one is practically none.
* :data:`ROPE_SMALL` = 1.26 points: Table 4's largest K = 1 leakage, the paper's "small" (its range 0.04–1.26).
* :data:`ROPE_FALL` = 0.03 points: Table 4's smallest fall of the leakage from K = 1 to K = 3 (0.03–0.54 points);
  the paper reads even that as a fall.

The oracle frames come from :func:`oracle_trials` (per-trial Table 4 rows of
:func:`dganalysis.protocols.oracle_k_trials.leakage_by_trial`), the LP/FT frame from :func:`lp_ft_trials`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dganalysis.findings.engine import ALPHA, Claim, FindingResult, decide_finding
from dganalysis.validation import ConfigError, check_frame, check_scalar, check_str

PAPER = "Yu et al. 2024"
ROPE_LP_FT = 1.0
ROPE_LEAK = 0.04
ROPE_SMALL = 1.26
ROPE_FALL = 0.03
#: Table 4's range of the K = 1 leakage over its four groups (points), quoted beside the literal oracle's claim
TABLE4_LEAK_K1 = (0.04, 1.26)
GROUP = "train_domains"
SEED = "trial_seed"
LP_FT_COLUMNS = (SEED, "supervised_lp", "supervised_ft", "self_supervised_lp", "self_supervised_ft")


# ------------------------------------------------------------------------------------------------- frames
def _check(frame: pd.DataFrame, columns: Sequence[str], func: str, alpha: float, rope: float) -> pd.DataFrame:
    check_frame(frame, tuple(columns), "frame", func=func, what="one row per unit (trial), see the docstring")
    check_scalar(alpha, "alpha", func=func, low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(rope, "rope", func=func, low=0.0)
    if frame.empty:
        raise ConfigError(f"{func}: parameter 'frame' has no rows; expected one row per trial")
    return frame


def _series(g: pd.DataFrame, col: str) -> pd.Series:
    """The column as one value per trial seed (NaN: that trial lacks it, so it is left out of the pairing)."""
    s = pd.Series(g[col].to_numpy(dtype=float), index=pd.Index(g[SEED].to_numpy(), name=SEED), name=col)
    return s[np.isfinite(s.to_numpy())]


def _per_group(frame: pd.DataFrame, arm: str, base: str, name: str, direction: int, rope: float,
               alpha: float) -> FindingResult:
    """One paired claim ``arm − base`` per training group, all in one step-down."""
    claims = [Claim(f"train {g}: {name}", _series(sub, arm), _series(sub, base), direction, rope, units="trials")
              for g, sub in frame.groupby(GROUP, sort=False)]
    return decide_finding(claims, alpha)


# ------------------------------------------------------------------------------------------------- LP vs FT
def lp_ft_leakage(frame: pd.DataFrame, *, alpha: float = ALPHA, rope: float = ROPE_LP_FT) -> FindingResult:
    """Yu et al. 2024, Sec. 2.1, Tables 1–3: supervised pretraining on test-like data leaks, self-supervised does not.

    ``frame``: one row per trial, columns ``trial_seed`` and the trial's test accuracy in points, averaged over its
    test domains (Table 1's "Avg"), of each arm: ``supervised_lp``, ``supervised_ft``, ``self_supervised_lp``,
    ``self_supervised_ft`` (NaN where the trial lacks that run). Two claims in one family:

    * *supervised: LP − FT* > 0 (direction +1): LP beats FT, a positive Gap ``(Acc_LP − Acc_FT)/Acc_FT``;
    * *self-supervised: LP − FT* < 0 (direction −1): LP below FT, a negative Gap (Table 3's self-supervised rows).

    Each is paired over the trial seeds its two arms share (same seed, same splits; ≥ 2 shared), else a calibrated
    Welch test; equivalence within ±``rope`` points (:data:`ROPE_LP_FT`) decides a claim against the paper. With one
    trial per arm nothing is decided (``why`` says a t-test needs 2)."""
    func = "lp_ft_leakage"
    _check(frame, LP_FT_COLUMNS, func, alpha, rope)
    if frame[SEED].duplicated().any():
        raise ConfigError(f"{func}: parameter 'frame' repeats trial seeds "
                          f"{sorted(set(frame.loc[frame[SEED].duplicated(), SEED]))}; expected one row per trial")
    claims = [Claim("supervised: LP − FT", _series(frame, "supervised_lp"), _series(frame, "supervised_ft"), +1, rope),
              Claim("self-supervised: LP − FT", _series(frame, "self_supervised_lp"),
                    _series(frame, "self_supervised_ft"), -1, rope)]
    return decide_finding(claims, alpha)


def simulate_lp_ft_leakage(rng: np.random.Generator, n: int, *, effect: float, sd: float,
                           ssl_effect: float | None = None, ft_mean: float = 60.0, ft_sd: float = 5.0) -> pd.DataFrame:
    """SIMULATED :func:`lp_ft_leakage` frame of ``n`` trials: FT ~ N(``ft_mean``, ``ft_sd``) per trial and arm; the
    supervised LP = FT + N(``effect``, ``sd``) and the self-supervised LP = FT + N(−``ssl_effect``, ``sd``)
    (``ssl_effect`` defaults to ``effect``): ``effect`` > 0 is the paper's direction for both claims."""
    ssl = effect if ssl_effect is None else ssl_effect
    seeds = np.arange(n)
    sup_ft, ssl_ft = rng.normal(ft_mean, ft_sd, n), rng.normal(ft_mean, ft_sd, n)
    return pd.DataFrame({SEED: seeds, "supervised_lp": sup_ft + rng.normal(effect, sd, n), "supervised_ft": sup_ft,
                         "self_supervised_lp": ssl_ft + rng.normal(-ssl, sd, n), "self_supervised_ft": ssl_ft})


def lp_ft_trials(selected: pd.DataFrame, supervised: str, self_supervised: str, scale: float = 100.0) -> pd.DataFrame:
    """The :func:`lp_ft_leakage` frame from :func:`dganalysis.protocols.leakage.select_per_setting`'s output (one
    row per pretraining, mode, trial seed and test domain, ``acc`` in [0, 1]): each trial's accuracy averaged over
    its test domains, × ``scale``, for LP and FT of the two named pretrainings."""
    func = "lp_ft_trials"
    check_frame(selected, ("pretraining", "mode", SEED, "acc"), "selected", func=func,
                what="select_per_setting(...) output")
    check_str(supervised, "supervised", func=func)
    check_str(self_supervised, "self_supervised", func=func)
    have = set(selected["pretraining"])
    missing = [p for p in (supervised, self_supervised) if p not in have]
    if missing:
        raise ConfigError(f"{func}: no runs of pretraining {missing}; the frame has {sorted(have)}")
    d = selected[selected["mode"].isin(["LP", "FT"])]
    avg = d.groupby(["pretraining", "mode", SEED])["acc"].mean().mul(scale).rename("acc").reset_index()
    cols = {}
    for label, prefix in ((supervised, "supervised"), (self_supervised, "self_supervised")):
        for mode in ("LP", "FT"):
            cols[f"{prefix}_{mode.lower()}"] = avg[(avg["pretraining"] == label) & (avg["mode"] == mode)].set_index(SEED)["acc"]
    out = pd.DataFrame(cols)
    out.index.name = SEED
    return out.reset_index()[list(LP_FT_COLUMNS)]


# ------------------------------------------------------------------------------------------------- oracle
def held_out_leaks(frame: pd.DataFrame, *, alpha: float = ALPHA, rope: float = ROPE_LEAK) -> FindingResult:
    """Yu et al. 2024, Table 4: the held-out oracle leaks at K = 1, its accuracy above IID's.

    ``frame``: one row per training group and trial (:func:`oracle_trials` of the held-out oracle), columns
    ``train_domains``, ``trial_seed``, ``iid`` (training-domain validation's accuracy, points, averaged over the
    test domains) and ``oracle_k1`` (the oracle's at K = 1). One claim per training group, *oracle − IID* > 0
    (direction +1), paired over the trial seeds both have; equivalence within ±``rope`` (:data:`ROPE_LEAK`, Table
    4's smallest leakage) decides it against the paper. The groups' claims form the family."""
    _check(frame, (GROUP, SEED, "iid", "oracle_k1"), "held_out_leaks", alpha, rope)
    return _per_group(frame, "oracle_k1", "iid", "oracle − IID at K=1", +1, rope, alpha)


def literal_leakage_small(frame: pd.DataFrame, *, alpha: float = ALPHA, rope: float = ROPE_SMALL) -> FindingResult:
    """Yu et al. 2024, Table 4: the literal oracle's K = 1 leakage is small (0.04–1.26 points over its groups).

    ``frame``: as :func:`held_out_leaks`'s, of the literal oracle (``iid`` and ``oracle_k1`` reported on the whole
    test domains). One claim per training group: *oracle − IID* within ±``rope`` (direction 0, decided by the
    paired TOST; :data:`ROPE_SMALL` = Table 4's largest leakage). A leakage decided outside it — above Table 4 — is
    against the paper. It is ≥ 0 by construction (the oracle maximises what it reports), so only its size is in
    question."""
    _check(frame, (GROUP, SEED, "iid", "oracle_k1"), "literal_leakage_small", alpha, rope)
    return _per_group(frame, "oracle_k1", "iid", "oracle − IID at K=1", 0, rope, alpha)


def held_out_leakage_falls(frame: pd.DataFrame, *, alpha: float = ALPHA, rope: float = ROPE_FALL) -> FindingResult:
    """Yu et al. 2024, Table 4: the held-out oracle's leakage falls from K = 1 to K = 3.

    ``frame``: one row per training group and trial, columns ``train_domains``, ``trial_seed``, ``leak_k1`` and
    ``leak_k3`` (oracle − IID accuracy at K = 1 and K = 3, points). One claim per group, the *drop* leak₁ − leak₃ > 0
    (direction +1: a positive drop is a fall), paired over shared seeds; equivalence within ±``rope``
    (:data:`ROPE_FALL`) decides it against the paper."""
    _check(frame, (GROUP, SEED, "leak_k1", "leak_k3"), "held_out_leakage_falls", alpha, rope)
    return _per_group(frame, "leak_k1", "leak_k3", "drop leak(K=1) − leak(K=3)", +1, rope, alpha)


def literal_leakage_falls(frame: pd.DataFrame, *, alpha: float = ALPHA, rope: float = ROPE_FALL) -> FindingResult:
    """Yu et al. 2024, Table 4: the literal oracle's leakage falls from K = 2 to K = 3 (from K = 1 it falls by
    construction; from 2 to 3 nothing guarantees it).

    ``frame``: one row per training group and trial, columns ``train_domains``, ``trial_seed``, ``leak_k2``,
    ``leak_k3`` (points). One claim per group, the *drop* leak₂ − leak₃ > 0, paired over shared seeds; equivalence
    within ±``rope`` (:data:`ROPE_FALL`) decides it against the paper."""
    _check(frame, (GROUP, SEED, "leak_k2", "leak_k3"), "literal_leakage_falls", alpha, rope)
    return _per_group(frame, "leak_k2", "leak_k3", "drop leak(K=2) − leak(K=3)", +1, rope, alpha)


def _simulate_pair(rng: np.random.Generator, n: int, arm: str, base: str, effect: float, sd: float, groups: int,
                   base_mean: float, base_sd: float) -> pd.DataFrame:
    """``groups`` × ``n`` rows: ``base`` ~ N(``base_mean``, ``base_sd``), ``arm`` = ``base`` + N(``effect``, ``sd``)."""
    g = np.repeat([f"g{i}" for i in range(groups)], n)
    b = rng.normal(base_mean, base_sd, groups * n)
    return pd.DataFrame({GROUP: g, SEED: np.tile(np.arange(n), groups), base: b,
                         arm: b + rng.normal(effect, sd, groups * n)})


def simulate_held_out_leaks(rng: np.random.Generator, n: int, *, effect: float, sd: float, groups: int = 1,
                            iid_mean: float = 70.0, iid_sd: float = 5.0) -> pd.DataFrame:
    """SIMULATED :func:`held_out_leaks` frame: ``n`` trials per group, oracle − IID ~ N(``effect``, ``sd``)."""
    return _simulate_pair(rng, n, "oracle_k1", "iid", effect, sd, groups, iid_mean, iid_sd)


def simulate_literal_leakage_small(rng: np.random.Generator, n: int, *, effect: float, sd: float, groups: int = 1,
                                   iid_mean: float = 70.0, iid_sd: float = 5.0) -> pd.DataFrame:
    """SIMULATED :func:`literal_leakage_small` frame: oracle − IID ~ N(``effect``, ``sd``) (``effect`` is the
    leakage; the paper's claim holds for |effect| < the ROPE)."""
    return _simulate_pair(rng, n, "oracle_k1", "iid", effect, sd, groups, iid_mean, iid_sd)


def simulate_held_out_leakage_falls(rng: np.random.Generator, n: int, *, effect: float, sd: float, groups: int = 1,
                                    leak_mean: float = 2.0, leak_sd: float = 2.0) -> pd.DataFrame:
    """SIMULATED :func:`held_out_leakage_falls` frame: leak₃ ~ N(``leak_mean``, ``leak_sd``), drop ~ N(``effect``,
    ``sd``)."""
    return _simulate_pair(rng, n, "leak_k1", "leak_k3", effect, sd, groups, leak_mean, leak_sd)


def simulate_literal_leakage_falls(rng: np.random.Generator, n: int, *, effect: float, sd: float, groups: int = 1,
                                   leak_mean: float = 2.0, leak_sd: float = 2.0) -> pd.DataFrame:
    """SIMULATED :func:`literal_leakage_falls` frame: leak₃ ~ N(``leak_mean``, ``leak_sd``), drop leak₂ − leak₃ ~
    N(``effect``, ``sd``)."""
    return _simulate_pair(rng, n, "leak_k2", "leak_k3", effect, sd, groups, leak_mean, leak_sd)


#: the five findings' texts, as the summary lists them
FINDING_TEXTS = {
    "lp_ft": "supervised test-like pretraining leaks: LP beats FT; self-supervised: LP below FT (Tables 1–3)",
    "held_out_leaks": "held-out oracle (DomainBed's: selects on the test domains' out split, reports in): oracle − IID "
                      "accuracy > 0 at K=1 (Table 4)",
    "held_out_falls": "held-out oracle: leakage falls from K=1 to K=3 (Table 4)",
    "literal_small": "literal oracle (selects on the very test accuracy it reports): K=1 leakage small, within Table "
                     "4's largest (1.26 pts; ≥ 0 by construction)",
    "literal_falls": "literal oracle: leakage falls from K=2 to K=3 (Table 4; from K=1 it falls by construction)",
}


def finding_rows(lp_frame: pd.DataFrame, held_out: pd.DataFrame, literal: pd.DataFrame, *, lp_data: str = "",
                 held_out_data: str = "", literal_data: str = "", alpha: float = ALPHA) -> list[dict]:
    """The five findings decided (:func:`lp_ft_leakage` on ``lp_frame``; the held-out oracle's two on ``held_out``,
    the literal oracle's two on ``literal``, frames of :func:`oracle_trials`), as rows for
    :func:`dganalysis.studies.findings.replace_findings` (``paper, finding, ours, verdict, decision, data``; ``ours``
    ends with the decision's ``why``)."""
    decided = [("lp_ft", lp_ft_leakage(lp_frame, alpha=alpha), lp_data),
               ("held_out_leaks", held_out_leaks(held_out, alpha=alpha), held_out_data),
               ("held_out_falls", held_out_leakage_falls(held_out, alpha=alpha), held_out_data),
               ("literal_small", literal_leakage_small(literal, alpha=alpha), literal_data),
               ("literal_falls", literal_leakage_falls(literal, alpha=alpha), literal_data)]
    return [dict(paper=PAPER, finding=FINDING_TEXTS[k], ours=d.ours() + (f"; why: {d.why}" if d.why else ""),
                 verdict=d.verdict, decision=d, data=data) for k, d, data in decided]


def oracle_trials(per_trial: pd.DataFrame) -> pd.DataFrame:
    """The oracle findings' frame from :func:`dganalysis.protocols.oracle_k_trials.leakage_by_trial` (rows ``IID``
    with k = 0 and ``K=k``; columns ``Avg`` and ``leakage`` in points): one row per ``train_domains`` and
    ``trial_seed`` with ``iid``, ``oracle_k1`` (the ``Avg`` accuracies) and ``leak_k1``, ``leak_k2``, … (the
    leakage at each K present; NaN where a trial lacks it)."""
    check_frame(per_trial, (GROUP, SEED, "k", "Avg", "leakage"), "per_trial", func="oracle_trials",
                what="leakage_by_trial(...) output")
    keys = [GROUP, SEED]
    acc = per_trial[per_trial["k"].isin([0, 1])].pivot_table(index=keys, columns="k", values="Avg", sort=False)
    acc = acc.rename(columns={0: "iid", 1: "oracle_k1"})
    leak = per_trial[per_trial["k"] > 0].pivot_table(index=keys, columns="k", values="leakage", sort=False)
    leak = leak.rename(columns=lambda k: f"leak_k{int(k)}")
    out = acc.join(leak, how="outer").reset_index()
    out.columns.name = None
    return out
