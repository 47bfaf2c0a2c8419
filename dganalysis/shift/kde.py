"""Grouped Gaussian kernel density estimation in torch (log-space, chunked, vectorised over groups).

The OoD-Bench estimator (Ye et al., CVPR 2022, Sec. 2 "Practical estimation") needs many KDEs
evaluated at the same Monte-Carlo points: p(z), q(z) and one p(z|y), q(z|y) per class. All of them
are KDEs over *subsets* of one pooled point set, so we evaluate them together as ``G`` groups:

    log f_g(z) = logsumexp_{j in g} ( -1/2 ||L_g^{-1}(z - x_j)||^2 ) - log n_g - 1/2 log det(2 pi H_g)

with ``H_g = L_g L_g^T`` the kernel covariance of group ``g``. Points of each group are packed into a
padded tensor ``[G, n_max, d]`` (padding masked to ``-inf``), so that

- with one kernel shared by all groups (``H_g = H``) everything is whitened once and one matrix
  product ``[m, d] x [d, G * n_max]`` gives every squared distance of a chunk of ``m`` evaluation
  points to every pooled point: one distance matrix serves all groups;
- with per-group kernels a batched product ``[G, m, d] x [G, d, n_max]`` does the same.

Squared distances use ``|a|^2 + |b|^2 - 2 a.b`` in float32 (a BLAS matmul); the chunk size bounds the
working memory (``chunk_elems`` floats). The logsumexp is exact per group (max-shifted), so small
groups far from a point give finite log-densities rather than underflowing.

Bandwidth: ``scott_factor(n, d) = n ** (-1 / (d + 4))`` (Scott's rule, as ``scipy.stats.gaussian_kde``);
the kernel covariance is ``factor**2`` times the data covariance (the same as scipy's default).
"""

from __future__ import annotations

import math
import threading

import numpy as np
import torch

from dganalysis import threads

LOG_2PI = math.log(2.0 * math.pi)
LOG2E = 1.0 / math.log(2.0)  # kernel exponents are computed in base 2: exp2 is ~4x faster than exp on CPU
CLAMP = -80.0  # kernel exponents below this are clamped before exp (see grouped_kde_logpdf)


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def scott_factor(n: float, d: int) -> float:
    """Scott's rule bandwidth factor ``n ** (-1 / (d + 4))`` (scipy.stats.gaussian_kde's default)."""
    if n <= 0:
        raise ValueError(f"scott_factor: n must be positive, got {n}")
    return float(n) ** (-1.0 / (d + 4))


def covariance(x: np.ndarray) -> np.ndarray:
    """Sample covariance (ddof=1) of rows of ``x`` as float64 ``[d, d]``."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) < 2:
        raise ValueError(f"covariance: need at least 2 points, got {len(x)}")
    return np.atleast_2d(np.cov(x, rowvar=False))


def safe_cholesky(cov: np.ndarray, fallback: np.ndarray | None = None) -> np.ndarray:
    """Lower Cholesky factor of ``cov``; if it is not positive definite, of ``fallback`` (or a ridge)."""
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        if fallback is not None:
            return np.linalg.cholesky(fallback)
        d = cov.shape[0]
        ridge = 1e-6 * max(float(np.trace(cov)) / d, 1e-12)
        return np.linalg.cholesky(cov + ridge * np.eye(d))


def pack_groups(x: np.ndarray, groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pack rows of ``x`` into ``[n_groups, n_max, d]`` by integer ``groups`` (no Python loop over points).

    Returns ``(packed, valid, sizes)``: ``valid[g, k]`` is False on padding; ``sizes[g]`` the group sizes.
    """
    x = np.asarray(x)
    groups = np.asarray(groups, dtype=np.int64)
    if groups.shape != (len(x),):
        raise ValueError(f"pack_groups: groups has shape {groups.shape}, expected ({len(x)},)")
    if len(groups) and (groups.min() < 0 or groups.max() >= n_groups):
        raise ValueError(f"pack_groups: group ids must lie in [0, {n_groups})")
    sizes = np.bincount(groups, minlength=n_groups)
    n_max = max(int(sizes.max()) if len(sizes) else 0, 1)
    order = np.argsort(groups, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slot = np.arange(len(x)) - starts[groups[order]]
    packed = np.zeros((n_groups, n_max, x.shape[1]), dtype=x.dtype)
    valid = np.zeros((n_groups, n_max), dtype=bool)
    packed[groups[order], slot] = x[order]
    valid[groups[order], slot] = True
    return packed, valid, sizes


def grouped_kde_logpdf(
    points: np.ndarray | torch.Tensor,
    packed: np.ndarray,
    valid: np.ndarray,
    chol: np.ndarray,
    *,
    chunk_elems: int = 2**18,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    max_abs_err: float | None = None,
) -> np.ndarray:
    """Log-density of each group's Gaussian KDE at ``points``: float64 ``[m, G]``.

    ``packed``/``valid`` come from :func:`pack_groups`; ``chol`` is the lower Cholesky factor of the
    kernel covariance, ``[d, d]`` (one kernel shared by all groups: the fast path) or ``[G, d, d]``.
    Empty groups get ``-inf``. Work is chunked over evaluation points so that a chunk's block of
    kernel values holds about ``chunk_elems`` numbers (2**18 float32 = 1 MiB, cache-sized on CPU).

    Fast path: with whitened points ``a`` and data ``b``, one augmented matrix product
    ``[a, -|a|^2/2, 1] . [b, 1, -|b|^2/2] = -|a - b|^2 / 2`` gives the kernel exponents directly
    (all <= 0, so no max-shift is needed), clamped at ``-80`` (CPU ``exp`` is 10-30x slower on
    arguments that underflow float32), then ``exp`` in place and a sum per group. The clamp changes a
    group's sum by at most ``n_max * e^-80``; rows where some non-empty group's sum is below
    ``1e6`` times that (points farther than ~11 kernel widths from all of the group) are recomputed
    with an exact max-shifted logsumexp, so every returned value has relative error < 1e-6 from the
    clamp. With ``max_abs_err`` set, only groups whose clamp error bound in *linear* density,
    ``e^-80`` times the kernel's peak height, exceeds it trigger that recomputation (callers that use
    densities, not log-densities, against thresholds far above the bound skip most of it).

    Per-group kernels (``chol`` ``[G, d, d]``) centre each group on its own mean before whitening, so
    the float32 cancellation in ``|a|^2 + |b|^2 - 2 a.b`` stays small near every group whatever its
    kernel width; the shared kernel centres on the pooled mean.
    """
    device = torch.device(device) if device is not None else default_device()
    if device.type != "cpu":
        return _grouped_kde_logpdf(points, packed, valid, chol, chunk_elems, device, dtype, max_abs_err)
    with threads.torch_threads(1):  # one thread per op; chunks run on threads.map_chunks's workers
        return _grouped_kde_logpdf(points, packed, valid, chol, chunk_elems, device, dtype, max_abs_err)


def _grouped_kde_logpdf(points, packed, valid, chol, chunk_elems, device, dtype, max_abs_err) -> np.ndarray:
    pts = torch.as_tensor(np.asarray(points, dtype=np.float64), device=device)
    G, n_max, d = packed.shape
    if pts.ndim != 2 or pts.shape[1] != d:
        raise ValueError(f"grouped_kde_logpdf: points must be [m, {d}], got {list(pts.shape)}")
    chol64 = torch.as_tensor(np.asarray(chol, dtype=np.float64), device=device)
    shared = chol64.ndim == 2
    xs = torch.as_tensor(np.asarray(packed, dtype=np.float64), device=device)
    mask = torch.as_tensor(np.asarray(valid), device=device)
    sizes = mask.sum(1).to(torch.float64)
    log_det = 2.0 * torch.log(torch.diagonal(chol64, dim1=-2, dim2=-1)).sum(-1)  # log det H_g
    # per-group log normaliser: -log n_g - 1/2 (d log 2pi + log det H_g)
    log_norm = -torch.log(sizes.clamp_min(1.0)) - 0.5 * (d * LOG_2PI + log_det)
    log_norm = torch.where(sizes > 0, log_norm, torch.full_like(log_norm, -math.inf))
    # centre (better float32 conditioning), whiten in float64
    eye = torch.eye(d, dtype=torch.float64, device=device)
    inv = torch.linalg.solve_triangular(chol64, eye if shared else eye.expand(G, d, d), upper=False)
    if shared:
        centre = xs[mask].mean(0) if bool(mask.any()) else torch.zeros(d, dtype=torch.float64, device=device)
        xs, pts = xs - centre, pts - centre
        xw = xs.reshape(-1, d) @ inv.T  # [G*n_max, d]
    else:
        fmask = mask.to(torch.float64).unsqueeze(-1)
        centres = (xs * fmask).sum(1) / sizes.clamp_min(1.0).unsqueeze(-1)  # [G, d] group means
        xw = torch.einsum("gnd,ged->gne", xs - centres[:, None], inv)  # [G, n_max, d]
        shift_w = torch.einsum("gd,ged->ge", centres, inv)  # whitened group centres
    neg = torch.full(xw.shape[:-1], -1e4, dtype=torch.float64, device=device)
    half_sq = torch.where(mask.reshape(neg.shape), -0.5 * (xw**2).sum(-1), neg)
    b_aug = torch.cat([xw, torch.ones_like(half_sq).unsqueeze(-1), half_sq.unsqueeze(-1)], -1).to(dtype)
    nonempty = sizes > 0
    m = pts.shape[0]
    rows = max(1, int(chunk_elems // max(G * n_max, 1)))
    out = torch.empty((m, G), dtype=torch.float64, device=device)

    def augment(p: torch.Tensor) -> torch.Tensor:
        return torch.cat([p, -0.5 * (p**2).sum(-1, keepdim=True), torch.ones_like(p[..., :1])], -1).to(dtype)

    b_aug = b_aug * LOG2E  # exponents in base 2
    b_t = b_aug.reshape(-1, d + 2).T.contiguous() if shared else b_aug.transpose(1, 2).contiguous()
    local = threading.local()  # one reusable block buffer per worker thread

    def buffer() -> torch.Tensor:
        if getattr(local, "buf", None) is None:
            local.buf = torch.empty((rows, G * n_max) if shared else (G, rows, n_max), dtype=dtype, device=device)
        return local.buf

    def exponents(p: torch.Tensor, reuse: bool = False) -> torch.Tensor:
        """-|a - b|^2 / (2 ln 2) as [c, G * n_max] (shared) or [G, c, n_max]; into the reused buffer for full chunks."""
        if shared:
            a = augment(p @ inv.T)
            return torch.mm(a, b_t, out=buffer()) if reuse and len(p) == rows else a @ b_t
        a = augment(torch.einsum("md,ged->gme", p, inv) - shift_w[:, None])  # [G, c, d + 2]
        return torch.bmm(a, b_t, out=buffer()) if reuse and len(p) == rows else torch.bmm(a, b_t)

    def block(p: torch.Tensor) -> torch.Tensor:  # base-2 exponents as [c, G, n_max]
        ex = exponents(p)
        return ex.view(len(p), G, n_max) if shared else ex.transpose(0, 1)

    def kernel_sums(p: torch.Tensor) -> torch.Tensor:  # clamped kernel sums per group, [c, G]
        ex = exponents(p, reuse=True).clamp_min_(CLAMP * LOG2E).exp2_()
        return ex.view(len(p), G, n_max).sum(-1) if shared else ex.sum(-1).T

    floor = n_max * math.exp(CLAMP) * 1e6
    check = nonempty
    if max_abs_err is not None:  # linear-density error of the clamp: e^CLAMP * peak height (n_g e^CLAMP / n_g)
        peak = torch.exp(log_norm + torch.log(sizes.clamp_min(1.0)))
        check = nonempty & (math.exp(CLAMP) * peak > max_abs_err)
    def first_pass(s: int) -> torch.Tensor | None:
        e = min(m, s + rows)
        sums = kernel_sums(pts[s:e])  # [c, G]
        out[s:e] = torch.log(sums.to(torch.float64))
        bad = ((sums < floor) & check).any(1)
        return torch.nonzero(bad).flatten() + s if bool(bad.any()) else None

    def exact_pass(sel: torch.Tensor) -> None:  # exact max-shifted logsumexp for far rows
        ex = block(pts[sel])
        top = ex.amax(-1, keepdim=True)
        lse = (ex - top).clamp_min_(CLAMP * LOG2E).exp2_().sum(-1).log() + top.squeeze(-1) / LOG2E
        out[sel] = lse.to(torch.float64)

    # CPU: chunks on worker threads with one torch thread each (see dganalysis.threads.map_chunks)
    run = threads.map_chunks if device.type == "cpu" else (lambda fn, xs: [fn(x) for x in xs])
    bad_rows = [b for b in run(first_pass, list(range(0, m, rows))) if b is not None]
    if bad_rows:  # chunked the same way
        idx = torch.cat(bad_rows)
        run(exact_pass, [idx[s : s + rows] for s in range(0, len(idx), rows)])
    out = out + log_norm
    out = torch.nan_to_num(out, nan=-math.inf, neginf=-math.inf)
    return out.cpu().numpy()


def kde_logpdf(
    points: np.ndarray, data: np.ndarray, *, bw_factor: float | None = None, device: torch.device | str | None = None
) -> np.ndarray:
    """Log-density of one Gaussian KDE of ``data`` ``[n, d]`` at ``points`` ``[m, d]`` (scipy-equivalent).

    Kernel covariance = ``bw_factor**2`` times the data covariance; ``bw_factor`` defaults to
    Scott's rule, so this matches ``scipy.stats.gaussian_kde(data.T).logpdf(points.T)``.
    """
    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    f = scott_factor(n, d) if bw_factor is None else float(bw_factor)
    chol = safe_cholesky(covariance(data)) * f
    packed, valid, _ = pack_groups(data, np.zeros(n, dtype=np.int64), 1)
    return grouped_kde_logpdf(points, packed, valid, chol, device=device)[:, 0]


def kde_resample(
    data: np.ndarray,
    kernel_cov: np.ndarray,
    n_samples: int,
    seed: int | np.random.RandomState | np.random.Generator | None,
) -> np.ndarray:
    """``n_samples`` draws ``[n, d]`` from the Gaussian KDE of ``data`` ``[N, d]`` with kernel covariance ``kernel_cov``.

    The same random stream as ``scipy.stats.gaussian_kde(data.T).resample(n_samples, seed=seed)`` (an int
    seed makes a ``numpy.random.RandomState``; kernel noise from ``multivariate_normal`` first, then the
    data indices from ``choice`` with weights ``1/N``), so for a scipy-default kernel the points are
    identical to the ones OoD-Bench's ``quantify.py`` draws with the same seed.
    """
    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    if isinstance(seed, (np.random.RandomState, np.random.Generator)):
        rs = seed
    elif seed is None or isinstance(seed, (int, np.integer)):
        rs = np.random.RandomState(seed)
    else:
        raise ValueError(f"kde_resample: seed must be an int, None, RandomState or Generator, got {type(seed).__name__}")
    noise = rs.multivariate_normal(np.zeros(d), np.asarray(kernel_cov, dtype=np.float64), size=int(n_samples))
    idx = rs.choice(n, size=int(n_samples), p=np.ones(n) / n)
    return data[idx] + noise
