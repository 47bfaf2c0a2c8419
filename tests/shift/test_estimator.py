"""Diversity/correlation shift estimator (OoD-Bench Definition 1, Ye et al. 2022): KDE and draws vs scipy, the
quantify.py computations transcribed independently here, limit cases, calibration, baselines. Simulated data."""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest
import torch
from scipy.stats import gaussian_kde
from sklearn.preprocessing import StandardScaler

from dganalysis.shift.baselines import emd, mmd, ni_index
from dganalysis.shift.calibration import calibrate_thresholds
from dganalysis.shift.estimator import estimate_shift, fit_densities
from dganalysis.shift.kde import grouped_kde_logpdf, kde_logpdf, kde_resample, pack_groups, safe_cholesky

torch.set_num_threads(1)


def colour_features(n: int, rho: float, rng: np.random.Generator, noise: float = 0.3):
    """Simulated 'colour' features, n per class of 2: a colour c (= y flipped with prob rho) plus Gaussian
    noise, and a label-free dimension. The marginal of z does not depend on rho."""
    y = np.repeat([0, 1], n)
    c = np.where(rng.random(2 * n) < rho, 1 - y, y)
    z = np.c_[3.0 * c + noise * rng.normal(size=2 * n), rng.normal(size=2 * n)]
    return z, y


def transcribed(z_p, y_p, z_q, y_q, seed, m, eps_div=1e-12, eps_cor=5e-4, legacy=True):
    """quantify.py's computation written out here with scipy (independent of our torch code)."""
    sc = StandardScaler().fit(np.r_[z_p, z_q])
    zp, zq = sc.transform(z_p), sc.transform(z_q)
    kde_w = gaussian_kde(np.r_[zp, zq].T)
    pts = kde_w.resample(m, seed=seed)
    w, p, q = kde_w(pts), gaussian_kde(zp.T)(pts), gaussian_kde(zq.T)(pts)
    in_div = (p < eps_div) | (q < eps_div)
    div_int = np.abs(p - q) if legacy else (np.sqrt(p) - np.sqrt(q)) ** 2
    div = np.sum(np.where(in_div, div_int / w, 0)) / (2 * m)
    in_cor = (p > eps_cor) & (q > eps_cor)
    cor = 0.0
    for c in np.unique(y_p):
        pc, qc = gaussian_kde(zp[y_p == c].T)(pts), gaussian_kde(zq[y_q == c].T)(pts)
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = pc * np.sqrt(q / p), qc * np.sqrt(p / q)
        integrand = np.abs(a - b) if legacy else a + b - 2 * np.sqrt(pc * qc)
        cor += np.mean(y_p == c) * np.sum(np.where(in_cor, integrand / w, 0)) / (2 * m)
    return div, cor


@pytest.mark.parametrize("legacy", [True, False])
def test_estimate_matches_transcribed_quantify(legacy):
    rng = np.random.default_rng(6)
    z_p, y_p = colour_features(200, 0.2, rng)
    z_q, y_q = colour_features(200, 0.7, rng)
    z_q[:80, 1] += 8.0
    ref = transcribed(z_p, y_p, z_q, y_q, seed=3, m=1500, legacy=legacy)
    formula = "eq5" if legacy else "hellinger"
    e64 = estimate_shift(z_p, y_p, z_q, y_q, formula=formula, seed=3, n_samples=1500, precision="float64")
    e32 = estimate_shift(z_p, y_p, z_q, y_q, formula=formula, seed=3, n_samples=1500)
    assert e64.diversity == pytest.approx(ref[0], abs=1e-8) and e64.correlation == pytest.approx(ref[1], abs=1e-8)
    assert e32.diversity == pytest.approx(ref[0], abs=1e-4) and e32.correlation == pytest.approx(ref[1], abs=1e-4)
    assert e64.diversity > 0.05 and e64.correlation > 0.1
    assert np.isclose(e64.per_class_correlation.sum(), e64.correlation, atol=1e-12)


def test_fit_for_given_thresholds_changes_nothing():
    rng = np.random.default_rng(9)
    z_p, y_p = colour_features(150, 0.2, rng)
    z_q, y_q = colour_features(150, 0.7, rng)
    z_q[:60, 1] += 6.0
    kw = dict(eps_div=1e-3, eps_cor=2e-2)
    part = fit_densities(z_p, y_p, z_q, y_q, n_samples=800, seed=2, thresholds=(1e-3, 2e-2))
    full = fit_densities(z_p, y_p, z_q, y_q, n_samples=800, seed=2)
    a, b = part.estimate(**kw), full.estimate(**kw)
    assert (a.diversity, a.correlation) == (b.diversity, b.correlation)
    assert np.isinf(part.w).any() and 0 < a.extra["share_evaluated"] < 1  # some points skipped
    with pytest.raises(ValueError, match="thresholds"):
        part.estimate(eps_div=1e-12, eps_cor=2e-2)


def test_draws_are_scipys():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(300, 3))
    kde = gaussian_kde(data.T)
    np.testing.assert_array_equal(kde_resample(data, kde.covariance, 500, 9), kde.resample(500, seed=9).T)
    with pytest.raises(ValueError, match="seed"):
        kde_resample(data, kde.covariance, 5, "x")


@pytest.mark.parametrize("bandwidth", ["scott", "shared"])
def test_identical_distributions_give_little_shift(bandwidth):
    rng = np.random.default_rng(0)
    z_p, y_p = colour_features(700, 0.2, rng)
    z_q, y_q = colour_features(700, 0.2, rng)
    e = estimate_shift(z_p, y_p, z_q, y_q, n_samples=3000, seed=1, bandwidth=bandwidth)
    assert e.diversity < 0.01
    assert e.correlation < 0.1  # finite-sample KDE bias only


@pytest.mark.parametrize("bandwidth", ["scott", "shared"])
def test_disjoint_supports_are_pure_diversity_shift(bandwidth):
    rng = np.random.default_rng(1)
    z_p, y_p = colour_features(400, 0.2, rng)
    z_q, y_q = colour_features(400, 0.8, rng)
    z_q = z_q + np.array([0.0, 25.0])
    for formula in ("eq5", "hellinger"):
        e = estimate_shift(z_p, y_p, z_q, y_q, n_samples=3000, seed=0, bandwidth=bandwidth, formula=formula)
        assert e.diversity == pytest.approx(1.0, abs=0.03)
        assert e.correlation < 0.01
        assert e.share_div > 0.98


def test_flipped_label_correlation_is_pure_correlation_shift():
    rng = np.random.default_rng(2)
    z_p, y_p = colour_features(1000, 0.1, rng)
    z_q, y_q = colour_features(1000, 0.9, rng)
    e = estimate_shift(z_p, y_p, z_q, y_q, n_samples=4000, seed=0)
    # closed form: p(y|c) = 0.9 vs 0.1 on the same marginal -> D_cor = 1/2 * 2 * 0.8 = 0.8
    assert e.diversity < 0.01
    assert 0.65 < e.correlation <= 0.85
    h = estimate_shift(z_p, y_p, z_q, y_q, n_samples=4000, seed=0, formula="hellinger")
    # squared Hellinger between Bernoulli(0.9) and Bernoulli(0.1): (sqrt .9 - sqrt .1)^2 = 0.4
    assert 0.3 < h.correlation < 0.45


def test_correlation_grows_as_rho_te_moves_away():
    rng = np.random.default_rng(3)
    z_p, y_p = colour_features(600, 0.1, rng)
    vals = []
    for rho_te in (0.1, 0.5, 0.9):
        z_q, y_q = colour_features(600, rho_te, np.random.default_rng(10))
        vals.append(estimate_shift(z_p, y_p, z_q, y_q, n_samples=2000, seed=0).correlation)
    assert vals[0] < vals[1] < vals[2], vals
    assert vals[-1] - vals[0] > 0.5


def test_shared_bandwidth_mixtures_are_exact():
    rng = np.random.default_rng(4)
    z_p, y_p = colour_features(300, 0.3, rng)
    z_q, y_q = colour_features(300, 0.6, rng)
    d = fit_densities(z_p, y_p, z_q, y_q, bandwidth="shared", n_samples=500, seed=0)
    np.testing.assert_allclose(d.p_y @ d.prior_p, d.p, rtol=1e-12)
    np.testing.assert_allclose(d.w, 0.5 * (d.p + d.q), rtol=1e-12)
    e = d.estimate()
    assert 0 <= e.diversity <= 1 and 0 <= e.correlation <= 1


def test_small_class_is_skipped_or_raises(caplog):
    rng = np.random.default_rng(5)
    z = rng.normal(size=(202, 3))
    y = np.r_[np.zeros(100, int), np.ones(100, int), np.full(2, 2)]  # class 2: 2 points in 3 dims
    with caplog.at_level(logging.WARNING):
        e = estimate_shift(z, y, z + 0.1, y, n_samples=300)
    assert e.skipped_classes.tolist() == [2] and e.per_class_correlation[2] == 0
    assert "skipping class y=2" in caplog.text
    with pytest.raises(ValueError, match="dimensions"):  # scipy's own error
        fit_densities(z, y, z + 0.1, y, n_samples=300, strict=True)


def test_kde_matches_scipy():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(300, 3)) @ np.array([[1.0, 0.3, 0.0], [0.0, 0.7, 0.2], [0.0, 0.0, 1.5]])
    pts = rng.normal(scale=2.0, size=(200, 3))
    np.testing.assert_allclose(kde_logpdf(pts, data, device="cpu"), gaussian_kde(data.T).logpdf(pts.T), rtol=1e-4,
                               atol=1e-4)
    far = np.full((1, 3), 40.0)  # underflows float32 kernels: exercised by the exact fallback
    np.testing.assert_allclose(kde_logpdf(far, data), gaussian_kde(data.T).logpdf(far.T), rtol=1e-4)


def test_grouped_kde_matches_per_group_scipy():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 2))
    g = rng.integers(0, 5, 400)
    g[g == 4] = 3  # group 4 empty
    x[g == 1] += 30.0  # a group far from the others: per-group centring keeps float32 accurate
    packed, valid, sizes = pack_groups(x, g, 5)
    assert sizes.tolist()[4] == 0 and valid.sum() == 400
    pts = np.r_[rng.normal(size=(50, 2)), rng.normal(size=(10, 2)) + 30.0]
    chols = np.stack([safe_cholesky(np.cov(x[g == k].T)) * 0.5 if sizes[k] else np.eye(2) for k in range(5)])
    for dtype, tol in ((torch.float32, 1e-4), (torch.float64, 1e-10)):
        out = grouped_kde_logpdf(pts, packed, valid, chols, device="cpu", dtype=dtype)
        for k in range(4):
            ref = gaussian_kde(x[g == k].T, bw_method=0.5).logpdf(pts.T)
            np.testing.assert_allclose(out[:, k], ref, rtol=tol, atol=tol)
        assert np.all(np.isneginf(out[:, 4]))
    # shared kernel path
    out_s = grouped_kde_logpdf(pts, packed, valid, chols[0], device="cpu")
    kde0 = gaussian_kde(x[g == 2].T)
    kde0.covariance = chols[0] @ chols[0].T
    kde0.cho_cov = chols[0]
    kde0.log_det = 2 * np.log(np.diag(chols[0] * np.sqrt(2 * np.pi))).sum()
    np.testing.assert_allclose(out_s[:, 2], kde0.logpdf(pts.T), rtol=1e-4, atol=1e-4)


class _Linear:
    """Stands in for fitted densities: i.i.d. estimates linear in the thresholds (div up with eps_div, cor down
    with eps_cor), so calibrate.py's bisection path can be traced by hand."""

    def estimate(self, *, eps_div, eps_cor, formula):
        return types.SimpleNamespace(diversity=0.05 * eps_div / 1e-6, correlation=0.05 * (1 - eps_cor))


def test_calibration_follows_calibrate_py_rules():
    # iteration 1: eps (5e-7, .5) -> (.025, .025), both above 1e-2: eps_div down, eps_cor up;
    # 2: (2.5e-7, .75) -> (.0125, .0125) same; 3: (1.25e-7, .875) -> (.00625, .00625) within [5e-3, 1e-2]
    cal = calibrate_thresholds([_Linear(), _Linear()])
    assert (cal.eps_div, cal.eps_cor, cal.n_iter, cal.converged) == (1.25e-7, 0.875, 3, True)
    assert cal.iid_diversity == pytest.approx(0.00625) and cal.formula == "hellinger"
    short = calibrate_thresholds([_Linear()], max_iters=2)  # not reached: the last iteration's thresholds
    assert (short.eps_div, short.eps_cor, short.converged) == (2.5e-7, 0.75, False)
    with pytest.raises(ValueError, match="iid_trials"):
        calibrate_thresholds([])


def test_calibration_on_fitted_densities():
    rng = np.random.default_rng(7)
    z_p, y_p = colour_features(300, 0.3, rng)
    z_q, y_q = colour_features(300, 0.3, rng)
    dens = [fit_densities(z_p, y_p, z_q, y_q, n_samples=1500, seed=s) for s in (0, 1)]
    cal = calibrate_thresholds(dens, formula="eq5")
    raw = np.mean([d.estimate(eps_div=cal.eps_div, eps_cor=cal.eps_cor).correlation for d in dens])
    assert raw == pytest.approx(cal.iid_correlation)
    assert 0 < cal.eps_cor < 1 and 0 < cal.eps_div < 1e-6


def test_input_errors_name_the_parameter():
    with pytest.raises(ValueError, match="z_p"):
        estimate_shift(np.zeros((5, 2)), np.zeros(4), np.zeros((5, 2)), np.zeros(5))
    with pytest.raises(ValueError, match="bandwidth"):
        estimate_shift(np.zeros((5, 2)), np.zeros(5), np.ones((5, 2)), np.zeros(5), bandwidth="silverman")
    with pytest.raises(ValueError, match="formula"):
        estimate_shift(np.zeros((5, 2)), np.zeros(5), np.ones((5, 2)), np.zeros(5), formula="tv")
    with pytest.raises(ValueError, match="same classes"):
        estimate_shift(np.random.rand(6, 2), np.r_[0, 0, 0, 1, 1, 1], np.random.rand(6, 2), np.zeros(6))


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
