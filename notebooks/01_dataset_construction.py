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
# # 01 — PaHCC dataset construction
#
# Zhang, Zhang & Liu, *Towards Reliable Domain Generalization: A New Dataset and Evaluations*, **Sec. 3**, Fig. 7 and Tables 3–6: PaHCC has three *printed* domains split by font type —
# **d0** standard printed, **d1** distorted printed, **d2** handwriting-style printed — and one *handwritten*
# domain (**hw**, CASIA-HWDB scans in the paper). The paper's sources cannot be downloaded here, so
# `dganalysis.data.pahcc.build_pahcc` renders the installed fonts (`install_fonts.sh`) and, unless a user gives
# CASIA-HWDB `.gnt` files (`gnt_dir=`), uses **simulated handwriting** from hanzi-writer-data stroke medians.
# Every number and figure of the hw domain below is therefore *simulated* unless the info says otherwise.
# All domains are gray, 1 channel, dark ink on white.

# %% tags=["parameters"]
output_dir = "../outputs/default"
store_dir = "../outputs/default/store"
data_dir = "../outputs/data"
n_classes = 8
image_size = 32
writers = 6
seed = 0

# %%
# the parameters above (papermill's injected ones included) as one frozen, checked object; the planner
# and helpers below take it whole (dganalysis.studies.params)
from dganalysis.studies.study import study
S = study("01_dataset_construction")  # its parameter class, plan and design
P = S.params.from_namespace(globals())

# %% [markdown]
# ## Design, before the runs
# The claims this notebook tests, the effect each expects (with its source), the power this run gives it and what it
# cannot decide (`dganalysis.studies.design`; also printed by `dganalysis run --dry-run` and listed in `index.md`).

# %%
from dganalysis.studies.design import design_frame, write_design
DESIGN = S.claims(P)
write_design(P.output_dir, "01_dataset_construction", DESIGN)
design_frame(DESIGN)

# %%
import logging

import matplotlib.pyplot as plt
from IPython.display import display

from dganalysis.data.pahcc import build_pahcc, pahcc_stats
from dganalysis.data.pahcc import figures as pf
from dganalysis.plots import save_figure, save_table, setup_style

setup_style()
logging.basicConfig(level=logging.INFO)

# %% [markdown]
# ## Build (or load the cached build) and its binarized view (per-image Otsu)

# %%
ds = build_pahcc(size=P.n_classes, image_size=P.image_size, writers=P.writers, seed=P.seed, data_dir=P.data_dir)
ds_bin = build_pahcc(size=P.n_classes, image_size=P.image_size, writers=P.writers, seed=P.seed, data_dir=P.data_dir, binarize=True)
print(ds.info["source"], "| hw:", ds.info["hw_source"])
print({d.name: d.images.shape for d in ds}, "| build seconds:", ds.info["build_seconds"])

# %% [markdown]
# ## Fig. 7-style examples per domain

# %%
fig = pf.domain_mosaics(ds, rows=3, cols=10, seed=P.seed)
save_figure(fig, "pahcc_examples", P.output_dir)
plt.show()

# %% [markdown]
# ## Statistics (Tables 3–6 form, from the stored arrays)

# %%
stats = pahcc_stats(ds)
save_table(stats["printed"], "pahcc_printed_stats", P.output_dir, caption="PaHCC printed domains (rebuilt from installed fonts)")
save_table(stats["handwritten"], "pahcc_handwritten_stats", P.output_dir,
           caption="PaHCC handwritten domain (" + ("SIMULATED writers" if ds.info["writers_simulated"] else "real scans") + ")")
display(stats["printed"])
display(stats["handwritten"])

# %% [markdown]
# ## Gray vs binarized examples

# %%
fig = pf.gray_vs_binary(ds, ds_bin, n=10, seed=P.seed)
save_figure(fig, "pahcc_gray_vs_binary", P.output_dir)
plt.show()

# %% [markdown]
# ## Foreground intensity per domain
#
# The shortcut the paper's binarization study addresses: printed glyphs have uniform black ink, scanned
# handwriting uneven gray ink (here: the simulated writers' pressure, ink level, blur and noise).

# %%
fig = pf.foreground_histograms(ds)
save_figure(fig, "pahcc_foreground_hist", P.output_dir)
plt.show()
fg = pf.foreground_table(ds)
save_table(fg, "pahcc_foreground_intensity", P.output_dir, caption="Foreground gray levels (pixels < 160) per domain")
display(fg)

# %% [markdown]
# ## Fonts per printed domain (missing glyphs counted)

# %%
fonts = pf.fonts_table(ds)
save_table(fonts, "pahcc_fonts", P.output_dir, caption="Fonts per PaHCC printed domain")
display(fonts.groupby("domain").agg(fonts=("font", "count"), samples=("samples", "sum"), missing=("missing", "sum")))
display(fonts)
