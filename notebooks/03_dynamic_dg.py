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
# # 03 — Dynamic DG: the swap test (ST) and Domain+
#
# Zhang, Zhang & Liu, *Towards Reliable Domain Generalization: A New Dataset and Evaluations*, Sec. 4.2–4.3,
# Figs. 9–12. The static leave-one-domain-out protocol ranks methods on one fixed split. The paper adds two *dynamic*
# criteria:
#
# * **Swap test (ST)**: keep the number of training domains, swap which ones, test on the same unseen domain.
#   A method has a *stable advantage* if its advantage over others never reverses (Fig. 9/10).
# * **Domain+**: add a training domain (Fig. 11) or a chain of them (Fig. 12). A method *copes with distribution shift*
#   if the added domain helps it.
#
# The paper reads reversals and changes off mean curves. Here each finding is a set of claims decided by the audit's
# engine (`dganalysis.findings.dynamic`, docs/findings/03.md): runs that share a trial seed share their data splits,
# so the contrasts are **paired t-tests** on shared seeds (their initialisation and data order still differ), with
# a ROPE of ±1 accuracy point and one joint step-down per finding. The tables and figures below describe; only the
# findings' functions decide.
#
# The study is designed before it runs (`dganalysis.studies.design`, the table below): each claim with the effect a
# pilot run measured, the power the profile's trials give it, and what the profile cannot decide. The quick profile
# runs PaHCC (30 classes, 32 px, binary; the handwriting `hw` is **simulated**) and trains only the Domain+ step its
# budget can decide (CORAL and IB-ERM adding d2, six trials); the other claims are recorded as "not run", with what
# would decide them on a GPU (the paper profile). The defaults below are a one-minute RotatedDigits check of the
# cells.
# For DomainNet (Figs. 10, 12) set `dataset="ImageFolder"`, `dataset_kwargs={"root": ..., "image_size": 64}`,
# `test_domain="sketch"` and a Domain+ chain. DomainBed's own runs work through `dganalysis.records.load(<dir>)`.

# %% tags=["parameters"]
output_dir = "../outputs/default"
store_dir = "../outputs/default/store"
data_dir = "../outputs/data"
# the sweep (dganalysis.sweep.Sweep; a YAML may give some keys only; its splits: the training sets below)
sweep = {"dataset": "RotatedDigits", "dataset_kwargs": {"image_size": 16}, "algorithms": ["ERM", "CORAL"],
         "n_hparams": 1, "n_trials": 2, "steps": 20, "checkpoint_freq": 10,
         "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32}}
test_domain = "75"
swap_choices = [["0", "15"], ["0", "30"]]
domain_plus_chains = [[["0", "15"], ["0", "15", "30"]]]
evaluate_on = "rest"  # "rest": each run also tests on every domain it does not train on (shares jobs with notebook 02)
selection_method = "training_domain"
alpha = 0.05
correction = "holm"  # kept for the parameter files; each finding's family is the engine's joint step-down
n_workers = 2

# %%
# the parameters above (papermill's injected ones included) as one frozen, checked object; the planner
# and helpers below take it whole (dganalysis.studies.params)
from dganalysis.studies.study import study
S = study("03_dynamic_dg")  # its parameter class, plan and design
P = S.params.from_namespace(globals())

# %% [markdown]
# ## Design, before the runs
# Each claim, the effect expected (with its source), the power this run's trials give it at the claim's level
# (`dganalysis.stats.planning`), and why a claim cannot be decided here. Claims marked `runs: no` train nothing.

# %%
from dganalysis.studies.design import design_frame, not_run_findings, write_design
DESIGN = S.claims(P)
write_design(P.output_dir, "03_dynamic_dg", DESIGN)
design_frame(DESIGN)

# %%
import logging
import pandas as pd
from IPython.display import display
from dganalysis.data import load_dataset
from dganalysis.data.provenance import data_label
from dganalysis.studies.findings import replace_findings
from dganalysis.plots import save_figure, save_table, setup_style
from dganalysis.protocols import dynamic, dynamic_report as dr, leaderboard as lb
from dganalysis.records import load, select
from dganalysis.sweep import run_sweep
logging.basicConfig(level=logging.WARNING)
setup_style()

# %% [markdown]
# ## Runs
# One job per (algorithm, training-domain set, hparams seed, trial). Jobs already in the store are reused. Every
# selection here reads held-out data only, so the runs evaluate no training accuracy (`Job.evaluate_splits =
# "held_out"`: the same seeds and held-out accuracies as DomainBed's evaluation of every split).

# %%
base = load_dataset(P.sweep.dataset, data_dir=P.data_dir, **P.sweep.dataset_kwargs)
source = base.info.get("source", P.sweep.dataset)  # says SIMULATED when a domain is simulated (PaHCC hw)
print(source)
# every training set of the swap test and the Domain+ chains, once; the same call as `dganalysis run --dry-run` makes
jobs = S.plan(P).jobs
status = run_sweep(jobs, P.store_dir, data_dir=P.data_dir, n_workers=P.n_workers)
status["status"].value_counts()

# %%
df = load(P.store_dir)
df = df[df["job_id"].isin({j.job_id for j in jobs})]
selected = select(df, P.selection_method)
selected[selected["domain"] == P.test_domain].groupby(["algorithm", "train_domains"])["acc"].agg(
    ["mean", "std", "count"]).round(3)

# %% [markdown]
# ## Swap test (Fig. 9 style)
# Mean ± SE per method and training choice (a description; the findings below decide).

# %%
if P.swap_choices:
    fig = dynamic.plot_swap_test(selected, P.test_domain, P.swap_choices, methods=P.sweep.algorithms)
    fig.suptitle(f"Data: {source}", fontsize=7)
    save_figure(fig, "03_swap_test", P.output_dir)
    means = dynamic.swap_means(selected, P.test_domain, P.swap_choices, methods=P.sweep.algorithms)
    save_table(means.reset_index(), "03_swap_test_means", P.output_dir, float_format="%.4f",
               caption=f"Swap test: mean accuracy per method and choice, data: {source}")
else:
    means = None
means.round(3) if means is not None else "no swap test in this run's design"

# %% [markdown]
# ## Domain+ (Figs. 11–12 style)
# Δ = mean accuracy after adding a domain minus before, paired over trials, with its 95% CI per comparison (a
# description; the findings below decide).

# %%
dp = pd.concat([dynamic.domain_plus(selected, chain, P.test_domain, methods=P.sweep.algorithms) for chain in P.domain_plus_chains],
               ignore_index=True)
fig3 = dynamic.plot_domain_plus(dp, methods=P.sweep.algorithms)
fig3.suptitle(f"Data: {source}", fontsize=7)
save_figure(fig3, "03_domain_plus", P.output_dir)
save_table(dp, "03_domain_plus", P.output_dir, float_format="%.4f", caption=f"Domain+, data: {source}")
dp[["base", "added", "method", "mean_base", "mean_ext", "delta", "ci_low", "ci_high", "test"]].round(3)

# %% [markdown]
# ## The held-out printed domain
# Each two-domain choice also tests on the printed domain it leaves out (d2, d1, d0 for PaHCC). That domain changes
# with the choice, so no swap test can be made on it: the table is descriptive (mean and 95% t-interval over trials).
# In the paper printed → printed accuracy is high (Table 7) while handwriting is where the methods differ.

# %%
held_choices = P.swap_choices or [chain[0] for chain in P.domain_plus_chains]
heldout = dr.heldout_table(selected, held_choices, exclude=[P.test_domain], methods=P.sweep.algorithms)
save_table(heldout, "03_heldout_printed", P.output_dir, float_format="%.4f", caption=f"Held-out domain accuracy, data: {source}")
heldout.pivot_table(index="method", columns=["train", "domain"], values="mean", sort=False).round(3)

# %% [markdown]
# ## Static vs dynamic
# The static rank comes from the standard split: the largest training set of the first chain, tested on `test_domain`.
# With PaHCC this is (d0, d1, d2) → hw, the leave-one-domain-out setting of Table 8. The summary puts it next to the
# swap-test means and the Domain+ changes.

# %%
standard = ",".join(P.domain_plus_chains[0][-1])
std_sel = selected[(selected["train_domains"].map(lambda s: set(s.split(","))) == set(standard.split(",")))
                   & (selected["domain"] == P.test_domain)]
static = lb.leaderboard_table(lb.from_selected(std_sel, "static"))
summary = dynamic.dynamic_summary(means, dp, static["Ranking"])
save_table(summary.reset_index(), "03_dynamic_summary", P.output_dir, caption=f"Dynamic DG summary, data: {source}")
summary

# %% [markdown]
# ## The findings, decided by the engine
# Each finding the design runs is decided by its function in `dganalysis.findings.dynamic` on the per-unit frame
# (method, training set, trial seed → accuracy on the test domain). The comparators of the swap-test findings are
# pre-specified from the design's pilot (ERM, SagNet, IB-IRM, where run). Below the per-finding verdicts, the counts
# under one family of all this notebook's findings (`engine.pooled`; each finding read by its own rule, the
# reversal's existential one included).

# %%
from dganalysis.findings import dynamic as fd, engine
units = dynamic.trial_accuracies(selected, P.test_domain, methods=P.sweep.algorithms)
ran = {c.key: c for c in DESIGN if c.runs}
decided = fd.decide_all(units, list(ran), methods=P.sweep.algorithms, choices=P.swap_choices, chains=P.domain_plus_chains,
                        alpha=P.alpha)
paper = "Zhang, Zhang & Liu (dynamic DG)"
rows = [dict(paper=paper, finding=f"{ran[k].claim} [{P.sweep.dataset}]", ours=res.ours(), verdict=res.verdict, decision=res)
        for k, res in decided.items()]
# the claims the design left out: "not run: <why>; the paper profile decides it with ..."
rows += [dict(r, finding=f"{r['finding']} [{P.sweep.dataset}]") for r in not_run_findings(DESIGN, paper)]
replace_findings(P.output_dir, "03", rows, data=data_label(base, [P.test_domain]), steps=P.sweep.steps)
display(pd.DataFrame([dict(finding=k, verdict=r.verdict, why=r.why) for k, r in decided.items()]))
print("under one family of all this notebook's findings:", engine.pooled(list(decided.values()), P.alpha))
pd.DataFrame(rows)[["finding", "verdict", "ours"]]
