"""Zhang, Zhang & Liu, *Towards Reliable Domain Generalization*, Sec. 4.1, Table 7 and Fig. 8: binarization.

The paper's finding: trained on printed characters (PaHCC's printed domains d0, d1, d2), ERM fails on grayscale
handwriting and recovers after binarization — Table 7, task (d0,d1,d2) → hw: 16.4% in gray, 60.6% in binary, a
gap of +44.2 points (Fig. 8 shows the same gap for every method it trains).

**The claims.** One per method: on the handwritten task, the accuracy of the binary run minus that of the gray
run, over trials, is positive (direction +1). Units: trials; a trial's gray and binary runs share its trial seed
(the same split, :mod:`dganalysis.studies.plans`), so the engine pairs them on the shared seeds and reports how many
it pairs and drops (:func:`dganalysis.stats.pairing.use_pairs`); without shared seeds, Welch's t calibrated over the
variance ratio. **ROPE: ±10 points** (:data:`ROPE`): binarization changes the accuracy on *printed* test domains,
where the paper claims no shortcut, by up to about that much (the quick pilot's printed tasks: −6.0 to +9.2 points,
``docs/executed/02_binarization_study.ipynb``), and 10 points is under a quarter of the paper's 44-point gap; a
gap within ±10 points is "binarization makes no practical difference", decided *against* the paper.

**The family**: the methods' claims, one joint step-down (:func:`dganalysis.findings.engine.decide_finding`). The finding
is *reproduced* when every method's gap is decided positive.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dganalysis.findings import engine
from dganalysis.validation import ConfigError, check_frame

ROPE = 10.0  #: points of accuracy (module docstring)
COLUMNS = ("algorithm", "colour", "trial_seed", "acc")
GRAY, BINARY = "gray", "binary"
PAPER_GAP = 60.6 - 16.4  #: Table 7, ERM, (d0,d1,d2) → hw
#: the named pilot behind the design's noise: the quick profile's run in docs/executed/02_binarization_study.ipynb
#: (ERM, PaHCC 30 classes, 32 px, 300 steps, 2 trials): (d0,d1,d2) → hw gray 35.5 ± 5.1, binary 79.5 ± 1.5 (mean ± SE)
PILOT = ("pilot: quick run in docs/executed/02_binarization_study.ipynb (ERM, 300 steps, 2 trials; hw gray 35.5 ± 5.1, "
         "binary 79.5 ± 1.5 SE)")
#: per-trial SD of the binary − gray difference from that pilot: √((5.1·√2)² + (1.5·√2)²), arms taken independent
PILOT_SD = float(np.hypot(5.1 * np.sqrt(2), 1.5 * np.sqrt(2)))


def binarization_frame(selected_gray: pd.DataFrame, selected_binary: pd.DataFrame, train_domains: str, domain: str,
                 *, method_col: str = "algorithm", acc_col: str = "acc", scale: float = 100.0) -> pd.DataFrame:
    """The decision's frame from two selected frames (contract of :func:`dganalysis.records.selection.select`):
    one row per (algorithm, colour, trial) on the task ``train_domains → domain`` (e.g. ``"d0,d1,d2"``, ``"hw"``),
    accuracy × ``scale`` averaged over rows sharing the trial."""
    parts = []
    for colour, sel in ((GRAY, selected_gray), (BINARY, selected_binary)):
        check_frame(sel, (method_col, acc_col, "train_domains", "domain", "trial_seed"), f"selected_{colour}",
                    func="trials_frame", what="dganalysis.records.selection.select's frame")
        s = sel[(sel["train_domains"] == train_domains) & (sel["domain"] == domain)]
        g = s.groupby([method_col, "trial_seed"], sort=False)[acc_col].mean().mul(scale).reset_index()
        parts.append(g.rename(columns={method_col: "algorithm", acc_col: "acc"}).assign(colour=colour))
    return pd.concat(parts, ignore_index=True)[list(COLUMNS)]


def binarization_finding(frame: pd.DataFrame, *, alpha: float = engine.ALPHA, rope: float = ROPE,
                         methods: Sequence[str] | None = None) -> engine.FindingResult:
    """Table 7's finding decided (module docstring).

    ``frame``: one row per run on the handwritten task — columns ``algorithm``, ``colour`` (``"gray"`` or
    ``"binary"``), ``trial_seed`` (the unit id: gray and binary runs of one trial share it) and ``acc`` (accuracy
    in points, 0–100). ``methods``: the methods to claim for (default: every algorithm in the frame, in order).
    Returns the :class:`~dganalysis.findings.engine.FindingResult` of one claim per method, ``"<method>: binary −
    gray"``, direction +1, ROPE ± ``rope`` points, one family."""
    check_frame(frame, COLUMNS, "frame", func="binarization_finding", what="one row per algorithm × colour × trial")
    bad = sorted(set(frame["colour"]) - {GRAY, BINARY})
    if bad:
        raise ConfigError(f"binarization_finding: column 'colour' has {bad}; expected {GRAY!r} or {BINARY!r}")
    names = list(dict.fromkeys(frame["algorithm"])) if methods is None else list(methods)
    if not names:
        raise ConfigError("binarization_finding: no method to claim for (the frame is empty and methods=None)")
    claims = []
    for m in names:
        f = frame[frame["algorithm"] == m]
        arm = f[f["colour"] == BINARY].set_index("trial_seed")["acc"]
        base = f[f["colour"] == GRAY].set_index("trial_seed")["acc"]
        claims.append(engine.Claim(f"{m}: binary − gray", arm, base, direction=1, rope=rope, units="trials",
                                   unit_of_measure="points"))
    return engine.decide_finding(claims, alpha)


def simulate_binarization(rng: np.random.Generator, n: int, *, effect: float = PAPER_GAP, sd: float = PILOT_SD,
                          methods: Sequence[str] = ("ERM",), gray_mean: float = 16.4,
                          shared: int | None = None) -> pd.DataFrame:
    """A SIMULATED frame of :func:`binarization_finding`'s columns: per method ``n`` gray and ``n`` binary trials,
    gray ~ N(``gray_mean``, sd/√2), binary ~ N(``gray_mean`` + ``effect``, sd/√2) (so a paired difference has SD
    ``sd``). ``shared``: how many trial seeds the two colours share (default all ``n``; the rest get distinct
    seeds, as when one colour's runs are missing)."""
    k = n if shared is None else int(shared)
    rows = []
    s = sd / np.sqrt(2)
    for m in methods:
        gray = rng.normal(gray_mean, s, n)
        binary = rng.normal(gray_mean + effect, s, n)
        seeds_g = list(range(n))
        seeds_b = list(range(k)) + list(range(1000, 1000 + n - k))
        rows += [dict(algorithm=m, colour=GRAY, trial_seed=t, acc=a) for t, a in zip(seeds_g, gray)]
        rows += [dict(algorithm=m, colour=BINARY, trial_seed=t, acc=a) for t, a in zip(seeds_b, binary)]
    return pd.DataFrame(rows, columns=list(COLUMNS))
