"""Parametric coloured digits for the sanity study of OoD-Bench (Ye et al., CVPR 2022, Fig. 4, Table 3).

Follows the paper's Colored MNIST manipulation on scikit-learn's real 8×8 handwritten digits
(1,797 images, UCI optdigits), so that every parameter of Fig. 4 can be varied:

- binary label ``y = (digit < 5)``, flipped with probability ``label_noise`` (DomainBed's 0.25);
- colour red/green = ``y`` flipped with probability ``rho`` (``rho_tr`` in the training, ``rho_te`` in
  the test environment; DomainBed's +90% environment is ``rho = 0.1``, its -90% one ``rho = 0.9``);
- optional blue: per image an intensity ``b ~ N(mu, sigma^2)`` truncated to [0, 1]; the digit is
  drawn with intensity ``b`` in the blue channel and ``1 - b`` in its red/green channel ("the intensity
  of red and green is subtracted by the same amount").

The two environments use disjoint halves of the digits (shuffled with ``seed``), so shapes are
i.i.d. across environments and only the colours differ. The colouring is synthetic (on real digits).
"""

from __future__ import annotations

import numpy as np

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.validation import check_features, check_generator, check_scalar


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).clip(0, 1), d.target.astype(np.int64)


def truncated_normal(mu: float, sigma: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of ``N(mu, sigma^2)`` truncated to [0, 1] (``sigma = 0`` gives the constant ``clip(mu, 0, 1)``)."""
    f = "truncated_normal"
    check_scalar(mu, "mu", func=f)
    check_scalar(sigma, "sigma", func=f, low=0.0)
    size = check_scalar(size, "size", func=f, kind="int", low=0)
    rng = check_generator(rng, "rng", func=f)
    if sigma <= 0:
        return np.full(size, float(np.clip(mu, 0.0, 1.0)))
    from scipy.stats import truncnorm

    a, b = (0.0 - mu) / sigma, (1.0 - mu) / sigma
    return truncnorm.rvs(a, b, loc=mu, scale=sigma, size=size, random_state=rng)


def color_environment(
    images: np.ndarray,
    digits: np.ndarray,
    rho: float,
    *,
    blue_mu: float | None = None,
    blue_sigma: float = 0.1,
    label_noise: float = 0.25,
    scale: int = 1,
    rng: np.random.Generator,
    name: str = "env",
) -> Domain:
    """One environment: images in [0, 1] ``[N, H, W]`` and digit classes ``[N]`` → a 3-channel (R, G, B) Domain
    (label = digit < 5, flipped with probability ``label_noise``; colour = label, flipped with probability ``rho``;
    blue intensity ~ truncated N(``blue_mu``, ``blue_sigma``²) when ``blue_mu`` is given; SIMULATED data)."""
    f = "color_environment"
    check_features(images, "images", func=f, ndim=3, to=None)
    check_features(digits, "digits", func=f, ndim=1, n=len(images), to=None)
    check_scalar(rho, "rho", func=f, low=0.0, high=1.0)
    check_scalar(blue_mu, "blue_mu", func=f, nullable=True)
    check_scalar(blue_sigma, "blue_sigma", func=f, low=0.0)
    check_scalar(label_noise, "label_noise", func=f, low=0.0, high=1.0)
    check_scalar(scale, "scale", func=f, kind="int", low=1)
    rng = check_generator(rng, "rng", func=f)
    n = len(images)
    y = (digits < 5).astype(np.int64)
    y = np.where(rng.random(n) < label_noise, 1 - y, y)
    color = np.where(rng.random(n) < rho, 1 - y, y)  # 0 = red, 1 = green
    blue = truncated_normal(blue_mu, blue_sigma, n, rng) if blue_mu is not None else np.zeros(n)
    x = np.zeros((n, 3) + images.shape[1:], dtype=np.float64)
    rg = images * (1.0 - blue)[:, None, None]
    x[np.arange(n), color] = rg
    x[:, 2] = images * blue[:, None, None]
    if scale > 1:
        x = x.repeat(scale, axis=2).repeat(scale, axis=3)
    meta = {"color": color, "blue": blue.astype(np.float32), "digit": digits}
    return Domain(name, (x * 255).round().astype(np.uint8), y, meta)


def colored_digits_shift(
    rho_tr: float = 0.1,
    rho_te: float = 0.9,
    *,
    mu_tr: float | None = None,
    mu_te: float | None = None,
    sigma_tr: float = 0.1,
    sigma_te: float = 0.1,
    label_noise: float = 0.25,
    scale: int = 1,
    seed: int = 0,
) -> DomainDataset:
    """Two environments ``"train"`` and ``"test"`` of coloured digits with the Fig. 4 parameters.

    ``mu_tr``/``mu_te`` = None adds no blue (red/green only, as Fig. 4a and Table 3's first rows). SIMULATED data
    (scikit-learn's 8×8 digits, coloured; ``scale`` repeats pixels); ``rho_*`` in [0, 1] is the probability that
    the colour disagrees with the label.
    """
    f = "colored_digits_shift"
    for name, v in (("rho_tr", rho_tr), ("rho_te", rho_te), ("label_noise", label_noise)):
        check_scalar(v, name, func=f, low=0.0, high=1.0)
    for name, v in (("mu_tr", mu_tr), ("mu_te", mu_te)):
        check_scalar(v, name, func=f, nullable=True)
    for name, v in (("sigma_tr", sigma_tr), ("sigma_te", sigma_te)):
        check_scalar(v, name, func=f, low=0.0)
    check_scalar(scale, "scale", func=f, kind="int", low=1)
    check_scalar(seed, "seed", func=f, kind="int", low=0)
    images, digits = _digits()
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(images))
    half = len(perm) // 2
    a, b = perm[:half], perm[half:]
    tr = color_environment(images[a], digits[a], rho_tr, blue_mu=mu_tr, blue_sigma=sigma_tr,
                           label_noise=label_noise, scale=scale, rng=rng, name="train")
    te = color_environment(images[b], digits[b], rho_te, blue_mu=mu_te, blue_sigma=sigma_te,
                           label_noise=label_noise, scale=scale, rng=rng, name="test")
    info = {
        "source": "scikit-learn digits (UCI optdigits), synthetic colouring following OoD-Bench Fig. 4",
        "rho_tr": rho_tr, "rho_te": rho_te, "mu_tr": mu_tr, "mu_te": mu_te,
        "sigma_tr": sigma_tr, "sigma_te": sigma_te, "label_noise": label_noise, "seed": seed,
    }
    return DomainDataset("ColoredDigitsShift", ["0-4", "5-9"], [tr, te], info)
