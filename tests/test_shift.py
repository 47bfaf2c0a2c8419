"""Diversity/correlation shift estimator (OoD-Bench Definition 1): limit cases, KDE vs scipy, baselines."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import gaussian_kde

from dganalysis.shift.baselines import emd, mmd, ni_index
from dganalysis.shift.calibration import calibrate_thresholds
from dganalysis.shift.estimator import draw_samples, estimate_shift, prepare
from dganalysis.shift.kde import grouped_kde_logpdf, kde_logpdf, pack_groups, safe_cholesky, sample_mixture

torch.set_num_threads(1)


def colour_features(n: int, rho: float, rng: np.random.Generator, noise: float = 0.3):
    """Synthetic 'colour' features: a binary colour c (c = y flipped with prob rho) plus Gaussian noise,
    and a second, label-free dimension. The marginal of z does not depend on rho."""
    y = rng.integers(0, 2, n)
    c = np.where(rng.random(n) < rho, 1 - y, y)
    z = np.c_[3.0 * c + noise * rng.normal(size=n), rng.normal(size=n)]
    return z, y


@pytest.mark.parametrize("bandwidth", ["shared", "scott"])
def test_identical_distributions_give_no_shift(bandwidth):
    rng = np.random.default_rng(0)
    z_p, y_p = colour_features(1500, 0.2, rng)
    z_q, y_q = colour_features(1500, 0.2, rng)
    e = estimate_shift(z_p, y_p, z_q, y_q, n_samples=4000, seed=1, bandwidth=bandwidth)
    assert e.diversity < 0.02
    assert e.correlation < 0.1  # finite-sample KDE bias only (no floor)
    cal = calibrate_thresholds(z_p, y_p, n_samples=3000, seed=2, bandwidth=bandwidth)
    e2 = estimate_shift(z_p, y_p, z_q, y_q, n_samples=4000, seed=1, bandwidth=bandwidth,
                        eps_div=cal.eps_div, eps_cor=cal.eps_cor)
    assert e2.diversity < 0.03 and e2.correlation < 0.03
    assert 0 < cal.eps_cor < 1 and cal.iid_correlation <= cal.tol + 1e-9


@pytest.mark.parametrize("bandwidth", ["shared", "scott"])
def test_disjoint_supports_are_pure_diversity_shift(bandwidth):
    rng = np.random.default_rng(1)
    z_p, y_p = colour_features(800, 0.2, rng)
    z_q, y_q = colour_features(800, 0.8, rng)
    z_q = z_q + np.array([0.0, 25.0])
    e = estimate_shift(z_p, y_p, z_q, y_q, n_samples=3000, seed=0, bandwidth=bandwidth)
    assert e.diversity > 0.98
    assert e.correlation < 0.01
    assert e.share_s > 0.98


def test_flipped_label_correlation_is_pure_correlation_shift():
    rng = np.random.default_rng(2)
    z_p, y_p = colour_features(2000, 0.1, rng)
    z_q, y_q = colour_features(2000, 0.9, rng)
    e = estimate_shift(z_p, y_p, z_q, y_q, n_samples=5000, seed=0)
    # closed form: p(y|c) = 0.9 vs 0.1 on the same marginal -> D_cor = 1/2 * 2 * 0.8 = 0.8
    assert e.diversity < 0.01
    assert 0.65 < e.correlation <= 0.85
    assert np.isclose(e.per_class_correlation.sum(), e.correlation, atol=1e-9)
    assert 0 <= e.diversity <= 1 and 0 <= e.correlation <= 1


def test_correlation_grows_as_rho_te_moves_away():
    rng = np.random.default_rng(3)
    z_p, y_p = colour_features(1500, 0.1, rng)
    vals = []
    for rho_te in (0.1, 0.3, 0.5, 0.7, 0.9):
        z_q, y_q = colour_features(1500, rho_te, np.random.default_rng(10))
        vals.append(estimate_shift(z_p, y_p, z_q, y_q, n_samples=3000, seed=0).correlation)
    assert all(b > a for a, b in zip(vals, vals[1:])), vals
    assert vals[-1] - vals[0] > 0.5


def test_kde_matches_scipy():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(300, 3)) @ np.array([[1.0, 0.3, 0.0], [0.0, 0.7, 0.2], [0.0, 0.0, 1.5]])
    pts = rng.normal(scale=2.0, size=(200, 3))
    ours = kde_logpdf(pts, data, device="cpu")
    ref = gaussian_kde(data.T).logpdf(pts.T)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)
    far = np.full((1, 3), 40.0)  # underflows float32 kernels: exercised by the exact fallback
    np.testing.assert_allclose(kde_logpdf(far, data), gaussian_kde(data.T).logpdf(far.T), rtol=1e-4)


def test_grouped_kde_matches_per_group_scipy():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 2))
    g = rng.integers(0, 5, 400)
    g[g == 4] = 3  # group 4 empty
    packed, valid, sizes = pack_groups(x, g, 5)
    assert sizes.tolist()[4] == 0 and valid.sum() == 400
    pts = rng.normal(size=(50, 2))
    chols = np.stack([safe_cholesky(np.cov(x[g == k].T)) * 0.5 if sizes[k] else np.eye(2) for k in range(5)])
    out = grouped_kde_logpdf(pts, packed, valid, chols, device="cpu")
    for k in range(4):
        kde = gaussian_kde(x[g == k].T, bw_method=0.5)
        np.testing.assert_allclose(out[:, k], kde.logpdf(pts.T), rtol=1e-4, atol=1e-4)
    assert np.all(np.isneginf(out[:, 4]))
    # shared kernel path
    out_s = grouped_kde_logpdf(pts, packed, valid, chols[0], device="cpu")
    kde0 = gaussian_kde(x[g == 2].T)
    kde0.covariance = chols[0] @ chols[0].T
    kde0.cho_cov = chols[0]
    kde0.log_det = 2 * np.log(np.diag(chols[0] * np.sqrt(2 * np.pi))).sum()
    np.testing.assert_allclose(out_s[:, 2], kde0.logpdf(pts.T), rtol=1e-4, atol=1e-4)


def test_estimate_matches_scipy_reference_formula():
    rng = np.random.default_rng(6)
    z_p, y_p = colour_features(400, 0.2, rng)
    z_q, y_q = colour_features(400, 0.7, rng)
    z_q[:80, 1] += 8.0
    prep = prepare(z_p, y_p, z_q, y_q, bandwidth="scott")
    pts = draw_samples(prep, 1500, 0)
    e = estimate_shift(z_p, y_p, z_q, y_q, bandwidth="scott", points=pts)
    zp, zq = prep.z[:400], prep.z[400:]
    p, q = gaussian_kde(zp.T)(pts.T), gaussian_kde(zq.T)(pts.T)
    w = (p + q) / 2
    div = np.where(p * q < 1e-12, np.abs(p - q) / (2 * w), 0).mean()
    tv = sum(np.abs(np.mean(y_p == c) * gaussian_kde(zp[y_p == c].T)(pts.T) / p
                    - np.mean(y_q == c) * gaussian_kde(zq[y_q == c].T)(pts.T) / q) for c in (0, 1))
    cor = np.where(p * q >= 1e-12, np.sqrt(p * q) / (2 * w) * tv, 0).mean()
    assert abs(e.diversity - div) < 1e-4 and abs(e.correlation - cor) < 1e-4
    assert e.diversity > 0.05 and e.correlation > 0.2


def test_sampling_is_seeded_and_follows_the_mixture():
    x = np.r_[np.zeros((50, 1)), np.full((50, 1), 10.0)]
    g = np.r_[np.zeros(50, int), np.ones(50, int)]
    a = sample_mixture(x, g, np.array([0.25, 0.75]), np.eye(1) * 0.1, 4000, 7)
    b = sample_mixture(x, g, np.array([0.25, 0.75]), np.eye(1) * 0.1, 4000, 7)
    np.testing.assert_array_equal(a, b)
    assert abs((a[:, 0] > 5).mean() - 0.75) < 0.03


def test_input_errors_name_the_parameter():
    with pytest.raises(ValueError, match="z_p"):
        estimate_shift(np.zeros((5, 2)), np.zeros(4), np.zeros((5, 2)), np.zeros(5))
    with pytest.raises(ValueError, match="bandwidth"):
        estimate_shift(np.zeros((5, 2)), np.zeros(5), np.ones((5, 2)), np.zeros(5), bandwidth="silverman")


def test_baselines_known_cases():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(300, 2))
    assert emd(a, a + np.array([3.0, 4.0])) == pytest.approx(5.0, rel=1e-6)  # a translation costs its length
    assert emd(a, a) == pytest.approx(0.0, abs=1e-6)
    b = rng.normal(size=(300, 2))
    assert abs(mmd(a, b)) < 0.02
    assert mmd(a, b + 10.0) > 0.9  # disjoint: MMD^2 -> 2 - 2 k(far) ~ kernel mass of each side
    y = rng.integers(0, 2, 300)
    assert ni_index(a, y, a, y) == pytest.approx(0.0)
    # shifting one dimension by delta per class: NI = delta / std of the union
    shifted = a + np.array([2.0, 0.0])
    expected = np.mean([2.0 / np.concatenate([a[y == c, 0], shifted[y == c, 0]]).std() for c in (0, 1)])
    assert ni_index(a, y, shifted, y) == pytest.approx(expected)
