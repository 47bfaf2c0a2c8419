"""Worst-case loss in the input space, and its comparison with the representation space (the WC-DG poster, Key results).

``WC_x(ρ) = sup_{P: W2(P, Q) ≤ ρ} E_P ℓ(h(g(x)), y)``, solved by the same dual as
:mod:`dganalysis.dro.worst_case` with the inner sup over images: projected gradient ascent through the whole
network, kept in the image domain ``[0, 1]^D`` (``clip``; the dual of Sinha et al. holds on the compact
domain, so the sup is over valid images). Distances are Euclidean over all pixels (ρ = 1 moves one pixel
from black to white, or every pixel of a 28×28 image by 1/28).

**How the two spaces are compared** (the poster claims the representation-space worst case is not an
overestimate of the input-space one). Radii in the two spaces have different units, so equal ρ are not
comparable. We map each input-space worst case into the representation: if P_x is the input worst case
at radius ρ_x with maximisers x* (in practice: the best feasible distribution our solver found, a
mixture of maximisers, see ``primal_loss``), then g#P_x is at W2 distance at most
``ρ_z = (E‖g(x*) − g(x0)‖²)^½`` from g#Q (the pairs (g(x0), g(x*)) are a coupling), so it is feasible for
the representation problem at radius ρ_z and ``WC_z(ρ_z) ≥ E_{P_x} ℓ``; with exact sups ``≥ WC_x(ρ_x)``.
:func:`compare_input_representation` reports both values at matched radii; the representation worst
case overestimates the input one by ``WC_z(ρ_z) − WC_x(ρ_x) ≥ 0`` (small gap = "not an overestimate").
With gradient ascent both are estimates (local maxima), so small negative gaps can occur.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from dganalysis.dro.losses import LossFn, loss_name
from dganalysis.dro.worst_case import (
    DualConfig,
    _dual_curve,
    _Problem,
    check_config,
    check_inputs,
    check_scale,
    representation_scale,
    worst_case_curve,
)
from dganalysis.validation import ConfigError, check_callable, check_interval, check_rhos

Net = Callable[[torch.Tensor], torch.Tensor]

#: Fewer iterations than in the representation space: each step is a pass through the whole network.
INPUT_CONFIG = DualConfig(grid_ratio=1.6, max_grid=40, first_steps=30, steps=8, refine_iters=2, tol=1e-5)


def input_worst_case_curve(x: torch.Tensor, y: torch.Tensor, network: Net, rhos: Sequence[float],
                           loss: str | LossFn = "ce", featurizer: Net | None = None, rep_scale: str | float = "std",
                           clip: tuple[float, float] | None = (0.0, 1.0), config: DualConfig | None = None,
                           progress: bool = False) -> pd.DataFrame:
    """Worst-case loss vs ρ when the images x themselves are transported (ρ in pixel units: Euclidean distance
    over all pixel values in [0, 1], no scale).

    ``x`` [n, channels, height, width] (or [n, ...]) floats in ``clip`` (default [0, 1]); ``y`` [n] integer
    labels; ``network``: x → logits [n, C] (e.g. ``algorithm.predict``); ``rhos`` radii ≥ 0 (pixel units);
    ``loss`` ``"ce"`` or ``"hinge"`` (the 0-1 loss has no gradient and is refused) or a callable;
    ``featurizer``: x → z, when given the frame gets ``rep_transport`` = (E‖g(x*) − g(x0)‖²)^½ / s at each ρ's
    optimal γ, s from ``rep_scale`` computed on g(x0) (default ``"std"`` as the representation-space siblings;
    see :func:`dganalysis.dro.worst_case.representation_scale`) and ``rep_scale`` (s). Other columns as
    :func:`dganalysis.dro.worst_case.worst_case_curve` (``scale`` is 1: pixel units).
    """
    f = "input_worst_case_curve"
    x, y = check_inputs(f, x, y, network, loss, z_name="x")
    r = check_rhos(rhos, func=f)
    rep_scale = check_scale(rep_scale, "rep_scale", func=f)
    check_config(config, f)
    if featurizer is not None:
        check_callable(featurizer, "featurizer", func=f, what="a featurizer x → z (a callable) or None")
    if clip is not None:
        clip = check_interval(clip, "clip", func=f)
    if not callable(loss) and loss_name(loss) == "01":
        raise ConfigError(f"{f}: parameter 'loss': the input-space worst case needs a differentiable loss ('ce' or "
                          "'hinge'), got '01'")
    cfg = config or INPUT_CONFIG
    x = x.detach()
    project = (lambda t: t.clamp(*clip)) if clip is not None else None
    stats = None
    s_rep = 1.0
    if featurizer is not None:
        with torch.no_grad():
            s_rep = representation_scale(featurizer(x), rep_scale)

        def stats(xs: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
            return (featurizer(xs) - featurizer(x0)).flatten(1).square().sum(1)

    res = _dual_curve(_Problem(x, y, network, loss, cfg, project=project, stats_fn=stats), r, progress)
    out = pd.DataFrame({
        "rho": r, "worst_case_loss": res["worst_case_loss"], "gamma": res["gamma"],
        "transport_distance": res["transport_distance"], "primal_loss": res["primal_loss"],
        "nominal": res["nominal"], "loss": "custom" if callable(loss) else loss_name(loss), "scale": 1.0,
    })
    if featurizer is not None:
        out["rep_transport"] = np.sqrt(np.maximum(res["extra"], 0.0)) / s_rep
        out["rep_scale"] = s_rep
    return out


def compare_input_representation(x: torch.Tensor, y: torch.Tensor, featurizer: Net, head: Net,
                                 rhos_input: Sequence[float], loss: str | LossFn = "ce",
                                 rep_scale: str | float = "std", input_config: DualConfig | None = None,
                                 rep_config: DualConfig | None = None, progress: bool = False) -> pd.DataFrame:
    """Input-space and representation-space worst cases at matched radii (see the module docstring).

    Returns one row per input radius: ``rho_input``, ``input_wc`` (input dual value), ``input_primal``
    (loss of the feasible input-space distribution P_x found), ``rho_rep`` (the representation transport
    it induces, in units of ``rep_scale``), ``rep_wc`` (representation worst case at ``rho_rep``),
    ``gap = rep_wc − input_primal`` (≥ 0 in theory, since g#P_x is feasible there), ``nominal``, ``loss``.
    ``x`` [n, ...] images in [0, 1], ``y`` [n] integer labels, ``featurizer`` x → z, ``head`` z → logits [n, C],
    ``rhos_input`` radii ≥ 0 in pixel units, ``rep_scale`` the representation's unit (default ``"std"``).
    """
    f = "compare_input_representation"
    check_callable(featurizer, "featurizer", func=f, what="a featurizer x → z (a callable)")
    check_callable(head, "head", func=f, what="a head z → logits (a callable)")
    check_inputs(f, x, y, lambda t: head(featurizer(t)), loss, z_name="x")
    check_rhos(rhos_input, "rhos_input", func=f)
    check_scale(rep_scale, "rep_scale", func=f)
    check_config(input_config, f, "input_config")
    check_config(rep_config, f, "rep_config")
    def network(t: torch.Tensor) -> torch.Tensor:
        return head(featurizer(t))

    xin = input_worst_case_curve(x, y, network, rhos_input, loss, featurizer, rep_scale, config=input_config,
                                 progress=progress)
    with torch.no_grad():
        z = featurizer(x)
    rep = worst_case_curve(z, y, head, xin["rep_transport"].to_numpy(), loss, rep_scale, rep_config, progress)
    return pd.DataFrame({
        "rho_input": xin["rho"], "input_wc": xin["worst_case_loss"], "input_primal": xin["primal_loss"],
        "rho_rep": xin["rep_transport"], "rep_wc": rep["worst_case_loss"].to_numpy(),
        "gap": rep["worst_case_loss"].to_numpy() - xin["primal_loss"], "nominal": xin["nominal"], "loss": xin["loss"],
    })
