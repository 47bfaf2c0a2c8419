# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Quick start: ERM on RotatedDigits, leave-one-domain-out, three model-selection methods
#
# The DomainBed protocol (Gulrajani & Lopez-Paz, 2021) on real data that ships offline: **RotatedDigits** is DomainBed's
# Rotated-MNIST recipe applied to scikit-learn's 1,797 real handwritten digits (disjoint image subsets rotated by
# 0°, 15°, …, 75°). We train ERM with each rotation held out in turn, draw a few hyperparameter sets and trial seeds,
# and compare the three model-selection methods of DomainBed:
#
# * **training-domain validation** — pick the hyperparameters (and checkpoint) with the best accuracy on the held-out
#   split of the *training* domains;
# * **leave-one-domain-out** — pick by the accuracy on a training domain held out of training (needs the extra runs
#   with two held-out domains, which the sweep below includes);
# * **test-domain oracle** — pick by the test domain's held-out split at the last checkpoint (leaks test information;
#   an upper reference, not a fair protocol).
#
# Cells report test-domain accuracy (%) as mean ± standard error over trial seeds (sample std, ddof = 1, / √n).

# %% tags=["parameters"]
# Parameters (the smallest settings that still run every cell; params/quick and params/paper scale them up)
output_dir = "../outputs/default"
store_dir = "../outputs/default/store"
data_dir = "../outputs/data"
# the sweep on each dataset (dganalysis.sweep.Sweep; a YAML may give some keys only): datasets, each {name, kwargs,
# hparams} (hparams on top of hparams_overrides for that dataset; DomainBed's table: MNISTs, PACS, …; the rotated
# digits' domains are rotations, DomainBed's 0, 15, 30, 45, 60, 75), n_hparams random-search draws (seed 0 gives the
# defaults) × n_trials trials of each algorithm, steps steps, a checkpoint every checkpoint_freq
sweep = {"datasets": [{"name": "RotatedDigits", "kwargs": {"image_size": 16, "angles": [0, 45, 75]}}],
         "algorithms": ["ERM"], "n_hparams": 2, "n_trials": 2, "steps": 40, "checkpoint_freq": 20,
         "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32}}
n_workers = 2

# %%
# the parameters above (papermill's injected ones included) as one frozen, checked object; the planner
# and helpers below take it whole (dganalysis.studies.params)
from dganalysis.studies.study import study
S = study("00_quickstart")  # its parameter class, plan and design
P = S.params.from_namespace(globals())

# %% [markdown]
# ## Design, before the runs
# The claims this notebook tests, the effect each expects (with its source), the power this run gives it and what it
# cannot decide (`dganalysis.studies.design`; also printed by `dganalysis run --dry-run` and listed in `index.md`).

# %%
from dganalysis.studies.design import design_frame, write_design
DESIGN = S.claims(P)
write_design(P.output_dir, "00_quickstart", DESIGN)
design_frame(DESIGN)

# %%
import pandas as pd
from IPython.display import Markdown, display

from dganalysis import plots, records, tables
from dganalysis.data import load_dataset
from dganalysis.sweep import run_sweep

plots.setup_style()
first = P.sweep.datasets[0]
ds = load_dataset(first["name"], data_dir=P.data_dir, **first.get("kwargs", {}))
display(ds.stats())
print(ds.info["source"])
fig = plots.domain_grid(ds, per_domain=10, title=f"{first['name']}: one row per domain"
                        + (" (rotation in degrees)" if first["name"] == "RotatedDigits" else ""))
plots.save_figure(fig, "00_rotated_digits_samples", P.output_dir)

# %% [markdown]
# ## The sweep
# Leave-one-domain-out runs (one test rotation) plus the runs with two held-out rotations that leave-one-domain-out
# selection needs. Jobs are hashed: rerunning the notebook trains nothing that is already in the store.

# %%
# the same call as `dganalysis run --dry-run` makes to list and count these jobs
jobs = S.plan(P).jobs
status = run_sweep(jobs, P.store_dir, data_dir=P.data_dir, n_workers=P.n_workers)
display(status["status"].value_counts().to_frame())
df = records.load(P.store_dir)
df = df[df["job_id"].isin({j.job_id for j in jobs})]
print(f"{df['job_id'].nunique()} finished jobs, {len(df)} tidy rows")

# %% [markdown]
# ## Model-selection tables (DomainBed layout)

# %%
summaries, chosen = [], []
for method in ["training_domain", "leave_one_out", "oracle"]:
    selected = records.select(df, method)
    tabs = records.build_tables(selected, test_domains=1, domain_order=records.domain_orders(df))
    display(Markdown(tables.format_tables(tabs, "markdown")))
    for i, tab in enumerate(tabs[:-1] if len(tabs) > 2 else tabs[:1]):  # one per dataset (+ "Averages" when several)
        plots.save_table(tables.wide(tab).reset_index(), f"00_selection_{method}" + (f"_{i}" if i else ""),
                         P.output_dir, caption=tab.title + " (test accuracy %, mean ± SE over trials)", float_format=None)
    single = selected[selected["test_domains"].str.count(",") == 0]
    summaries.append(records.summarize(single, by=["dataset", "algorithm", "domain"]).assign(selection=method))
    chosen.append(single)
summary = pd.concat(summaries, ignore_index=True)

# %% [markdown]
# ## Where the methods part ways
# Each method picks one run (hyperparameter draw) and checkpoint per held-out rotation and trial. Training-domain
# validation and leave-one-domain-out may stop early at any checkpoint; the oracle takes each run's last one. Where
# all three pick the same run and step (`agree`), their accuracies are equal by construction: a search needs
# competitive draws and several checkpoints before the choice of method can matter.

# %%
picks = records.picks(pd.concat(chosen, ignore_index=True), by=["dataset", "domain", "trial_seed"])
print(f"the methods chose different runs in {(~picks['agree']).sum()} of {len(picks)} (rotation, trial) cells")
display(picks)

# %% [markdown]
# ## Accuracy per held-out rotation
# Rotations at the ends of the range (0°, 75°) are extrapolation and the hardest. The oracle peeks at the test
# domain, but only at each run's last checkpoint and through its small held-out split (about 60 images): it is an
# optimistic reference on average, not an upper bound in every column.

# %%
fig = plots.accuracy_by_domain(summary, hue="selection", title=f"ERM on {', '.join(summary['dataset'].unique())}, "
                                                                "by selection method")
plots.save_figure(fig, "00_accuracy_per_rotation", P.output_dir)
