"""An executed run of a profile, published into the documentation site: ``dganalysis report --docs DIR``.

A reader of the docs should see every notebook with the figures and tables of a real run without running anything.
:func:`publish` copies each executed notebook of ``outputs/<profile>/notebooks/`` (the outputs papermill kept) into
``DIR`` and writes ``DIR/index.md``: the provenance line and the findings summary of the run's ``index.md`` (what
made it, which finding reproduced), then a table of contents of the notebooks. The site renders the notebooks as
pages without executing them (``nb_execution_mode = "off"`` in ``docs/conf.py``, MyST-NB).

Absolute paths of the machine that ran the notebooks are replaced by ``outputs/<profile>`` so the pages say where
things were relative to a checkout, not on someone's disk. Files are written atomically; notebooks of the folder that
the run does not have are removed, so the folder is always one run.
"""

from __future__ import annotations

import json
from pathlib import Path

from dganalysis import io
from dganalysis.studies.report import LINK_LINE, index_summary
from dganalysis.studies.run_history import read_history, run_folder
from dganalysis.validation import MissingInputError

INDEX = "index.md"


def _relative(text: str, out: Path, profile: str) -> str:
    """Replace the run folder's absolute path (resolved and as given) by ``outputs/<profile>``."""
    for p in {str(out.resolve()), str(out.absolute())}:
        text = text.replace(p, f"outputs/{profile}")
    return text


def _page(summary: str, names: list[str], profile: str) -> str:
    lines = [line for line in summary.splitlines() if line.strip() != LINK_LINE]
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    head = [f"# An executed run: profile `{profile}`", "",
            "Every notebook below was executed by `dganalysis run --profile " + profile + "` and is shown with the "
            "outputs of that run (nothing is executed when the site is built). Numbers on simulated data say "
            "*simulated* where they appear. To reproduce: the README's first command.", ""]
    toc = ["", "```{toctree}", ":maxdepth: 1", "", *names, "```", ""]
    return "\n".join([*head, *lines, *toc])


def publish(out: str | Path, docs_dir: str | Path, profile: str = "quick") -> list[Path]:
    """Copy the executed notebooks of ``out`` (= ``outputs/<profile>``) into ``docs_dir`` and write its index page.

    Only the base run of each notebook is published (variant runs live in their own folders and are summarised by
    the base notebook's findings). Raises :class:`FileNotFoundError` naming ``out`` when it holds no recorded run
    or a recorded notebook's executed copy is missing. Returns the files written, the index page last.
    """
    out, docs_dir = Path(out), Path(docs_dir)
    runs = [r for r in read_history(out) if not run_folder(r.name)]
    index = out / "index.md"
    if not runs or not index.is_file():
        raise MissingInputError(f"{out}: no run recorded (runs.json and index.md expected); "
                                f"run `dganalysis run --profile {profile}` first")
    sources = {r.name: out / "notebooks" / f"{r.name}.ipynb" for r in runs}
    missing = [str(p) for p in sources.values() if not p.is_file()]
    if missing:
        raise MissingInputError(f"{out}: executed notebook(s) missing: {', '.join(missing)}")
    docs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, src in sources.items():
        nb = json.loads(_relative(src.read_text(encoding="utf-8"), out, profile))
        written.append(io.write_text(docs_dir / f"{name}.ipynb", json.dumps(nb, indent=1, ensure_ascii=False) + "\n"))
    for old in docs_dir.glob("*.ipynb"):
        if old.stem not in sources:
            old.unlink()
    summary = _relative(index_summary(index.read_text(encoding="utf-8"), list(sources)), out, profile)
    summary = summary.replace("](notebooks/", "](")  # the notebooks are siblings of the page here
    written.append(io.write_text(docs_dir / INDEX, _page(summary, list(sources), profile)))
    return written
