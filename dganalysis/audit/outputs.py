"""The audit's outputs: figures, the claims as CSV and booktabs LaTeX, the JSON contract, one self-contained HTML page
(the template ``audit.html.j2`` of :mod:`dganalysis.templates`).

Figures (:func:`figures`): a forest plot of Δ with its CI per dataset (one panel per dataset, colour = verdict), the
probability of improvement with its CI, the critical-difference diagram (Friedman/Nemenyi) beside the Wilcoxon map
(each pair's median difference, the pairs Holm decides marked: :func:`wilcoxon_plot`), and — when the raw-sweep
analyses ran — expected best accuracy vs search budget and the selection regret. Every verdict sentence of the page states n, the test and the correction
(:func:`dganalysis.audit.words.verdict_sentence`). The words and counts come with the result
(:attr:`dganalysis.audit.run.InputAudit.words`); this module renders them.
"""

from __future__ import annotations

import base64
import io as _io
import json
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dganalysis import io, templates
from dganalysis.audit.claims import FAMILY_WORDS
from dganalysis.audit.contract import to_json
from dganalysis.audit.run import AuditResult, InputAudit
from dganalysis.validation import ConfigError

COLORS = {"better": "#0072B2", "worse": "#D55E00", "equivalent": "#009E73", "undecided": "#999999"}
NAME_PREFIX = "08_audit"  #: figure and table names start with the notebook's number, as the other notebooks' do
CLAIM_TABLE = ["selection", "dataset", "algorithm", "delta", "ci_low", "ci_high", "sim_low", "sim_high", "p", "p_adj",
               "p_equiv_adj", "verdict", "verdict_table", "verdict_nominal", "trials_needed", "trials_equivalence", "n",
               "test", "why"]


def _families(a: InputAudit):
    return list(a.claims.groupby(["board", "selection"], sort=False)) if not a.claims.empty else []


def _label(a: InputAudit, board: str, sel: str) -> str:
    return f"{Path(a.input.name).name} · {sel}{' · ' + board if board else ''}"


def panel_title(label: str, width: int = 44) -> str:
    """A panel's title that fits its panel: ``label`` as is up to ``width`` characters, on two lines up to twice that,
    and beyond, its first and last ``width`` characters around an ellipsis — a store's dataset label carries the
    sweep's overrides (paths included), whose two ends tell its settings apart."""
    if len(label) <= width:
        return label
    if len(label) <= 2 * width:
        return textwrap.fill(label, width, break_long_words=True, break_on_hyphens=False)
    return f"{label[:width]}\n…{label[-(width - 1):]}"


def panel_titles(labels: list[str], width: int = 44) -> dict[str, str]:
    """:func:`panel_title` of each label, numbered ``[1]``, ``[2]``, … where two cut titles would read the same (the
    claims table keeps the whole labels)."""
    cut = {lab: panel_title(str(lab), width) for lab in labels}
    counts = Counter(cut.values())
    seen: Counter = Counter()
    out = {}
    for lab, t in cut.items():
        if counts[t] > 1:
            seen[t] += 1
            t = f"{t} [{seen[t]}]"
        out[lab] = t
    return out


def forest_plot(fam: pd.DataFrame, title: str):
    """Δ (points) with its CI per algorithm, one panel per dataset, coloured by verdict. Each panel's range is set by
    the per-claim CIs (with a margin): the simultaneous intervals, at n = 3 often far wider, run off the panel's
    edge rather than squeezing every per-claim interval to a dot."""
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(fam["dataset"]))
    titles = panel_titles(datasets)
    ncols = min(4, len(datasets))
    nrows = int(np.ceil(len(datasets) / ncols))
    algs = sorted(fam["algorithm"].unique())
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 0.22 * len(algs) * nrows + 1.8), squeeze=False,
                             sharey=True)
    for ax, ds in zip(axes.ravel(), datasets):
        part = fam[fam["dataset"] == ds].set_index("algorithm").reindex(algs)
        y = np.arange(len(algs))
        for yi, (_, r) in zip(y, part.iterrows()):
            if pd.isna(r["delta"]):
                continue
            c = COLORS[r["verdict"]]
            if np.isfinite(r["ci_low"]):
                ax.plot([r["sim_low"], r["sim_high"]], [yi, yi], color=c, lw=0.8)
                ax.plot([r["ci_low"], r["ci_high"]], [yi, yi], color=c, lw=2.5)
            ax.plot(r["delta"], yi, "o", color=c, ms=4)
        ax.axvline(0, color="k", lw=0.7)
        ends = part[["ci_low", "ci_high", "delta"]].to_numpy(dtype=float)
        ends = ends[np.isfinite(ends)]
        if ends.size:
            lo, hi = min(ends.min(), 0.0), max(ends.max(), 0.0)
            pad = 0.15 * (hi - lo) or 1.0
            ax.set_xlim(lo - pad, hi + pad)
        ax.set_title(titles[ds], fontsize="small")
        ax.set_yticks(y, algs, fontsize="x-small")
        ax.invert_yaxis() if ds == datasets[0] else None
        ax.set_xlabel("Δ vs baseline (points)", fontsize="x-small")
    for ax in axes.ravel()[len(datasets):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], color=c, marker="o", lw=1.5, label=v) for v, c in COLORS.items()]
    fig.legend(handles=handles, loc="lower center", fontsize="x-small", ncol=4, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize="small", x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0.06, 1, 0.93))
    return fig


def poi_plot(agg: pd.DataFrame, title: str):
    """Probability of improvement over the baseline with its CI, one row per algorithm."""
    import matplotlib.pyplot as plt

    agg = agg.sort_values("prob_improvement")
    fig, ax = plt.subplots(figsize=(5, 0.25 * len(agg) + 1.2))
    y = np.arange(len(agg))
    ax.errorbar(agg["prob_improvement"], y, xerr=[agg["prob_improvement"] - agg["ci_low"],
                                                   agg["ci_high"] - agg["prob_improvement"]], fmt="o", ms=4,
                capsize=2)
    ax.axvline(0.5, color="k", lw=0.7, ls="--")
    ax.set_yticks(y, agg["algorithm"], fontsize="x-small")
    ax.set_xlim(-0.02, 1.02)
    basis = agg["basis"].iloc[0] if len(agg) else ""
    ax.set_xlabel(f"P(algorithm > {agg['baseline'].iloc[0] if len(agg) else 'baseline'}) — over {basis}",
                  fontsize="x-small")
    ax.set_title(title, fontsize="small")
    fig.tight_layout()
    return fig


def wilcoxon_plot(wil: pd.DataFrame, title: str, outcome: str):
    """Every pair's median difference over the datasets (row − column, points; blue: the row higher), the pairs Holm
    decides marked ✱ — with the family's ``outcome`` (:func:`~dganalysis.audit.words.wilcoxon_summary`) under the
    title, so a map without marks says whether the test could have decided anything."""
    import matplotlib.pyplot as plt

    algs = sorted(set(wil["a"]) | set(wil["b"]))
    pos = {a: i for i, a in enumerate(algs)}
    mat = np.full((len(algs), len(algs)), np.nan)
    for a, b, d in zip(wil["a"], wil["b"], wil["median_diff"]):
        mat[pos[a], pos[b]], mat[pos[b], pos[a]] = d, -d
    side = max(float(np.nanmax(np.abs(mat))) if np.isfinite(mat).any() else 0.0, 1e-9)
    width = max(0.35 * len(algs) + 2.4, 6.5)
    fig, ax = plt.subplots(figsize=(width, max(0.35 * len(algs) + 1.8, 4.5)))
    im = ax.imshow(mat, vmin=-side, vmax=side, cmap="RdBu")
    for a, b, direction in zip(wil["a"], wil["b"], wil["direction"]):
        if direction != 0:
            for r, c in ((pos[a], pos[b]), (pos[b], pos[a])):
                ax.text(c, r, "✱", ha="center", va="center", fontsize="small")
    ax.set_xticks(range(len(algs)), algs, rotation=90, fontsize="x-small")
    ax.set_yticks(range(len(algs)), algs, fontsize="x-small")
    fig.colorbar(im, ax=ax, label="median Δ, row − column (points)", shrink=0.8)
    summary = textwrap.fill(f"{outcome} (✱; each pair on its own)", int(width * 14))
    ax.set_title(f"{title}\n{summary}", fontsize="x-small")
    fig.tight_layout()
    return fig


def sweep_plots(a: InputAudit, prefix: str) -> dict:
    """Expected-max curves and selection regret from the raw-sweep analyses, where they ran."""
    import matplotlib.pyplot as plt

    out = {}
    curve = a.sweep.get("expected_max")
    if isinstance(curve, pd.DataFrame) and not curve.empty:
        datasets = list(dict.fromkeys(curve["dataset"]))
        titles = panel_titles(datasets, 50)
        fig, axes = plt.subplots(1, len(datasets), figsize=(3.5 * len(datasets), 3), squeeze=False)
        for ax, ds in zip(axes[0], datasets):
            for alg, part in curve[curve["dataset"] == ds].groupby("algorithm"):
                line, = ax.plot(part["budget"], part["expected_max"], label=alg)
                if "expected_max_unbiased" in part:  # the interval is centred on the unbiased estimate
                    ax.plot(part["budget"], part["expected_max_unbiased"], ls="--", lw=0.8, color=line.get_color())
                ax.fill_between(part["budget"], part["ci_low"], part["ci_high"], alpha=0.2, color=line.get_color())
            ax.set_title(titles[ds], fontsize="small")
            ax.set_xlabel("hparam draws (budget)")
            ax.set_ylabel("expected best accuracy")
        axes[0][0].legend(fontsize="x-small")
        fig.suptitle("Expected best accuracy vs search budget (Dodge et al. 2019)", fontsize="small")
        fig.tight_layout()
        out[f"{prefix}_expected_max"] = fig
    regret = a.sweep.get("selection_regret")
    if isinstance(regret, pd.DataFrame) and not regret.empty:
        fig, ax = plt.subplots(figsize=(6, 0.25 * len(regret) + 1.2))
        lab = [f"{panel_title(str(d), 40).replace(chr(10), ' ')} · {a} · {s}"
               for d, a, s in zip(regret["dataset"], regret["algorithm"], regret["selection"])]
        y = np.arange(len(regret))
        ax.errorbar(regret["regret"], y, xerr=[regret["regret"] - regret["ci_low"], regret["ci_high"] - regret["regret"]],
                    fmt="o", ms=3, capsize=2)
        ax.set_yticks(y, lab, fontsize="xx-small")
        ax.axvline(0, color="k", lw=0.7)
        ax.set_xlabel("regret against oracle selection")
        ax.set_title("Model-selection regret", fontsize="small")
        fig.tight_layout()
        out[f"{prefix}_selection_regret"] = fig
    return out


def figures(result: AuditResult) -> dict:
    """name → matplotlib Figure for every input and family (see the module docstring)."""
    import matplotlib as mpl

    from dganalysis.stats.rank_tests import plot_cd_diagram

    mpl.rcParams["figure.max_open_warning"] = 0  # the caller closes them (write_outputs)
    out = {}
    for i, a in enumerate(result.audits):
        for (board, sel), fam in _families(a):
            key = f"{NAME_PREFIX}{i}_{sel}" + (f"_{_slug(board)}" if board else "")
            title = _label(a, board, sel)
            out[f"{key}_forest"] = forest_plot(fam, f"{title}\nΔ with {int(result.settings['confidence'] * 100)}% CI "
                                                    "(thick: per claim; thin: simultaneous over the family, "
                                                    "Bonferroni); rounding honoured")
            agg = a.aggregate[(a.aggregate["board"] == board) & (a.aggregate["selection"] == sel)]
            if not agg.empty:
                out[f"{key}_poi"] = poi_plot(agg, title)
            wil = a.wilcoxon[(a.wilcoxon["board"] == board) & (a.wilcoxon["selection"] == sel)]
            if not wil.empty:
                out[f"{key}_wilcoxon"] = wilcoxon_plot(wil, title, a.words.families[(board, sel)].wilcoxon)
            if (board, sel) in a.friedman:
                out[f"{key}_cd"] = None  # the critical-difference diagram, drawn below in this place among the names
        out.update(sweep_plots(a, f"{NAME_PREFIX}{i}"))
    for i, a in enumerate(result.audits):  # the critical-difference diagrams, by the rank tests' own plot
        for (board, sel), _ in _families(a):
            if (board, sel) in a.friedman:
                key = f"{NAME_PREFIX}{i}_{sel}" + (f"_{_slug(board)}" if board else "")
                out[f"{key}_cd"] = plot_cd_diagram(a.friedman[(board, sel)], title=_label(a, board, sel))
    return out


def _n_range(fam: pd.DataFrame) -> str:
    lo, hi = int(fam["n"].min()), int(fam["n"].max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def claims_latex(result: AuditResult) -> str:
    """All claims as one booktabs table with a caption stating the tests, n and the correction."""
    s = result.settings
    frames = [a.claims.assign(input=Path(a.input.name).name) for a in result.audits if not a.claims.empty]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["input", "board", *CLAIM_TABLE])
    df = df[["input", "board", *[c for c in CLAIM_TABLE if c not in ("test", "why")]]]
    caption = (f"Claims against {s['baseline']}: Δ in accuracy points on each dataset's average over test "
               f"environments with its {int(s['confidence'] * 100)}\\% CI; Welch's statistic with its p-value "
               "calibrated to the worst case over the variance ratio (paired t where a sweep's arms share trial "
               f"seeds) and TOST within ±{s['rope']:g} points, one step-down per family "
               f"({FAMILY_WORDS[s.get('family', 'algorithm')].format(b=s['baseline'])}), α = {s['alpha']:g}; "
               "verdict\\_table: in the family of all claims of a selection method; "
               "published rounding honoured (worst case over each printed number's rounding interval); "
               "verdict\\_nominal reads the printed numbers at face value. n = trials per cell.")
    body = df.to_latex(index=False, float_format=lambda v: f"{v:.3g}", escape=True)
    return ("\\begin{table}[t]\n\\centering\n\\small\n\\caption{" + caption + "}\n\\label{tab:audit-claims}\n"
            + body + "\\end{table}\n")


PAGE_DPI = 110  #: resolution of the page's embedded figures


def _png(fig, saved: Path | None = None) -> str:
    """The figure as a base64 PNG at :data:`PAGE_DPI`: drawn anew, or — with ``saved``, the figure's PNG as
    :func:`dganalysis.plots.save_figure` wrote it — that render scaled down (box filter), in a third of the time of
    a fresh draw (a file of lower resolution than the page's is drawn anew instead). A scaled image keeps the saved
    file's crop, which can differ from a fresh 110-dpi draw's by tens of pixels where long labels stick out: the
    tight box of hinted text depends on the resolution."""
    buf = _io.BytesIO()
    if saved is not None:
        from PIL import Image

        with Image.open(saved) as im:
            dpi = float(im.info.get("dpi", (0, 0))[0])
            if dpi < PAGE_DPI - 0.5:  # a coarser file (savefig.dpi below the page's): draw anew, never enlarge
                saved = None
            else:
                size = (max(1, round(im.width * PAGE_DPI / dpi)), max(1, round(im.height * PAGE_DPI / dpi)))
                im = im.convert("RGBA")
                if im.getchannel("A").getextrema() == (255, 255):  # opaque: RGB, a quarter fewer bytes to pack
                    im = im.convert("RGB")
                # box filter (each pixel the average of the area it covers): no ringing around text, so the PNG
                # compresses to about the size of a fresh draw's (Lanczos: ~1.7x)
                im.resize(size, Image.Resampling.BOX).save(buf, format="png", dpi=(PAGE_DPI, PAGE_DPI))
    if saved is None:
        fig.savefig(buf, format="png", dpi=PAGE_DPI, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def _table_html(df: pd.DataFrame, max_rows: int = 400) -> templates.Html:
    """The first ``max_rows`` rows of ``df`` as an HTML table; empty for no rows (the page says "(none)")."""
    if df is None or df.empty:
        return templates.Html("")
    return templates.Html(df.head(max_rows).to_html(index=False, float_format=lambda v: f"{v:.3g}", border=0,
                                                    classes="t", na_rep="—"))


def _family_view(a: InputAudit, board: str, sel: str, fam: pd.DataFrame, images: list[str]) -> dict:
    """One family's part of the page: the decided claims in sentences, those resting on rounding, its figures, the
    table of all claims, the across-datasets table, Friedman's line and the Wilcoxon pairs it decides."""
    said = a.words.families[(board, sel)]
    agg = a.aggregate[(a.aggregate["board"] == board) & (a.aggregate["selection"] == sel)]
    wil = a.wilcoxon[(a.wilcoxon["board"] == board) & (a.wilcoxon["selection"] == sel)]
    dec = wil[wil["direction"] != 0]
    return {"selection": sel, "board": board, "note": said.notes["note"], "n_claims": len(fam),
            "n_range": _n_range(fam), "decided": said.decided, "changed": said.changed, "images": images,
            "claims": _table_html(fam[CLAIM_TABLE]), "aggregate": _table_html(agg.drop(columns=["board", "selection"])),
            "friedman": a.friedman[(board, sel)].summary() if (board, sel) in a.friedman else "",
            "wilcoxon": said.wilcoxon, "wilcoxon_table": _table_html(dec)}


def html_page(result: AuditResult, figs: dict, saved: dict[str, Path] | None = None) -> str:
    """One self-contained page (``audit.html.j2``): settings, summary, per input the decided claims in sentences, the
    tables, figures. ``saved``: figure name → its PNG already written by :func:`dganalysis.plots.save_figure`,
    embedded scaled down instead of drawing the figure again (see :func:`_png`)."""
    s = result.settings
    saved = saved or {}

    def pngs(*names: str) -> list[str]:
        """The base64 PNG of each of ``names`` that is a figure of the audit, in order."""
        return [_png(figs[n], saved.get(n)) for n in names if n in figs]
    family = s.get("family", "algorithm")
    audits = []
    for i, a in enumerate(result.audits):
        families = []
        for (board, sel), fam in _families(a):
            key = f"{NAME_PREFIX}{i}_{sel}" + (f"_{_slug(board)}" if board else "")
            families.append(_family_view(a, board, sel, fam,
                                         pngs(*(f"{key}_{suffix}" for suffix in ("forest", "poi", "wilcoxon", "cd")))))
        reference = None
        if a.reference is not None:
            reference = {"name": str(s["reference"]), "counts": str(a.reference["verdict"].value_counts().to_dict()),
                         "table": _table_html(a.reference)}
        audits.append({"name": a.input.name, "kind": a.input.kind, "notes": a.notes + a.input.notes,
                       "families": families, "reference": reference,
                       "sweep_tables": [(name.replace("_", " "), _table_html(value)) for name, value in a.sweep.items()
                                        if isinstance(value, pd.DataFrame)],
                       "images": pngs(f"{NAME_PREFIX}{i}_expected_max", f"{NAME_PREFIX}{i}_selection_regret")})
    settings = {"baseline": s["baseline"], "selections": ", ".join(s["selections"]), "alpha": f"{s['alpha']:g}",
                "rope": f"{s['rope']:g}", "confidence": int(s["confidence"] * 100), "family": family,
                "family_words": FAMILY_WORDS[family].format(b=s["baseline"])}
    return templates.render_template("audit.html.j2", s=settings, summary=result.summary, audits=audits)


#: fields of a selected-hparams record that become fields of a job in the re-run file
_JOB_FIELDS = ("dataset", "algorithm", "train_domains", "test_domains", "val_domains", "hparams_seed", "trial_seed",
               "steps", "checkpoint_freq", "holdout_fraction", "dataset_kwargs")


def selected_hparams_config(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`dganalysis.audit.sweep_analyses.selected_hparams` records as the configuration ``dganalysis sweep --config
    FILE`` re-runs: a top-level ``jobs`` list, each job the selected run (same split, trial and hparams_seed) with its
    hyperparameters fixed through ``hparams_overrides``, and ``selected`` keeping the records themselves (step,
    job_id, selection). A re-run with the same code reproduces the selected run; ``--steps`` shortens every job.
    :func:`write_outputs` writes it beside the page (``<stem>.<input>.selected_hparams.json``)."""
    if isinstance(records, Mapping) or not all(isinstance(r, Mapping) for r in records):
        raise ConfigError("selected_hparams_config: expected a list of records from selected_hparams()")
    jobs = []
    for i, r in enumerate(records):
        missing = [k for k in ("dataset", "algorithm", "train_domains", "test_domains", "hparams") if k not in r]
        if missing:
            raise ConfigError(f"selected_hparams_config: record {i} lacks {missing}; expected selected_hparams() "
                              "output")
        job = {k: r[k] for k in _JOB_FIELDS if k in r}
        hparams = dict(r["hparams"])
        if "steps" in hparams:  # our engine records the job's steps among the hparams; it is a job field
            job.setdefault("steps", hparams.pop("steps"))
            hparams.pop("steps", None)
        job["hparams_overrides"] = hparams
        jobs.append(job)
    return {"jobs": jobs, "selected": [dict(r) for r in records]}


def write_outputs(result: AuditResult, html_path: str | Path | None = None, json_path: str | Path | None = None,
                  output_dir: str | Path | None = None) -> list[Path]:
    """Write the HTML page (with ``<stem>.claims.csv`` and ``<stem>.claims.tex`` beside it), the JSON, and — with
    ``output_dir`` — every figure and table in the notebooks' layout (``figures/``, ``tables/``); the paths written,
    in that order. Everything is made first (figures, page, tables, JSON), then written. Matplotlib is imported only
    where a figure is drawn (the HTML page, ``output_dir``)."""
    frames = [a.claims.assign(input=a.input.name) for a in result.audits]
    all_claims = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    texts: dict[Path, str] = {}  # the page and the claims beside it
    configs: dict[Path, dict[str, Any]] = {}  # the selected hparams' re-run files
    figure_files: list[Path] = []
    table_files: list[Path] = []
    if html_path or output_dir:
        import matplotlib.pyplot as plt

        from dganalysis import plots

        figs = figures(result)
        saved: dict[str, Path] = {}
        try:
            if output_dir:  # first, so that the page embeds these renders scaled down instead of drawing each again
                for name, fig in figs.items():
                    paths = plots.save_figure(fig, name, output_dir)
                    figure_files += paths
                    saved[name] = next(p for p in paths if p.suffix == ".png")
                aggs = pd.concat([a.aggregate.assign(input=a.input.name) for a in result.audits], ignore_index=True)
                table_files += plots.save_table(all_claims, "08_audit_claims", output_dir, caption="Audit claims")
                table_files += plots.save_table(aggs, "08_audit_aggregate", output_dir, caption="Across datasets",
                                                float_format="%.3f")
            if html_path:
                html_path = Path(html_path)
                texts[html_path] = html_page(result, figs, saved)
                texts[html_path.with_suffix(".claims.csv")] = all_claims.to_csv(index=False)
                texts[html_path.with_suffix(".claims.tex")] = claims_latex(result)
                for a in result.audits:
                    hp = a.sweep.get("selected_hparams")
                    if hp:
                        name = f"{html_path.stem}.{_slug(Path(a.input.name).name)}.selected_hparams.json"
                        configs[html_path.with_name(name)] = selected_hparams_config(hp)
        finally:
            for fig in figs.values():
                plt.close(fig)
    contract = json.dumps(to_json(result), indent=1, allow_nan=False) + "\n" if json_path else None
    written = [io.write_text(json_path, contract)] if json_path else []
    written += figure_files
    written += [io.write_text(path, text) for path, text in texts.items()]
    written += [io.write_json(path, config) for path, config in configs.items()]
    return written + table_files
