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
# The paper reads reversals and changes off mean curves. Here each one is decided with a statistical test over trials:
# Welch t-tests, with Holm correction over the whole family of comparisons (`dganalysis.protocols.dynamic`).
# The outcomes have three values: reversal / consistent / undecided, and copes / degrades / no significant change.
# The defaults below run on `RotatedDigits` in about a minute. On PaHCC (domains d0, d1, d2 = printed, hw = handwritten,
# simulated in the embedded default), set `dataset="PaHCC"`, `test_domain="hw"`,
# `swap_choices=[["d0","d1"],["d0","d2"],["d1","d2"]]` and `domain_plus_chains=[[["d0","d1"],["d0","d1","d2"]]]`
# (as in `params/paper/03_dynamic_dg.yaml`). Any dataset with ≥ 3 training domains works. For a DomainBed-layout
# folder (`root/<domain>/<class>/<image>`, e.g. DomainNet for Figs. 10 and 12), set `dataset="ImageFolder"`,
# `dataset_kwargs={"root": "/path/to/domain_net", "image_size": 64}`, `test_domain="sketch"`, and a Domain+ chain
# such as `[["painting","quickdraw"], ["painting","quickdraw","real"], ...]`. Runs made with DomainBed itself can go
# straight into `dynamic.swap_test` through `dganalysis.results.load(<DomainBed output dir>)`.

# %% tags=["parameters"]
output_dir = "../outputs/default"
store_dir = "../outputs/default/store"
data_dir = "../outputs/data"
dataset = "RotatedDigits"
dataset_kwargs = {"image_size": 16}
test_domain = "75"
swap_choices = [["0", "15"], ["0", "30"]]
domain_plus_chains = [[["0", "15"], ["0", "15", "30"]]]
evaluate_on = "rest"  # "rest": each run also tests on every domain it does not train on (shares jobs with notebook 02)
algorithms = ["ERM", "CORAL"]
n_hparams = 1
n_trials = 2
steps = 20
checkpoint_freq = 10
hparams_overrides = {"featurizer": "smallcnn", "batch_size": 32}
selection_method = "training_domain"
alpha = 0.05
correction = "holm"
n_workers = 2

# %%
import logging

import pandas as pd
from IPython.display import Markdown, display

import dganalysis
from dganalysis.io import write_text
from dganalysis.data import load_dataset
from dganalysis.plots import save_figure, save_table, setup_style
from dganalysis.protocols import dynamic
from dganalysis.protocols import leaderboard as lb
from dganalysis.results import load
from dganalysis.selection import select
from dganalysis.sweep import make_jobs, run_sweep

logging.basicConfig(level=logging.WARNING)
setup_style()

# %% [markdown]
# ## Runs
# One job per (algorithm, training-domain set, hparams seed, trial). Jobs already in the store are reused.

# %%
base = load_dataset(dataset, data_dir=data_dir, **dataset_kwargs)
domains = base.domain_names
source = base.info.get("source", dataset)  # says SIMULATED when a domain is simulated (PaHCC hw)
print(source)
train_sets = list(dict.fromkeys(tuple(t) for t in swap_choices + [s for chain in domain_plus_chains for s in chain]))
splits = [{"train": list(t), "test": [d for d in domains if d not in t] if evaluate_on == "rest" else [test_domain]}
          for t in train_sets]
jobs = make_jobs(dataset, dataset_kwargs, algorithms, splits, n_hparams=n_hparams, n_trials=n_trials, steps=steps,
                 checkpoint_freq=checkpoint_freq, hparams_overrides=hparams_overrides, data_dir=data_dir)
status = run_sweep(jobs, store_dir, data_dir=data_dir, n_workers=n_workers)
status["status"].value_counts()

# %%
df = load(store_dir)
df = df[df["job_id"].isin({j.job_id for j in jobs})]
selected = select(df, selection_method)
selected[selected["domain"] == test_domain].groupby(["algorithm", "train_domains"])["acc"].agg(
    ["mean", "std", "count"]).round(3)

# %% [markdown]
# ## Swap test (Fig. 9 style)
# For each training-domain choice and each pair of methods, a Welch t-test over trials compares accuracy on the test
# domain. The p-values are Holm-corrected over all (choice, pair) tests. A **reversal** is a significant difference in
# opposite directions under two choices. **Undecided** means a tie, or too few trials, under at least one of the two choices.
# `raw_reversal` shows what the mean curves alone would suggest.

# %%
st = dynamic.swap_test(selected, test_domain, swap_choices, methods=algorithms, alpha=alpha, correction=correction)
fig = dynamic.plot_swap_test(selected, test_domain, swap_choices, methods=algorithms)
fig.suptitle(f"Data: {source}", fontsize=7)
save_figure(fig, "03_swap_test", output_dir)
fig2 = dynamic.plot_reversal_matrix(st)
save_figure(fig2, "03_reversal_matrix", output_dir)
save_table(st.pairs, "03_swap_test_pairs", output_dir, float_format="%.4f", caption=f"Swap test, data: {source}")
save_table(st.tests, "03_swap_test_tests", output_dir, float_format="%.4f", caption=f"Swap-test Welch tests, data: {source}")
display(st.methods)
st.pairs

# %% [markdown]
# ## Domain+ (Figs. 11–12 style)
# Δ = mean accuracy after adding a domain minus before, shown with a Welch 95% CI (not adjusted). The verdict uses the
# Holm-corrected Welch test over all (method, step) rows.

# %%
dp = pd.concat([dynamic.domain_plus(selected, chain, test_domain, methods=algorithms, alpha=alpha,
                                    correction=correction) for chain in domain_plus_chains], ignore_index=True)
fig3 = dynamic.plot_domain_plus(dp, methods=algorithms)
fig3.suptitle(f"Data: {source}", fontsize=7)
save_figure(fig3, "03_domain_plus", output_dir)
save_table(dp, "03_domain_plus", output_dir, float_format="%.4f", caption=f"Domain+, data: {source}")
dp[["base", "added", "method", "mean_base", "mean_ext", "delta", "ci_low", "ci_high", "p_adj", "verdict"]]

# %% [markdown]
# ## Static vs dynamic
# The static rank comes from the standard split: the largest training set of the first chain, tested on `test_domain`.
# With PaHCC this is (d0, d1, d2) → hw, the leave-one-domain-out setting of Table 8. The summary puts it next to the
# ST and Domain+ verdicts.

# %%
standard = ",".join(domain_plus_chains[0][-1])
std_sel = selected[(selected["train_domains"].map(lambda s: set(s.split(","))) == set(standard.split(",")))
                   & (selected["domain"] == test_domain)]
static = lb.leaderboard_table(lb.from_selected(std_sel, "static"))
summary = dynamic.dynamic_summary(st, dp, static["Ranking"])
save_table(summary.reset_index(), "03_dynamic_summary", output_dir, caption=f"Dynamic DG summary, data: {source}")
summary

# %%
n_rev = int(st.methods["reversals"].sum() // 2)
n_raw = int(st.pairs["raw_reversal"].sum())
display(Markdown(f"**{n_rev}** significant reversal(s) vs **{n_raw}** raw-mean reversal(s) over "
                 f"{len(st.pairs)} (pair, choice-pair) comparisons; stable advantage: "
                 f"{', '.join(st.methods.index[st.methods['st_verdict'] == 'stable advantage']) or 'none'}."))
