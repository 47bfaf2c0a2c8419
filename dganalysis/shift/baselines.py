"""One-number shift measures that OoD-Bench compares against (Ye et al., CVPR 2022, Table 3).

- :func:`emd`: Earth Mover's Distance (Rubner et al., 2000) between the two empirical feature
  distributions, exact optimal transport with Python Optimal Transport (``ot.emd2``), uniform weights,
  Euclidean ground cost.
- :func:`mmd`: Maximum Mean Discrepancy (Gretton et al., 2012) with a Gaussian RBF kernel whose
  bandwidth is the median pairwise distance of the pooled sample (median heuristic); we return the
  unbiased estimate of MMD^2 (U-statistic, can be slightly negative for i.i.d. samples).
- :func:`ni_index`: the Non-I.I.D. index of NICO (He et al., 2021, "Towards non-i.i.d. image
  classification"): for each class, ``|| (mean(F_train) - mean(F_test)) / std(F_train u F_test) ||_2``
  with the std taken per feature dimension; averaged over the classes present in both sets.

All take features ``[n, d]`` (any representation: raw pixels, pretrained or env-classifier features);
OoD-Bench leaves the representation of these baselines open, we use the same features as our estimator.
Large inputs are subsampled to ``max_points`` per side (seeded) to bound the O(n^2) cost.
"""

from __future__ import annotations

import numpy as np

from dganalysis.validation import ConfigError, check_features, check_labels, check_scalar, describe


def _two_samples(func: str, z_p, z_q, max_points, seed) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``z_p`` [n_p, d], ``z_q`` [n_q, d] (a 1-D sample is one feature: [n] → [n, 1]), ``max_points``, ``seed``."""
    z_p = check_features(np.asarray(z_p)[:, None] if np.ndim(z_p) == 1 else z_p, "z_p", func=func, min_samples=2)
    z_q = check_features(np.asarray(z_q)[:, None] if np.ndim(z_q) == 1 else z_q, "z_q", func=func, min_samples=2)
    if z_p.shape[1] != z_q.shape[1]:
        raise ConfigError(f"{func}: parameters 'z_p', 'z_q': expected the same number of features, got "
                          f"{describe(z_p)} and {describe(z_q)}")
    check_scalar(max_points, "max_points", func=func, kind="int", low=2, nullable=True)
    check_scalar(seed, "seed", func=func, kind="int", low=0)
    return z_p, z_q


def _subsample(x: np.ndarray, max_points: int | None, rng: np.random.Generator) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if max_points is not None and len(x) > max_points:
        x = x[rng.choice(len(x), max_points, replace=False)]
    return x


def _sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d, 0.0)


def emd(z_p: np.ndarray, z_q: np.ndarray, *, max_points: int | None = 2000, seed: int = 0) -> float:
    """Exact EMD (Wasserstein-1, Euclidean cost; in the units of z) between the empirical distributions of
    ``z_p`` [n_p, d] and ``z_q`` [n_q, d] (POT's ``ot.emd2``), each subsampled to ``max_points`` (None: all)."""
    import ot

    z_p, z_q = _two_samples("emd", z_p, z_q, max_points, seed)
    rng = np.random.default_rng(seed)
    a, b = _subsample(z_p, max_points, rng), _subsample(z_q, max_points, rng)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"emd: z_p has {a.shape[1]} dims, z_q has {b.shape[1]}")
    cost = np.sqrt(_sq_dists(a, b))
    wa = np.full(len(a), 1.0 / len(a))
    wb = np.full(len(b), 1.0 / len(b))
    return float(ot.emd2(wa, wb, cost, numItermax=1_000_000))


def median_bandwidth(z: np.ndarray) -> float:
    """Median heuristic: the median of the pairwise Euclidean distances of ``z`` [n, d] (zero distances excluded)."""
    z = check_features(z, "z", func="median_bandwidth")
    d = np.sqrt(_sq_dists(z, z))
    iu = np.triu_indices(len(z), k=1)
    v = d[iu]
    v = v[v > 0]
    return float(np.median(v)) if len(v) else 1.0


def mmd(
    z_p: np.ndarray, z_q: np.ndarray, *, bandwidth: float | None = None, max_points: int | None = 2000, seed: int = 0
) -> float:
    """Unbiased MMD² (dimensionless, 0 for equal distributions, up to 2) between ``z_p`` [n_p, d] and ``z_q``
    [n_q, d] with kernel ``exp(-|a - b|^2 / (2 s^2))``, ``s`` = median heuristic unless ``bandwidth`` (> 0) is given."""
    z_p, z_q = _two_samples("mmd", z_p, z_q, max_points, seed)
    check_scalar(bandwidth, "bandwidth", func="mmd", low=0.0, low_open=True, nullable=True)
    rng = np.random.default_rng(seed)
    a, b = _subsample(z_p, max_points, rng), _subsample(z_q, max_points, rng)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("mmd: need at least 2 points per sample")
    s = median_bandwidth(np.concatenate([a, b])) if bandwidth is None else float(bandwidth)
    g = -0.5 / s**2
    kaa, kbb, kab = np.exp(g * _sq_dists(a, a)), np.exp(g * _sq_dists(b, b)), np.exp(g * _sq_dists(a, b))
    n, m = len(a), len(b)
    term_a = (kaa.sum() - np.trace(kaa)) / (n * (n - 1))
    term_b = (kbb.sum() - np.trace(kbb)) / (m * (m - 1))
    return float(term_a + term_b - 2.0 * kab.mean())


def ni_index(z_p: np.ndarray, y_p: np.ndarray, z_q: np.ndarray, y_q: np.ndarray) -> float:
    """NICO's Non-I.I.D. index (He et al. 2021; dimensionless, 0 = same class means), averaged over the classes
    present in both samples: ``z_p`` [n_p, d], ``y_p`` [n_p] integer labels, ``z_q`` [n_q, d], ``y_q`` [n_q]."""
    f = "ni_index"
    z_p, z_q = check_features(z_p, "z_p", func=f), check_features(z_q, "z_q", func=f, d=np.shape(z_p)[1])
    y_p, y_q = check_labels(y_p, len(z_p), "y_p", func=f), check_labels(y_q, len(z_q), "y_q", func=f)
    classes = np.intersect1d(np.unique(y_p), np.unique(y_q))
    if not len(classes):
        raise ValueError("ni_index: no class present in both samples")
    values = []
    for c in classes:  # a handful of classes; each term is vectorised over samples and dims
        a, b = z_p[y_p == c], z_q[y_q == c]
        std = np.concatenate([a, b]).std(0)
        std = np.where(std > 0, std, 1.0)
        values.append(np.linalg.norm((a.mean(0) - b.mean(0)) / std))
    return float(np.mean(values))
