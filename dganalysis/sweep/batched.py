"""Batched runs: M jobs of one network trained as one vmapped model on one device (``torch.func``).

Why: at DomainBed's batch sizes the small networks of its sweeps keep a GPU waiting on kernel launches and Python
(the issue's measurement: 8× the batch ran 7.2× faster). M runs whose shapes agree (same dataset, network,
algorithm and batch; differing seeds, trials, test domains, learning rates, weight decays) can share every launch:
their weights are stacked along a new leading dimension and one ``vmap``-ed forward/backward computes all M
losses and gradients at once; packing processes (:mod:`dganalysis.sweep.packing`) overlaps launches, this removes
them.

Design, and why each run's records match :func:`dganalysis.training.train.run_job`'s for that job alone:

- **Data and initialisation.** Each run builds its own data (:func:`~dganalysis.training.train.build_data`: its splits,
  hparams and seed) and its own model (:func:`~dganalysis.training.train.build_algorithm`, which seeds torch's global
  generator with the job seed right before creating it), so the initial weights are those ``run_job`` draws.
  Each run draws its minibatches from its own splits on its own ``torch.Generator`` seeded with its job seed, in
  ``run_job``'s order (one batch per training domain per step, through the same input pipeline), so the runs see
  the minibatch stream they would see alone.
- **Forward/backward.** :func:`torch.func.stack_module_state` stacks the M networks' parameters and buffers; a
  copy of the network on the ``meta`` device is called with them through :func:`torch.func.functional_call`, under
  :func:`torch.func.vmap` over the run dimension, giving M mean cross-entropies (ERM's loss). The gradient of
  their *sum* with respect to the stacked weights is, slice by slice, each run's own gradient (the runs share no
  weights), computed by one backward.
- **Optimiser.** ERM's optimiser is Adam (:func:`dganalysis.training.optim.make_optimizer`, DomainBed's default); the step
  here is ``torch.optim.Adam``'s (``_single_tensor_adam`` / ``_multi_tensor_adam``: L2 weight decay added to the
  gradient, ``lerp`` of the first moment, bias corrections, ``eps`` added after the bias-corrected square root)
  on the stacked tensors with a per-run learning rate and weight decay broadcast over the run dimension. The
  learning rate of each step is read from each run's own optimiser, and each run's own scheduler
  (:func:`dganalysis.training.optim.make_scheduler`: constant, step or cosine) is stepped after the update, as ERM's
  ``update`` does, so schedules match too.
- **Records.** At every checkpoint the stacked weights are copied back into each run's own algorithm and
  :func:`~dganalysis.training.train.evaluate` and :func:`~dganalysis.training.train.write_checkpoint` evaluate it and
  write its record exactly as ``run_job`` would (its ``step_time`` is the batched step's wall time, shared by the
  M runs); ``finish_job`` saves ``model.pt`` and ``done``. Each record's ``packing`` says ``batched: M``.
- **Failures.** A run whose loss is not finite is written ``failed`` (as ``run_job`` raises) and the others go
  on: its weights receive only its own gradient, so they cannot reach the other runs.

What differs from ``run_job`` is float rounding only: a vmapped linear layer is a batched matrix product and a
vmapped convolution a grouped one, whose sums are ordered differently from the unbatched kernels', so fp32
results agree to a few ulps per step (the tests hold losses and weights to a relative 1e-5 after 6 steps of the tiny
MLP, measured ≤ 1e-7; accuracies equal unless a prediction sits on a tie). Adam's normalised step turns last-bit
differences of near-zero gradients into ±lr, so on convolutional networks the runs drift apart as two thread counts
of ``run_job`` do (:mod:`dganalysis.threads`): DomainBed's MNIST CNN in fp32, measured on the CPU, loss within
relative 1.1e-4 after 2–4 steps and one of 24 evaluation accuracies different at step 2; under bf16 autocast they
track at bf16's precision only (loss within ~5e-3). Same experiment, other last bits: the records are the job's
records in distribution, equal in their first steps.

Scope, refused by name (:func:`batch_problem`, :class:`BatchRefused`): ERM only (its update is one cross-entropy
and one Adam step; other algorithms have their own losses, several optimisers or steps); ``domainbed_exact`` jobs
(they replay DomainBed's draws run by run; they may share a device through packing, never a batch); optimisers other
than Adam; networks that draw random numbers while training (dropout > 0: ``run_job`` draws the masks from the
global generator, which a vmapped model cannot replay run by run); and runs whose parameter and buffer names,
shapes and dtypes, input shape or examples per step differ. Evaluation runs run by run (at checkpoints only).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from dganalysis.training.job import Job
from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)

#: the algorithms the batched engine trains
BATCHABLE_ALGORITHMS = ("ERM",)
#: hparams that may differ between the runs of one batch (they enter the optimiser step, not the shapes)
PER_RUN_HPARAMS = ("lr", "weight_decay")
#: hparams naming a dropout probability (a run with one above 0 is not batched)
DROPOUT_HPARAMS = ("mlp_dropout", "resnet_dropout", "vit_dropout")


class BatchRefused(ConfigError):
    """Jobs the batched engine does not train together (each names why); they train alone instead."""


# --------------------------------------------------------------------------- planning
def batch_problem(job: Job, hparams: Mapping[str, Any] | None = None) -> str | None:
    """Why ``job`` cannot be trained in a batch (None: it can)."""
    if job.domainbed_exact:
        return (f"job {job.job_id}: domainbed_exact replays DomainBed's random draws run by run; it may share a device "
                "(packing) but is never batched")
    if job.algorithm not in BATCHABLE_ALGORITHMS:
        return (f"job {job.job_id}: algorithm {job.algorithm}: the batched engine trains "
                f"{', '.join(BATCHABLE_ALGORITHMS)} only (one loss, one Adam step per update)")
    if hparams is None:
        from dganalysis.training.job_draw import job_hparams

        hparams = job_hparams(job)
    if hparams.get("optimizer", "adam") != "adam":
        return f"job {job.job_id}: optimizer {hparams['optimizer']!r}: the batched engine steps Adam only"
    drop = [k for k in DROPOUT_HPARAMS if float(hparams.get(k, 0.0) or 0.0) > 0]
    if drop:
        return (f"job {job.job_id}: {', '.join(f'{k}={hparams[k]}' for k in drop)}: dropout masks come from the global "
                "generator run by run, which a vmapped model cannot replay")
    return None


def batch_key(job: Job) -> str | None:
    """Jobs with equal keys may share a batch (None: the job trains alone): dataset and its keywords, algorithm,
    number of training domains, steps, checkpoint frequency and steps evaluated, and every hparam but :data:`PER_RUN_HPARAMS`."""
    from dganalysis import io
    from dganalysis.training.job_draw import job_hparams

    hp = job_hparams(job)
    if batch_problem(job, hp) is not None:
        return None
    shared = {k: v for k, v in hp.items() if k not in PER_RUN_HPARAMS}
    return json.dumps([job.dataset, dict(job.dataset_kwargs), job.algorithm, len(job.train_domains), job.steps,
                       job.checkpoint_freq, job.evaluate_at, shared], sort_keys=True, default=io._json_default)


def plan_batches(jobs: Sequence[Job], max_runs: int) -> list[Job | list[Job]]:
    """``jobs`` as units to run: lists of up to ``max_runs`` jobs of one :func:`batch_key` (in the order their first
    job comes), and single jobs (a key of one job, or none)."""
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1:
        raise ConfigError(f"batch runs: expected an integer ≥ 1, got {max_runs!r}")
    groups: dict[str, list[Job]] = {}
    order: list[Any] = []
    for job in jobs:
        key = batch_key(job) if max_runs > 1 else None
        if key is None:
            order.append(job)
            continue
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(job)
    units: list[Job | list[Job]] = []
    for item in order:
        if isinstance(item, Job):
            units.append(item)
            continue
        group = groups[item]
        for i in range(0, len(group), max_runs):
            chunk = group[i:i + max_runs]
            units.append(chunk if len(chunk) > 1 else chunk[0])
    return units


# --------------------------------------------------------------------------- the engine
def _signature(module: torch.nn.Module) -> list[tuple[str, tuple[int, ...], str]]:
    return [(n, tuple(t.shape), str(t.dtype)) for n, t in [*module.named_parameters(), *module.named_buffers()]]


def _check_models(jobs: Sequence[Job], algorithms, datas) -> None:
    """Refuse (:class:`BatchRefused`) models that do not stack, or that draw random numbers while training."""
    problems = []
    sig0 = _signature(algorithms[0].network)
    shape0 = tuple(datas[0].dataset.input_shape)
    per_step0 = int(datas[0].hparams["batch_size"]) * len(datas[0].train_splits)
    for job, alg, data in zip(jobs, algorithms, datas):
        if type(alg.optimizer) is not torch.optim.Adam:
            problems.append(f"job {job.job_id}: optimiser {type(alg.optimizer).__name__}; the batched engine steps Adam")
        elif len(alg.optimizer.param_groups) != 1 or alg.optimizer.param_groups[0].get("amsgrad"):
            problems.append(f"job {job.job_id}: Adam with several parameter groups or amsgrad")
        drops = [n for n, m in alg.network.named_modules()
                 if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]
        if drops:
            problems.append(f"job {job.job_id}: dropout in {', '.join(drops[:3])} (masks cannot be replayed per run)")
        if _signature(alg.network) != sig0:
            problems.append(f"job {job.job_id}: its network's parameters or buffers differ in name, shape or dtype "
                            f"from job {jobs[0].job_id}'s")
        if tuple(data.dataset.input_shape) != shape0:
            problems.append(f"job {job.job_id}: input shape {tuple(data.dataset.input_shape)} ≠ {shape0}")
        per_step = int(data.hparams["batch_size"]) * len(data.train_splits)
        if per_step != per_step0:
            problems.append(f"job {job.job_id}: {per_step} examples per step ≠ {per_step0} (batch size × training "
                            "domains)")
    if problems:
        raise BatchRefused("batched runs refused: " + "; ".join(problems))


def check_batch(jobs: Sequence[Job]) -> None:
    """Refuse (:class:`BatchRefused`, naming every problem) jobs that cannot share a batch, before any work:
    :func:`batch_problem` of each, and differing :func:`batch_key`."""
    problems = [p for p in (batch_problem(j) for j in jobs) if p]
    if not problems:
        keys = [batch_key(j) for j in jobs]
        odd = [j.job_id for j, k in zip(jobs, keys) if k != keys[0]]
        if odd:
            problems.append(f"jobs {', '.join(odd)} differ from job {jobs[0].job_id} in dataset, algorithm, training "
                            "domains count, steps, checkpoint frequency, evaluate_at or a shape-setting hparam (only "
                            f"{', '.join(PER_RUN_HPARAMS)}, seeds and domains may differ)")
    if problems:
        raise BatchRefused("batched runs refused: " + "; ".join(problems))


class _StackedAdam:
    """``torch.optim.Adam``'s step on stacked weights ``[M, ...]``, with a learning rate and weight decay per run."""

    def __init__(self, params: Mapping[str, torch.Tensor], betas: tuple[float, float], eps: float) -> None:
        self.beta1, self.beta2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)
        self.exp_avg = {k: torch.zeros_like(p, memory_format=torch.preserve_format) for k, p in params.items()}
        self.exp_avg_sq = {k: torch.zeros_like(p, memory_format=torch.preserve_format) for k, p in params.items()}
        self.steps = 0

    @torch.no_grad()
    def step(self, params: Mapping[str, torch.Tensor], grads: Mapping[str, torch.Tensor], lrs: Sequence[float],
             weight_decays: Sequence[float]) -> None:
        self.steps += 1
        bias1 = 1 - self.beta1 ** self.steps
        bias2_sqrt = (1 - self.beta2 ** self.steps) ** 0.5
        for k, p in params.items():
            g = grads[k]
            shape = (len(lrs),) + (1,) * (p.ndim - 1)
            neg_step = torch.tensor([-(lr / bias1) for lr in lrs], dtype=p.dtype, device=p.device).view(shape)
            if any(wd != 0 for wd in weight_decays):
                g = g + torch.tensor(list(weight_decays), dtype=p.dtype, device=p.device).view(shape) * p
            m, v = self.exp_avg[k], self.exp_avg_sq[k]
            m.lerp_(g, 1 - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            denom = (v.sqrt() / bias2_sqrt).add_(self.eps)
            p.add_(neg_step * m / denom)


def _copy_into(algorithms, params: Mapping[str, torch.Tensor], buffers: Mapping[str, torch.Tensor],
               alive: Sequence[bool]) -> None:
    """Slice ``i`` of the stacked weights into run ``i``'s own network (the live runs)."""
    with torch.no_grad():
        for i, alg in enumerate(algorithms):
            if not alive[i]:
                continue
            for n, t in alg.network.named_parameters():
                t.copy_(params[n][i])
            for n, t in alg.network.named_buffers():
                t.copy_(buffers[n][i])


def run_batched(
    jobs: Sequence[Job | Mapping[str, Any]],
    job_dirs: Sequence[str | Path],
    data_dir: str | Path | None = None,
    device: str | torch.device | None = None,
    precision: str = "auto",
    threads: int | None = None,
    extra_fields: Mapping[str, Any] | None = None,
    heartbeats: Sequence[Callable[[], None] | None] | None = None,
    eval_batch_size: int | None = None,
    compile: bool = False,
) -> dict[str, BaseException | None]:
    """Train ``jobs`` together (see the module doc) into ``job_dirs``; returns per job id None (finished: records,
    ``done``) or the exception that failed it (its folder holds no ``done``; the caller writes ``failed``).

    Refuses (:class:`BatchRefused`) before training, having written nothing but ``spec.json``, jobs that cannot
    share a batch. ``extra_fields`` are added to every record, with ``packing.batched`` set to M. ``compile`` is
    not applied (a vmapped functional call is not the module ``torch.compile`` would wrap); the runs train eagerly.
    """
    from torch.func import functional_call, stack_module_state, vmap

    from dganalysis.sweep.packing import PACKING_KEY, packing_field
    from dganalysis.training.train import (
        algorithm_precision,
        build_algorithm,
        build_data,
        evaluate,
        finish_job,
        job_threads,
        make_runtime,
        record_fields,
        runtime_stamp,
        start_job_dir,
        write_checkpoint,
    )

    jobs = [j if isinstance(j, Job) else Job.from_dict(j) for j in jobs]
    if len(jobs) != len(job_dirs):
        raise ConfigError(f"run_batched: {len(jobs)} jobs but {len(job_dirs)} job folders")
    if not jobs:
        return {}
    check_batch(jobs)
    heartbeats = list(heartbeats) if heartbeats is not None else [None] * len(jobs)
    if compile:
        log.info("batched runs: compile ignored (the vmapped model trains eagerly)")
    m = len(jobs)
    t_start = time.time()
    runtime = make_runtime(device, algorithm_precision(jobs[0].algorithm, precision), eval_batch_size, threads)
    dirs = [start_job_dir(job, d, runtime_stamp(runtime)) for job, d in zip(jobs, job_dirs)]
    outcome: dict[str, BaseException | None] = {j.job_id: None for j in jobs}
    alive = [True] * m
    with job_threads(runtime):
        datas = []
        try:
            for job in jobs:
                datas.append(build_data(job, data_dir, runtime))
            algorithms = [build_algorithm(job, data, runtime) for job, data in zip(jobs, datas)]
            _check_models(jobs, algorithms, datas)
            extra = dict(extra_fields or {})
            pack = dict(extra.get(PACKING_KEY) or packing_field(1, False))
            extra[PACKING_KEY] = {**pack, "batched": m}
            statics = [{**record_fields(job, data, runtime, d, data_dir), **extra}
                       for job, data, d in zip(jobs, datas, dirs)]
            log.info("batched runs: %d %s jobs as one vmapped model on %s (%s)", m, jobs[0].algorithm,
                     statics[0]["device"], ", ".join(j.job_id for j in jobs))

            params, buffers = stack_module_state([a.network for a in algorithms])
            # contiguous stacks: vmap cannot query channels_last contiguity (GroupNorm asks), and the runs' own
            # channels_last weights stack into tensors of mixed strides
            params = {k: v.detach().contiguous().requires_grad_() for k, v in params.items()}
            buffers = {k: v.contiguous() for k, v in buffers.items()}
            base = copy.deepcopy(algorithms[0].network).to("meta")
            group = algorithms[0].optimizer.param_groups[0]
            adam = _StackedAdam(params, group["betas"], group["eps"])
            names = list(params)

            def run_loss(p, b, x, y):
                return F.cross_entropy(functional_call(base, (p, b), (x,)), y)

            batched_loss = vmap(run_loss, in_dims=(0, 0, 0, 0))
            gens = []
            for data in datas:
                g = torch.Generator(device=runtime.device)
                g.manual_seed(data.seed)
                gens.append(g)
            batch_sizes = [int(d.hparams["batch_size"]) for d in datas]
            per_epoch = [min(len(s) for s in d.train_splits) / bs for d, bs in zip(datas, batch_sizes)]
            windows: list[dict[str, list[float]]] = [defaultdict(list) for _ in range(m)]
            step_times: list[float] = []
            steps = jobs[0].steps
            for step in range(steps):
                t0 = time.perf_counter()
                xs, ys = [], []
                for data, g, bs in zip(datas, gens, batch_sizes):
                    mb = [s.sample(bs, g) for s in data.train_splits]
                    xs.append(torch.cat([x for x, _ in mb]))
                    ys.append(torch.cat([y for _, y in mb]))
                x, y = torch.stack(xs), torch.stack(ys)
                with torch.autocast(runtime.device.type, dtype=torch.bfloat16, enabled=runtime.autocast):
                    losses = batched_loss(params, buffers, x, y)
                grads = dict(zip(names, torch.autograd.grad(losses.sum(), [params[n] for n in names])))
                lrs = [a.optimizer.param_groups[0]["lr"] for a in algorithms]
                wds = [a.optimizer.param_groups[0]["weight_decay"] for a in algorithms]
                adam.step(params, grads, lrs, wds)
                with warnings.catch_warnings():  # "scheduler.step() before optimizer.step()": ours stepped the weights
                    warnings.simplefilter("ignore", UserWarning)
                    for a in algorithms:
                        a.scheduler.step()
                values = losses.detach().float().cpu().tolist()
                step_times.append(time.perf_counter() - t0)
                for i, v in enumerate(values):
                    if not alive[i]:
                        continue
                    if not math.isfinite(v):
                        alive[i] = False
                        outcome[jobs[i].job_id] = FloatingPointError(
                            f"job {jobs[i].job_id}: loss = {v} at step {step} (non-finite)")
                        continue
                    windows[i]["loss"].append(v)
                if not any(alive):
                    break
                if jobs[0].records_at(step):
                    _copy_into(algorithms, params, buffers, alive)
                    for i in range(m):
                        if not alive[i]:
                            continue
                        try:
                            accs = evaluate(algorithms[i], datas[i].splits, runtime.eval_batch_size, runtime.autocast,
                                            jobs[i].unevaluated_in_splits(datas[i].train_idx))
                            write_checkpoint(jobs[i], step, step / per_epoch[i], windows[i], step_times, accs,
                                             datas[i], runtime, statics[i], dirs[i] / "results.jsonl", t_start,
                                             heartbeats[i])
                        except Exception as e:  # noqa: BLE001 - e.g. the claim was lost: that run stops
                            alive[i] = False
                            outcome[jobs[i].job_id] = e
                        windows[i].clear()
                    step_times.clear()
            for i in range(m):
                if alive[i]:
                    try:
                        finish_job(jobs[i], algorithms[i], datas[i], dirs[i], t_start, heartbeats[i])
                    except Exception as e:  # noqa: BLE001
                        outcome[jobs[i].job_id] = e
        finally:
            for data in datas:
                data.splits.close()
    return outcome


# --------------------------------------------------------------------------- what a sweep worker runs
def execute_batch(job_specs: Sequence[Mapping[str, Any]], job_dirs: Sequence[str], data_dir: str | None,
                  options: Mapping[str, Any], policies: Sequence[Mapping[str, Any]], *,
                  run_alone: Callable[..., dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Claim and train jobs as one batch; ``{job_id: {status, elapsed, error}}`` as
    :func:`dganalysis.sweep.launcher.execute_job` returns per job. A job found finished, failed-and-not-retried or
    alone after the claims goes through ``run_alone`` (the launcher passes its ``execute_job``); jobs the engine
    refuses (:class:`BatchRefused`) train alone, each through ``run_alone``."""
    from dganalysis.plugins import import_plugins
    from dganalysis.sweep.store import ClaimInfo, ClaimLost, append_history, failed_stamp, job_state, try_claim
    from dganalysis.training.train import clear_job_dir, write_failed

    options = dict(options)
    import_plugins(options.pop("imports", ()))
    options.pop("progress", None)
    jobs = [Job.from_dict(s) for s in job_specs]
    results: dict[str, dict[str, Any]] = {}
    claimed = []
    alone = []
    for job, d, pol in zip(jobs, job_dirs, policies):
        claim = try_claim(d, pol.get("lease_s"))
        if isinstance(claim, ClaimInfo):
            results[job.job_id] = {"status": "busy", "elapsed": None, "error": f"held by {claim.describe()}"}
            continue
        state = job_state(job, Path(d).parent)
        retry = pol.get("retry_failed", True) and failed_stamp(d) == pol.get("failed_seen")
        if state == "done" or ((Path(d) / "failed").exists() and not retry):
            claim.release()
            alone.append((job, d, pol))
            continue
        claimed.append((job, d, pol, claim))
    if len(claimed) == 1:
        job, d, pol, claim = claimed.pop()
        claim.release()
        alone.append((job, d, pol))
    t0 = time.time()
    if claimed:
        try:
            for _job, d, _, claim in claimed:
                clear_job_dir(d)
                append_history(d, "start", token=claim.token)
            outcome = run_batched([c[0] for c in claimed], [c[1] for c in claimed], data_dir,
                                  heartbeats=[c[3].check for c in claimed], **options)
        except BatchRefused as e:
            log.info("%s; training them alone", e)
            for job, d, pol, claim in claimed:
                claim.release()
                alone.append((job, d, pol))
            claimed = []
            outcome = {}
        except Exception as e:  # noqa: BLE001 - the whole batch failed (e.g. out of memory)
            outcome = {c[0].job_id: e for c in claimed}
        try:
            for job, d, _, claim in claimed:
                err = outcome.get(job.job_id)
                if err is None:
                    append_history(d, "done", token=claim.token, seconds=f"{time.time() - t0:.1f}")
                    results[job.job_id] = {"status": "done", "elapsed": time.time() - t0, "error": ""}
                    continue
                if not isinstance(err, ClaimLost):
                    try:
                        claim.check()
                        write_failed(d, err)
                        append_history(d, "failed", token=claim.token, error=type(err).__name__)
                    except (OSError, ClaimLost):  # pragma: no cover - the store is broken, or the job was taken over
                        log.exception("could not write %s/failed", d)
                log.warning("job %s failed: %s: %s", job.job_id, type(err).__name__, err)
                results[job.job_id] = {"status": "failed", "elapsed": time.time() - t0,
                                       "error": f"{type(err).__name__}: {err}"}
        finally:
            for c in claimed:
                c[3].release()
    for job, d, pol in alone:
        results[job.job_id] = run_alone(job.to_dict(), d, data_dir, options, pol)
    return results
