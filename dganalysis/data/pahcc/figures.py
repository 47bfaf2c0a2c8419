"""Figures and tables of the PaHCC build (Zhang, Zhang & Liu, Sec. 3): Fig. 7-style grids, gray vs binary, foreground histograms.

Simulated handwriting is labelled "simulated" in titles whenever the dataset's hw domain is simulated.
"""

from __future__ import annotations

import numpy as np

from dganalysis.data.dataset import DomainDataset

TITLES = {"d0": "d0: standard printed", "d1": "d1: distorted printed", "d2": "d2: handwriting-style printed",
          "hw": "hw: handwritten"}


def _title(ds: DomainDataset, name: str) -> str:
    t = TITLES.get(name, name)
    if name == "hw" and ds.info.get("writers_simulated"):
        t += " (SIMULATED)"
    return t


def _pick(n_total: int, n: int, seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(n_total, size=min(n, n_total), replace=False))


def domain_mosaics(ds: DomainDataset, rows: int = 3, cols: int = 10, seed: int = 0):
    """Fig. 7 of Zhang, Zhang & Liu: one unlabelled rows×cols mosaic panel per domain (side by side). For a labelled
    grid with one row per domain, any dataset, see :func:`dganalysis.plots.domain_grid`."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ds), figsize=(3.2 * len(ds), 3.2 * rows / cols * 1.1 + 0.6))
    for ax, d in zip(np.atleast_1d(axes), ds):
        idx = _pick(len(d), rows * cols, seed)
        x = np.asarray(d.images)[idx, 0]
        s = x.shape[-1]
        canvas = np.full((rows * s, cols * s), 255, np.uint8)
        for k, im in enumerate(x):
            r, c = divmod(k, cols)
            canvas[r * s:(r + 1) * s, c * s:(c + 1) * s] = im
        ax.imshow(canvas, cmap="gray", vmin=0, vmax=255)
        ax.set_title(_title(ds, d.name), fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    return fig


def gray_vs_binary(gray: DomainDataset, binary: DomainDataset, n: int = 8, seed: int = 0):
    """Rows of gray and binarized versions of the same samples, per domain."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2 * len(gray), 1, figsize=(n * 0.8, 2 * len(gray) * 0.95))
    for i, d in enumerate(gray):
        idx = _pick(len(d), n, seed)
        for j, (src, label) in enumerate(((gray, "gray"), (binary, "binary"))):
            x = np.asarray(src[d.name].images)[idx, 0]
            ax = axes[2 * i + j]
            ax.imshow(np.concatenate(list(x), 1), cmap="gray", vmin=0, vmax=255)
            ax.set_title(f"{_title(gray, d.name)} — {label}", fontsize=8, loc="left")
            ax.axis("off")
    fig.tight_layout()
    return fig


def foreground_values(ds: DomainDataset, threshold: int = 160, max_images: int = 2000, seed: int = 0) -> dict:
    """Per domain, the gray levels of foreground pixels (value < ``threshold``) of up to ``max_images`` images."""
    out = {}
    for d in ds:
        x = np.asarray(d.images)[_pick(len(d), max_images, seed)]
        out[d.name] = x[x < threshold].astype(np.int64)
    return out


def foreground_histograms(ds: DomainDataset, threshold: int = 160):
    """Histogram of foreground pixel intensities per domain (the shortcut of the paper's Sec. 4 / Table 7)."""
    import matplotlib.pyplot as plt

    vals = foreground_values(ds, threshold)
    fig, axes = plt.subplots(1, len(vals), figsize=(3.2 * len(vals), 2.6), sharey=True)
    for ax, (name, v) in zip(np.atleast_1d(axes), vals.items()):
        ax.hist(v, bins=np.arange(0, threshold + 8, 8), density=True, color="0.3")
        ax.set_title(f"{_title(ds, name)}\nmean {v.mean():.0f}, std {v.std():.0f}", fontsize=8)
        ax.set_xlabel("foreground gray level")
    np.atleast_1d(axes)[0].set_ylabel("density")
    fig.tight_layout()
    return fig


def foreground_table(ds: DomainDataset, threshold: int = 160):
    """Mean, std and quartiles of foreground gray levels per domain (pandas)."""
    import pandas as pd

    rows = []
    for name, v in foreground_values(ds, threshold).items():
        q = np.percentile(v, [25, 50, 75]) if len(v) else [np.nan] * 3
        rows.append({"domain": name + (" (simulated)" if name == "hw" and ds.info.get("writers_simulated") else ""),
                     "mean": v.mean() if len(v) else np.nan, "std": v.std() if len(v) else np.nan,
                     "q25": q[0], "median": q[1], "q75": q[2]})
    return pd.DataFrame(rows)


def fonts_table(ds: DomainDataset):
    """Which fonts (or distorted instances) went into which printed domain, with samples and missing glyphs."""
    import pandas as pd

    rows = []
    missing = ds.info.get("missing_glyphs", {})
    for dom, names in ds.info.get("fonts", {}).items():
        ids = np.asarray(ds[dom].meta["font"])
        counts = np.bincount(ids, minlength=len(names))
        for k, n in enumerate(names):
            rows.append({"domain": dom, "font": n, "samples": int(counts[k]), "missing": int(missing.get(dom, {}).get(n, 0))})
    return pd.DataFrame(rows)
