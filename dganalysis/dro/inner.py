"""The inner problem of the Wasserstein dual, per sample: ``ψ(γ) = sup_z ℓ(h(z), y) − γ‖z − z0‖²``.

Sinha et al. (2017), Eq. (4) / Proposition 1 (the same dual the WC-DG poster writes for g#Q).

- :func:`gradient_ascent`: batched gradient ascent for any differentiable head and loss. Step size per
  sample ``η = 1/(2γ + L)`` with ``L`` an estimate of the loss's smoothness in z (for ``2γ > L`` the
  objective is (2γ − L)-strongly concave and (2γ + L)-smooth, so this step converges linearly to the
  unique maximiser; below that it is an ascent method that finds a local maximum, i.e. a lower bound on
  ψ). A step that lowers a sample's objective is rejected and that sample's step halved (an accepted one grows it ×1.5), so the
  iteration is monotone even when ``L`` is underestimated or the loss is not smooth (hinge). An
  optional ``project`` keeps z in its domain (images: [0, 1]).
- :func:`hinge_linear` (closed form, exact): for a linear head the Crammer–Singer hinge is a max of
  affine functions ``a_j·z + c_j`` (plus 0), and ``sup_z max_j (a_j·z + c_j) − γ‖z − z0‖² =
  max_j a_j·z0 + c_j + ‖a_j‖²/(4γ)``, attained at ``z0 + a_j/(2γ)``.
- :func:`zero_one_linear_distance` (closed form, exact): for a linear head, z is misclassified iff some
  rival j has ``(w_j − w_y)·z + b_j − b_y ≥ 0``, a union of half-spaces; the squared distance to it is
  ``min_j max(0, m_j)² / ‖w_j − w_y‖²`` with margin ``m_j = f_y − f_j``. Then
  ``ψ_i(γ) = max(1[misclassified], 1 − γ d_i²)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from dganalysis.dro.losses import LossFn

Head = Callable[[torch.Tensor], torch.Tensor]


def linear_params(head: Head) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(W[C, d], b[C])`` when ``head`` is affine (an ``nn.Linear``, alone or in a 1-layer Sequential), else None."""
    if isinstance(head, nn.Sequential) and len(head) == 1:
        head = head[0]
    if isinstance(head, nn.Linear):
        b = head.bias if head.bias is not None else torch.zeros(head.out_features, device=head.weight.device)
        return head.weight.detach(), b.detach()
    return None


def _sqnorm(u: torch.Tensor) -> torch.Tensor:
    return u.flatten(1).square().sum(1)


def _bcast(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.view(-1, *([1] * (like.dim() - 1)))


def loss_and_grad(head: Head, loss_fn: LossFn, z: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample loss at z and its gradient with respect to z (analytic for cross-entropy on an affine head)."""
    lin = linear_params(head) if getattr(loss_fn, "__name__", "") == "cross_entropy" else None
    if lin is not None and z.dim() == 2:
        with torch.no_grad():
            logits = torch.addmm(lin[1], z, lin[0].T)
            lse = torch.logsumexp(logits, 1, keepdim=True)
            p = (logits - lse).exp_()
            loss = lse.squeeze(1) - logits.gather(1, y[:, None]).squeeze(1)
            p[torch.arange(len(y), device=z.device), y] -= 1.0
            return loss, p @ lin[0]
    with torch.enable_grad():
        z = z.detach().requires_grad_(True)
        loss = loss_fn(head(z), y)
        (grad,) = torch.autograd.grad(loss.sum(), z)
    return loss.detach(), grad


def estimate_smoothness(head: Head, loss_fn: LossFn, z0: torch.Tensor, y: torch.Tensor, n_iter: int = 10,
                        max_samples: int = 256, seed: int = 0) -> float:
    """Largest per-sample Hessian eigenvalue of ``z ↦ ℓ(h(z), y)`` near ``z0`` (power iteration, HVPs).

    A local estimate on up to ``max_samples`` samples, multiplied by 1.5 for safety; the ascent's step
    rejection covers underestimates. For an affine head and cross-entropy we use the global bound
    ``σ_max(W)²/2`` instead (the softmax Hessian has eigenvalues ≤ 1/2).
    """
    lin = linear_params(head)
    if lin is not None and loss_fn.__name__ == "cross_entropy":
        return float(torch.linalg.matrix_norm(lin[0], ord=2) ** 2 / 2)
    g = torch.Generator(device="cpu").manual_seed(seed)
    idx = torch.randperm(len(z0), generator=g)[:max_samples].to(z0.device)
    z, yy = z0[idx].detach(), y[idx]
    v = torch.randn(z.shape, generator=g).to(z)
    v = v / _bcast(_sqnorm(v).sqrt().clamp_min(1e-12), v)
    lam = torch.zeros(len(z), device=z.device)
    for _ in range(n_iter):
        with torch.enable_grad():
            zz = z.clone().requires_grad_(True)
            (gr,) = torch.autograd.grad(loss_fn(head(zz), yy).sum(), zz, create_graph=True)
            if not gr.requires_grad:  # piecewise-linear in z: zero curvature
                return 0.0
            (hv,) = torch.autograd.grad((gr * v).sum(), zz)
        lam = _sqnorm(hv).sqrt()
        v = hv / _bcast(lam.clamp_min(1e-12), hv)
    return float(lam.max().item()) * 1.5


def gradient_ascent(head: Head, loss_fn: LossFn, z0: torch.Tensor, y: torch.Tensor, gamma: torch.Tensor,
                    smoothness: float, z_init: torch.Tensor | None = None, steps: int = 20, tol: float = 1e-6,
                    project: Callable[[torch.Tensor], torch.Tensor] | None = None, grow: float = 1.5,
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Maximise ``ℓ(h(z), y) − γ_i‖z − z0_i‖²`` per sample by monotone gradient ascent.

    ``gamma``: one value per sample (shape [n]). Returns ``(psi, loss, sqdist, z)`` per sample, where
    ``psi = loss − γ·sqdist`` at the returned z. Never returns a point worse than z0 (ψ ≥ ℓ(z0)).
    Stops after ``steps`` iterations or when the mean objective improved by at most ``tol`` in a step.
    Per-sample step sizes start at ``1/(2γ + L)``, grow by ``grow`` after an accepted step and halve after
    a rejected one (the global bound L is pessimistic far from the decision boundary, where the loss is flat).
    """
    eta = 1.0 / (2.0 * gamma + smoothness)
    loss0, grad0 = loss_and_grad(head, loss_fn, z0, y)
    if z_init is None:  # state: the displacement d = z − z0
        d, loss, grad = torch.zeros_like(z0), loss0, grad0
    else:
        d = (z_init - z0).detach()
        loss, grad = loss_and_grad(head, loss_fn, z0 + d, y)
    d2 = _sqnorm(d)
    obj = loss - gamma * d2
    for _ in range(steps):
        # d + η(∇ℓ − 2γd) = (1 − 2γη)d + η∇ℓ
        d_new = _bcast(1.0 - 2.0 * gamma * eta, d) * d + _bcast(eta, d) * grad
        if project is not None:
            d_new = project(z0 + d_new) - z0
        loss_n, grad_n = loss_and_grad(head, loss_fn, z0 + d_new, y)
        d2_n = _sqnorm(d_new)
        obj_n = loss_n - gamma * d2_n
        ok = obj_n >= obj
        gain = float(torch.where(ok, obj_n - obj, torch.zeros_like(obj)).mean())
        bad = (~ok).nonzero().squeeze(1)
        if len(bad):  # keep the old state of rejected samples
            d_new[bad], grad_n[bad] = d[bad], grad[bad]
            loss_n[bad], d2_n[bad], obj_n[bad] = loss[bad], d2[bad], obj[bad]
        d, grad, loss, d2, obj = d_new, grad_n, loss_n, d2_n, obj_n
        eta = torch.where(ok, eta * grow, eta / 2)
        if gain <= tol:
            break
    worse = (obj < loss0).nonzero().squeeze(1)  # a warm start led to a worse local maximum than staying put
    if len(worse):
        d[worse], loss[worse], d2[worse] = 0.0, loss0[worse], 0.0
    return loss - gamma * d2, loss, d2, z0 + d


def _affine_pieces(z0: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor):
    """Rival directions ``a_j = w_j − w_y`` [n, C, d] (as needed) and values ``f_j − f_y`` [n, C]."""
    logits = z0 @ W.T + b
    f_y = logits.gather(1, y[:, None])
    return logits - f_y


def _rival_sqnorms(W: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``‖w_j − w_{y_i}‖²`` [n, C] from the Gram matrix (no [n, C, d] tensor)."""
    gram = W @ W.T
    sq = gram.diagonal()
    return (sq[None, :] + sq[y][:, None] - 2.0 * gram[y]).clamp_min(0.0)


def hinge_linear(z0: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor, gamma: torch.Tensor,
                 margin: float = 1.0, return_z: bool = False):
    """Exact ``ψ(γ)`` for the Crammer–Singer hinge and an affine head; returns ``(psi, loss, sqdist, z|None)``.

    ``gamma`` [n] (> 0). Pieces: ``0`` and, for each rival j, ``margin + (f_j − f_y)(z)`` whose slope
    is ``a_j = w_j − w_y``. Each piece's sup is ``value(z0) + ‖a_j‖²/(4γ)`` at ``z0 + a_j/(2γ)``.
    """
    diff = _affine_pieces(z0, y, W, b)  # [n, C]
    a2 = _rival_sqnorms(W, y)  # [n, C] ‖w_j − w_y‖², 0 at j = y
    val = margin + diff + a2 / (4.0 * gamma[:, None])
    val = val.scatter(1, y[:, None], float("-inf"))
    best, j = val.max(1)
    active = best > 0
    psi = torch.where(active, best, torch.zeros_like(best))
    a2j = a2.gather(1, j[:, None]).squeeze(1)
    d2 = torch.where(active, a2j / (4.0 * gamma.square()), torch.zeros_like(best))
    loss = psi + gamma * d2
    z = None
    if return_z:
        a = W[j] - W[y]
        z = z0 + torch.where(active[:, None], a / (2.0 * gamma[:, None]), torch.zeros_like(a))
    return psi, loss, d2, z


def zero_one_linear_distance(z0: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor,
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared distance from each z0 to the misclassification region of an affine head, and the closest point.

    Misclassified samples (ties included) have distance 0 and are returned unchanged; the closest
    point of a correct sample lies on the boundary with its nearest rival (moved 1e-6 beyond it).
    """
    diff = _affine_pieces(z0, y, W, b)  # f_j − f_y ≤ 0 for a correct sample
    a2 = _rival_sqnorms(W, y)
    margin = (-diff).clamp_min(0.0)
    d2 = torch.where(a2 > 0, margin.square() / a2.clamp_min(1e-30), torch.full_like(a2, float("inf")))
    d2 = d2.scatter(1, y[:, None], float("inf"))
    d2min, j = d2.min(1)
    aj = W[j] - W[y]
    step = (margin.gather(1, j[:, None]) / a2.gather(1, j[:, None]).clamp_min(1e-30)) * (1 + 1e-6)
    z = z0 + step * aj
    return d2min, z
