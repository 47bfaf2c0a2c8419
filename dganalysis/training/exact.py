"""``domainbed_exact`` training: one job run as DomainBed's ``scripts/train.py`` runs it, draw for draw.

Gulrajani & Lopez-Paz (2021) train with ``train.py``; for the same arguments this mode makes the same random draws in
the same order, so that on a CPU in fp32 a deterministic algorithm's (ERM's) records equal DomainBed's to float
tolerance (``tests/reference/test_domainbed_train_e2e.py`` checks it). In order:

1. ``random.seed``, ``np.random.seed``, ``torch.manual_seed`` with the run's DomainBed seed
   (:meth:`dganalysis.training.job.Job.domainbed_seed`: DomainBed's sweep's ``seed_hash`` of the arguments, or ``Job.seed``).
2. The dataset's own draws, on the global generator (:func:`domainbed_tensors`): DomainBed builds its dataset
   after seeding. RotatedMNIST/ColoredMNIST: :func:`dganalysis.data.domainbed_mnist.replay_draws` repeats the
   shuffle and colouring draws (the images are ours, equal to DomainBed's, read as uint8 / 255). Debug28/Debug224:
   the data *are* the draws (``torch.randn`` images, ``torch.randint`` labels, environment after environment), made
   here on the global generator as DomainBed makes them, and trained on as those floats (not the uint8 copy our
   :mod:`dganalysis.data.debug` stores for the default mode, which is drawn from seed 0 on its own generator).
3. The in/out splits (``split_dataset``, numpy's ``RandomState(seed_hash(trial_seed, i))``); a test environment's
   ``in`` split is split once more by the same seed into its ``uda`` split (the first
   ``int(len(in) * uda_holdout_fraction)`` keys; empty at DomainBed's default 0) and the new ``in`` split (the rest,
   so reshuffled even at 0). DomainBed keeps the non-empty ``uda`` splits in environment order.
4. One ``InfiniteDataLoader`` per training environment, in environment order, then one per ``uda`` split (made
   whatever ``--task``: a domain_generalization run with a ``uda_holdout_fraction`` builds them and never reads
   them), then one ``FastDataLoader`` (batch 64) per ``in`` split, per ``out`` split and per ``uda`` split:
   :class:`Loader` models each without data: the iterator's base seed
   drawn from the global generator when it is created; the sampler (``RandomSampler``, ``replacement=True`` for
   training, a permutation for evaluation) draws a fresh seed from the global generator at the start of every pass
   over its split, then its indices from its own generator (32 at a time with replacement, as torch does);
   ``BatchSampler`` drops a training pass's last partial batch. With ``num_workers`` workers (DomainBed's
   ``N_WORKERS``, 8) torch's iterator requests ``2 * num_workers`` batches ahead (at creation and one per batch
   taken), so pass seeds are drawn that much earlier; with 0 workers, when the batch is taken.
5. The algorithm, built after all that (its initial weights come from the global generator at that point).
6. Each step: one batch per training loader (zip order), images as DomainBed's tensors (uint8 ``.div(255)``, fp32,
   contiguous); with ``--task domain_adaptation`` then one batch per ``uda`` loader (zip order; its images are
   ``update``'s ``unlabeled``, which only an algorithm whose ``update`` takes that keyword receives: DomainBed's
   all ignore it); ``update``; a checkpoint when ``step % checkpoint_freq == 0`` or at the last step: ``env{i}_in``
   for every i, then ``env{i}_out``, then ``env{k}_uda`` for the k-th ``uda`` split (DomainBed numbers them from 0
   in their own list, not by environment), each over its loader's next pass in batches of 64 (``misc.accuracy``),
   ``epoch = step / min over all in splits of (len / batch_size)`` (the test ``in`` splits after the ``uda`` split
   left them), ``mem_gb``.

The loop is the engine's one (:func:`dganalysis.training.train.train_loop`): this module gives it DomainBed's draws
(:class:`DomainBedDraws`: steps 4 and 6) where the default mode gives it ours.

Datasets: of DomainBed's, this mode replays :data:`EXACT_DATASETS` and refuses the others by name (its image
benchmarks, WILDS and Spawrious go through torchvision transforms it does not replay); our own datasets of uint8
arrays read as x/255 run with DomainBed's draws on our data.

Departures kept: no DataLoader, no worker processes (the draws are modelled, not made by torch's machinery); the
runtime is fixed to fp32 without channels_last or autocast, on the job's device (records equal DomainBed's only on
a CPU: CUDA kernels are not bitwise deterministic). Refused here (ValueError): a dataset whose input pipeline is not
plain ``/255`` (DomainBed's image benchmarks augment with torchvision's transforms, which this mode does not
replay), ``class_balanced`` or ``augment`` hparams, validation or unused domains (DomainBed trains on every
non-test environment).
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from dganalysis.training.hparams import DOMAINBED_DATASETS, seed_hash
from dganalysis.training.job import EXACT_DATASETS, Job

log = logging.getLogger(__name__)

#: torch's ``DataLoader`` default ``prefetch_factor`` (batches requested ahead per worker)
PREFETCH_FACTOR = 2
#: DomainBed's ``MultipleDomainDataset.N_WORKERS`` (its MNIST datasets keep it)
DOMAINBED_WORKERS = 8
EVAL_BATCH_SIZE = 64
#: DomainBed's datasets this mode replays draw for draw (checked against its ``train.py`` by
#: ``tests/reference/test_domainbed_exact_datasets.py``); its other datasets are refused by name


def _global_seed() -> int:
    """One 64-bit draw from torch's global generator, as ``RandomSampler`` and ``DataLoader`` iterators make it."""
    return int(torch.empty((), dtype=torch.int64).random_().item())


class PassStream:
    """The index batches of ``BatchSampler(RandomSampler(range(n), replacement), batch_size, drop_last)`` repeated
    forever (DomainBed's ``_InfiniteSampler``), each pass's sampler seeded from the global generator when the pass's
    first batch is requested."""

    def __init__(self, n: int, batch_size: int, replacement: bool, drop_last: bool) -> None:
        self.n, self.batch_size, self.replacement, self.drop_last = n, batch_size, replacement, drop_last
        self._batches: collections.deque[torch.Tensor] = collections.deque()

    def _new_pass(self) -> None:
        # checked when a batch is first asked for, as DomainBed's loader fails then: a loader never read (a
        # ``uda`` loader of a domain_generalization run without workers) may hold fewer than a batch
        if self.n < 1 or (self.drop_last and self.n < self.batch_size):
            raise ValueError(f"a split of {self.n} examples has no full batch of {self.batch_size} (DomainBed's "
                             "loader would never yield one: its train.py hangs; domainbed_exact cannot replay that)")
        g = torch.Generator()
        g.manual_seed(_global_seed())
        n = self.n
        if self.replacement:
            parts = [torch.randint(high=n, size=(32,), dtype=torch.int64, generator=g) for _ in range(n // 32)]
            parts.append(torch.randint(high=n, size=(n % 32,), dtype=torch.int64, generator=g))
            idx = torch.cat(parts)
        else:
            idx = torch.randperm(n, generator=g)
        full = n // self.batch_size * self.batch_size
        if full:
            self._batches.extend(idx[:full].split(self.batch_size))
        if not self.drop_last and full < n:
            self._batches.append(idx[full:])

    def next_batch(self) -> torch.Tensor:
        if not self._batches:
            self._new_pass()
        return self._batches.popleft()


class Loader:
    """A DataLoader over a :class:`PassStream` as seen by the global generator: the base-seed draw at creation, and
    ``lookahead`` batches requested ahead (``prefetch_factor * num_workers``; 0 without workers)."""

    def __init__(self, stream: PassStream, lookahead: int) -> None:
        self.stream, self.lookahead = stream, lookahead
        _global_seed()  # _BaseDataLoaderIter's _base_seed
        self._ahead = collections.deque(stream.next_batch() for _ in range(lookahead))

    def next(self) -> torch.Tensor:
        if not self.lookahead:
            return self.stream.next_batch()
        batch = self._ahead.popleft()
        self._ahead.append(self.stream.next_batch())  # _process_data puts the next index before returning
        return batch

    def n_batches(self) -> int:
        """Batches in one pass (``len`` of the ``FastDataLoader``)."""
        return math.ceil(self.stream.n / self.stream.batch_size)


def uda_split(in_idx: np.ndarray, uda_holdout_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(in_idx, uda_idx)`` of a test domain's ``in`` split, as DomainBed's ``train.py`` splits it for domain
    adaptation (``split_dataset(in, int(len(in) * uda_holdout_fraction), seed)``, ``seed`` the domain's split seed
    ``seed_hash(trial_seed, i)`` again): the first ``int(len * fraction)`` keys of a permutation shuffled by
    ``np.random.RandomState(seed)`` are the unlabelled ``uda`` split, the rest (in permuted order) the new ``in``."""
    in_idx = np.asarray(in_idx, dtype=np.int64)
    keys = list(range(len(in_idx)))
    np.random.RandomState(seed).shuffle(keys)
    n_uda = int(len(in_idx) * uda_holdout_fraction)
    return in_idx[np.asarray(keys[n_uda:], dtype=np.int64)], in_idx[np.asarray(keys[:n_uda], dtype=np.int64)]


def exact_splits(n: int, holdout_fraction: float, trial_seed: int, env: int, test: bool,
                 uda_holdout_fraction: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(in, out, uda)`` indices of environment ``env`` as DomainBed's ``train.py`` orders them: ``split_dataset``
    with ``RandomState(seed_hash(trial_seed, env))`` gives ``out`` (the first ``int(n * holdout_fraction)`` keys)
    and ``in``; a test environment's ``in`` split is split once more with the same seed, its first
    ``int(len(in) * uda_holdout_fraction)`` keys the ``uda`` split and the rest, in that order, the ``in`` split
    (empty ``uda``, reshuffled ``in`` at fraction 0). ``uda`` is empty for a training environment."""
    keys = list(range(n))
    np.random.RandomState(seed_hash(trial_seed, env)).shuffle(keys)
    n_out = int(n * holdout_fraction)
    out_idx, in_idx = keys[:n_out], keys[n_out:]
    in_arr, uda_arr = np.asarray(in_idx, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if test:
        in_arr, uda_arr = uda_split(in_arr, uda_holdout_fraction, seed_hash(trial_seed, env))
    return in_arr, np.asarray(out_idx, dtype=np.int64), uda_arr


def domainbed_tensors(dataset) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each environment's ``(x float32, y int64)`` as DomainBed's dataset of the same name holds them, with the
    dataset's random draws made on torch's global generator (which the caller seeded as DomainBed's ``train.py``
    does), so the global stream is left where DomainBed's stands once its dataset is built."""
    from dganalysis.data.debug import DEBUG
    from dganalysis.data.domainbed_mnist import replay_draws

    info = dict(getattr(dataset, "info", {}) or {})
    if dataset.name in DEBUG and info.get("simulated"):
        return DEBUG[dataset.name].draws(None)
    replay_draws(info)
    return [(torch.from_numpy(np.ascontiguousarray(dom.images)).float().div(255),
             torch.from_numpy(np.ascontiguousarray(dom.labels, dtype=np.int64))) for dom in dataset.domains]


def featurizer_draws(input_shape: tuple[int, ...], hparams: dict[str, Any]) -> None:
    """The global-generator draws DomainBed's ``networks.ResNet`` makes and our featurizer does not: with
    ``resnet50_augmix`` DomainBed first builds torchvision's ResNet-18 or -50 (``pretrained=True``: constructed,
    initialised, then loaded) and only then replaces it by timm's ``resnet50.ram_in1k``; ours builds timm's alone.
    Called just before the algorithm is built, this builds (and drops) that torchvision network so the draws after
    it (timm's initialisation, the classifier's) are DomainBed's. Nothing for any other featurizer."""
    from dganalysis.nets.domainbed import domainbed_arch
    from dganalysis.training.hparams import HParams

    hp = HParams.of(hparams)
    if (str(hp["featurizer"]) != "domainbed" or tuple(input_shape[1:3]) != (224, 224)
            or domainbed_arch(input_shape, hp) != "resnet50" or not hp["resnet50_augmix"]):
        return
    from dganalysis.compat import torchvision

    getattr(torchvision().models, "resnet18" if hp["resnet18"] else "resnet50")(weights=None)


def check_exact(job: Job, names: list[str], hparams: dict[str, Any], info: dict) -> list[int]:
    """The test-environment indices of ``job``, after refusing what this mode cannot run as DomainBed does."""
    if job.dataset in DOMAINBED_DATASETS and job.dataset not in EXACT_DATASETS:
        raise ValueError(f"job {job.job_id}: dataset {job.dataset!r}: domainbed_exact does not replay it (it replays "
                         f"DomainBed's {', '.join(EXACT_DATASETS)}; DomainBed's other datasets go through "
                         "torchvision transforms this mode does not repeat)")
    if job.val_domains or len(job.train_domains) + len(job.test_domains) != len(names):
        raise ValueError(f"job {job.job_id}: domainbed_exact trains on every non-test domain as DomainBed does; got "
                         f"train={list(job.train_domains)}, test={list(job.test_domains)}, "
                         f"val={list(job.val_domains)} of {names}")
    for key in ("class_balanced", "augment"):
        if hparams.get(key):
            raise ValueError(f"job {job.job_id}: domainbed_exact does not replay hparam {key}=True (expected False)")
    if info.get("pipeline") == "domainbed":
        raise ValueError(f"job {job.job_id}: dataset {job.dataset!r} goes through DomainBed's image transforms, which "
                         "domainbed_exact does not replay; it runs DomainBed's RotatedMNIST/ColoredMNIST and "
                         "other datasets of uint8 arrays read as x/255")
    return [names.index(d) for d in job.test_domains]


def domainbed_accuracy(algorithm, x: torch.Tensor, y: torch.Tensor, loader: Loader) -> float:
    """DomainBed's ``misc.accuracy`` over one pass of ``loader`` (eval mode inside, train mode after)."""
    correct, total = 0.0, 0.0
    algorithm.eval()
    with torch.no_grad():
        for _ in range(loader.n_batches()):
            idx = loader.next()
            p = algorithm.predict(x[idx])
            if p.size(1) == 1:
                correct += p.gt(0).eq(y[idx]).float().sum().item()
            else:
                correct += p.argmax(1).eq(y[idx]).float().sum().item()
            total += len(idx)
    algorithm.train()
    return correct / total


class ExactSplits:
    """Every environment's ``(in, out)`` tensors and the non-empty ``uda`` splits, as DomainBed's ``train.py`` holds
    them (:func:`exact_splits` of :func:`domainbed_tensors`); ``mode`` is what the records say as ``data_path``."""

    mode = "domainbed_exact"

    def __init__(self, envs: list[list[tuple[torch.Tensor, torch.Tensor]]],
                 udas: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        self.envs, self.udas = envs, udas

    def close(self) -> None:
        """Nothing to release: the tensors go with the object."""


class DomainBedDraws:
    """The draws of DomainBed's ``train.py``, as the training loop (:func:`dganalysis.training.train.train_loop`)
    takes them in ``domainbed_exact`` mode: its loaders made in DomainBed's order (the training environments', the
    ``uda`` splits', then the evaluation ones: step 4 of the module doc), each step's minibatches taken from them in
    zip order, the ``update()`` outputs under DomainBed's keys, and the accuracies over one pass of each evaluation
    loader in batches of :data:`EVAL_BATCH_SIZE`. Made before the algorithm, as DomainBed makes its loaders (and their
    seed draws on the global generator) first."""

    def __init__(self, splits: ExactSplits, train_envs: list[int], batch_size: int, workers: int,
                 adapt: bool) -> None:
        ahead = PREFETCH_FACTOR * workers
        self.splits, self.adapt = splits, adapt
        self.train = [(splits.envs[i][0], Loader(PassStream(len(splits.envs[i][0][1]), batch_size, True, True), ahead))
                      for i in train_envs]
        # made whatever the task, after the training loaders and before the evaluation ones, as DomainBed makes them
        self.uda = [(xy, Loader(PassStream(len(xy[1]), batch_size, True, True), ahead)) for xy in splits.udas]
        n = len(splits.envs)
        evals = [(f"env{i}_{'in' if k == 0 else 'out'}", splits.envs[i][k]) for k in (0, 1) for i in range(n)]
        evals += [(f"env{k}_uda", xy) for k, xy in enumerate(splits.udas)]  # DomainBed numbers them in their own list
        self.evals = [(name, xy, Loader(PassStream(len(xy[1]), EVAL_BATCH_SIZE, False, False), ahead))
                      for name, xy in evals]
        #: DomainBed's epoch: the minimum over *all* ``in`` splits (the test ones after their ``uda`` split)
        self.steps_per_epoch = min(len(env[0][1]) / batch_size for env in splits.envs)

    def batches(self, algorithm) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], dict[str, Any]]:
        """One minibatch per training loader, then (``--task domain_adaptation``) one batch of images per ``uda``
        loader, passed as ``unlabeled`` to an algorithm whose ``update`` takes it (DomainBed draws them for any)."""
        from dganalysis.algorithms.base import takes_unlabeled

        minibatches = []
        for (x, y), loader in self.train:
            idx = loader.next()
            minibatches.append((x[idx], y[idx]))
        if not self.adapt:
            return minibatches, {}
        unlabeled = [xy[0][loader.next()] for xy, loader in self.uda]
        return minibatches, ({"unlabeled": unlabeled} if takes_unlabeled(algorithm) else {})

    def outputs(self, algorithm, out: Mapping[str, Any]) -> dict[str, Any]:
        """``update()``'s outputs under DomainBed's keys (:attr:`~dganalysis.algorithms.base.Algorithm.DOMAINBED_KEYS`)."""
        from dganalysis.algorithms.base import domainbed_outputs

        return domainbed_outputs(out, type(algorithm).DOMAINBED_KEYS)

    def evaluate(self, algorithm) -> dict[str, float]:
        """``env{i}_in_acc`` for every i, then ``env{i}_out_acc``, then ``env{k}_uda_acc``, each over its loader's next
        pass (:func:`domainbed_accuracy`)."""
        return {name + "_acc": domainbed_accuracy(algorithm, x, y, loader) for name, (x, y), loader in self.evals}

    def close(self) -> None:
        """Release the splits (:meth:`ExactSplits.close`)."""
        self.splits.close()


#: DomainBed's algorithms that count their updates in a ``update_count`` buffer (``torch.tensor([n])``, in their
#: ``state_dict``); ours take the step from ``update()``'s argument, so ``model.pkl`` gets the count written in
UPDATE_COUNT_ALGORITHMS = frozenset({"IRM", "VREx", "SANDMask", "Fishr", "IB_ERM", "IB_IRM", "RDM"})


def domainbed_model_dict(algorithm, algorithm_name: str, updates: int) -> dict[str, torch.Tensor]:
    """``algorithm``'s state dict under DomainBed's parameter names, for ``model.pkl``'s ``model_dict``: the
    MNIST-CNN's layers (ours ``body.0/3/6/9`` and ``body.2/5/8/11``, a ``Sequential``) as DomainBed's ``conv1..4``
    and ``bn0..3``, under every path that reaches them (``featurizer.`` and ``network.0.``), and DomainBed's
    ``update_count`` (``updates``) for :data:`UPDATE_COUNT_ALGORITHMS`. Every other name is already DomainBed's
    where our modules are laid out as DomainBed's (featurizer, classifier, ``network = Sequential(featurizer,
    classifier)``; its ResNet's ``network.*``): for ERM and its kin (ERM, ERMPlusPlus, IRM, VREx, Mixup, MLDG,
    CORAL, MMD, RSC, SD, ANDMask, SANDMask, IGA, SelfReg, Fishr, IB_ERM, IB_IRM, CausIRL_CORAL, CausIRL_MMD, RDM,
    URM) DomainBed's class of the same name loads the dict with ``strict=True``. Algorithms with other modules
    (DANN's discriminator, Fish's, SagNet's, ARM's, MTL's, CAD's, ADRMX's ...) keep our names for those."""
    from dganalysis.nets.archs import MNISTCNN

    renames: dict[str, str] = {}
    for prefix, module in algorithm.named_modules(remove_duplicate=False):
        if isinstance(module, MNISTCNN):
            base = f"{prefix}." if prefix else ""
            for i in range(4):
                renames[f"{base}body.{3 * i}."] = f"{base}conv{i + 1}."
                renames[f"{base}body.{3 * i + 2}."] = f"{base}bn{i}."
    out: dict[str, torch.Tensor] = {}
    for key, value in algorithm.state_dict().items():
        for old, new in renames.items():
            if key.startswith(old):
                key = new + key[len(old):]
                break
        out[key] = value.detach().cpu().contiguous()
    if algorithm_name in UPDATE_COUNT_ALGORITHMS:
        out["update_count"] = torch.tensor([int(updates)])
    return out
