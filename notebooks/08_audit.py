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
# # 08 · Audit: can this domain-generalization result be trusted?
#
# `dganalysis audit` gives a **calibrated verdict** on DG results — a sweep directory (ours or DomainBed's) or a
# published table (DomainBed's `collect_results --latex` output, or a CSV). For each (selection method, dataset,
# algorithm) it compares the algorithm with a baseline on the dataset's average over test environments (DomainBed's
# Avg column, per trial):
#
# * **better / worse** — Welch's statistic with its p-value calibrated to the worst case over the unknown ratio of the
#   two arms' variances (Welch's own test exceeds its level at 3 trials when the variances differ; the calibrated one
#   does not, for any ratio), or, on a sweep whose arms ran the same trial seeds, a paired t-test;
# * **equivalent** — two one-sided tests (TOST) show |Δ| < ROPE;
# * **undecided** — neither; `why` says what stands in the way (the rounding, the family, the variance ratio, too few
#   trials) and `trials_needed` / `trials_equivalence` how many trials per arm would decide a difference of ±ROPE or
#   show equivalence (planning figures with an interval, not post-hoc power).
#
# Each verdict is a claim about error rates over a **family**, chosen by `family`: `algorithm` (the default, the
# family a paper claims: one algorithm against the baseline over the datasets of one selection method), `dataset`
# or `table` (every claim of a selection method: the strictest). One step-down over the family's difference and
# equivalence hypotheses keeps P(any false verdict) ≤ α; the all-claims family's counts are shown beside.
#
# Published numbers are rounded: a printed "± 0.0" is an SE below 0.05, never zero, and **no verdict rests on the
# rounding** — each holds for every value the printed digits allow; `verdict_nominal` shows what the printed numbers
# give at face value. Across datasets: probability of improvement and IQM (Agarwal et al. 2021, `rliable`),
# Wilcoxon signed-rank with Holm beside Friedman/Nemenyi (Benavoli, Corani & Mangili 2016; Demšar 2006) and the
# Bayesian signed-rank test with the ROPE (Benavoli et al. 2017, `baycomp`). On raw sweeps also: model-selection
# regret, expected best accuracy vs search budget (Dodge et al. 2019), LODO vs LOGO and the selected hparams. See
# `docs/audit.md`.
#
# Inputs: `shipped:domainbed` (DomainBed's published results.tex, Gulrajani & Lopez-Paz 2021),
# `shipped:yu2024_table5` (Yu et al. 2024, Table 5), a path, or `store` (this profile's job store).

# %% tags=["parameters"]
# parameters: the smallest settings that run every cell (nbval); params/quick and params/paper add the store
output_dir = "../outputs/default"
store_dir = "../outputs/default/store"
data_dir = "../outputs/data"
inputs = ["shipped:domainbed"]       # sweep dirs, .tex/.csv tables, shipped:<name>, or "store" (store_dir)
baseline = "ERM"
selections = "training_domain"       # "all" (DomainBed's three; a table: those it has), a method, or a list
alpha = 0.05                         # family-wise error level of the claims
rope = 1.0                           # region of practical equivalence, ± accuracy points
family = "algorithm"                 # the family of each verdict: "algorithm", "dataset" or "table" (all claims)
reference = ""                       # a published table to compare every input with (empty: none)
reps = 500                           # bootstrap resamples of the across-dataset CIs

# %%
# the parameters above (papermill's injected ones included) as one frozen, checked object (dganalysis.studies.params)
from dganalysis.studies.study import study
S = study("08_audit")  # its parameter class, plan and design
P = S.params.from_namespace(globals())

# %% [markdown]
# ## Design, before the runs
# The claims this notebook tests, the effect each expects (with its source), the power this run gives it and what it
# cannot decide (`dganalysis.studies.design`; also printed by `dganalysis run --dry-run` and listed in `index.md`).

# %%
from dganalysis.studies.design import design_frame, write_design
DESIGN = S.claims(P)
write_design(P.output_dir, "08_audit", DESIGN)
design_frame(DESIGN)

# %%
import pandas as pd
from IPython.display import Image, display
from dganalysis import plots
from dganalysis.audit.outputs import write_outputs
from dganalysis.audit.run import resolve_inputs, run_audit
from dganalysis.audit.summary import record_audit_lines
plots.setup_style()
paths, notes = resolve_inputs(P.inputs, P.store_dir)
result = run_audit(paths, baseline=P.baseline, selection=P.selections, alpha=P.alpha, rope=P.rope,
                   reference_table=P.reference or None, reps=P.reps, optional=[P.store_dir], family=P.family)
record_audit_lines(P.output_dir, result.summary + notes)
display(pd.DataFrame({"audit": result.summary + notes}))

# %% [markdown]
# ## Claims
#
# One row per claim; `ci_low`/`ci_high` is the per-claim 95% interval of Δ (points), `sim_low`/`sim_high` the
# simultaneous one over the family; `p` the unadjusted valid p-value, `p_adj` and `p_equiv_adj` the step-down's;
# `verdict_table` the verdict in the all-claims family. The decided claims first (under the chosen family and the
# strict one), then why the others stay undecided.

# %%
claims = pd.concat([a.claims.assign(input=a.input.name) for a in result.audits], ignore_index=True)
cols = ["input", "board", "selection", "dataset", "algorithm", "delta", "ci_low", "ci_high", "p", "p_adj", "verdict",
        "verdict_table", "verdict_nominal", "test"]
display(claims.groupby(["input", "board", "selection"])["verdict"].value_counts().unstack(fill_value=0))
display(claims[(claims["verdict"] != "undecided") | claims["rounding_changed"]][cols].round(4))
und = claims[claims["verdict"] == "undecided"]
display(und[["input", "selection", "dataset", "algorithm", "delta", "trials_needed", "trials_needed_low",
             "trials_needed_high", "trials_equivalence", "why"]].head(20))

# %% [markdown]
# ## Across datasets
#
# Probability of improvement over the baseline (with a table: over datasets, from the published means, exact binomial
# interval; with a sweep: over trials, stratified bootstrap), IQM of the difference to the baseline's mean, and the
# Bayesian signed-rank probabilities with the ROPE; each interval's coverage measured on simulated data beside it.

# %%
agg = pd.concat([a.aggregate.assign(input=a.input.name) for a in result.audits], ignore_index=True)
display(agg[["input", "board", "selection", "algorithm", "prob_improvement", "ci_low", "ci_high", "ci_coverage",
             "iqm_delta", "iqm_delta_low", "iqm_delta_high", "p_better", "p_equivalent", "p_worse", "basis"]].round(3))
for a in result.audits:
    for key, f in a.friedman.items():
        print(a.input.name, key, f.summary())

# %% [markdown]
# ## Report: figures, tables, HTML and JSON
#
# Forest plots of Δ per dataset, probability of improvement, the Wilcoxon map (each pair's median difference, the
# pairs Holm decides marked, and whether any pair could be decided with this many datasets) and the CD diagram (per
# input and selection method) go to `figures/`, the claims to `tables/08_audit_claims.*`, and one HTML page plus the JSON contract
# to `audit_report.html` and `audit.json` in the output folder.

# %%
written = write_outputs(result, html_path=f"{P.output_dir}/audit_report.html", json_path=f"{P.output_dir}/audit.json",
                        output_dir=P.output_dir)
print(f"{len(written)} files written to {P.output_dir}")
shown = [p for p in written if p.suffix == ".png" and ("forest" in p.name or "poi" in p.name or "cd" in p.name)]
display(*[Image(filename=str(p)) for p in shown[:6]])
