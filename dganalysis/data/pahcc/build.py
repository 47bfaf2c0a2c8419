"""Build PaHCC (Zhang, Zhang & Liu, Sec. 3, Fig. 7, Tables 3–6): printed domains d0, d1, d2 and handwritten hw.

- d0 standard printed, d2 handwriting-style printed: discovered fonts assigned by ``resources/fonts.yaml``.
- d1 distorted printed: seeded distortion instances of d0 faces (see :mod:`.render`).
- hw: CASIA-HWDB ``.gnt`` files (``gnt_dir``), a DomainBed-layout folder (``handwritten_dir``, class folders
  named by the character), or by default *simulated* handwriting (:mod:`.handwriting`), labelled so in info.

All domains are grayscale uint8[N, 1, S, S], dark ink on white. Per-sample metadata: ``font`` (d0–d2) or
``writer`` (hw), ints indexing ``info["fonts"][domain]`` / ``info["writers"]``. The gray build is cached in
``<data_dir>/pahcc/pahcc-<hash of inputs>/``; binarized views are derived from it on load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.data.pahcc.classes import class_source, pahcc_classes
from dganalysis.data.pahcc.fonts import (
    FONTS_YAML,
    CoverageCache,
    FontFace,
    assign_domains,
    discover_fonts,
    load_font_config,
)
from dganalysis.data.pahcc.handwriting import WriterStyle, hanzi_writer_dir, simulate_writer
from dganalysis.data.pahcc.render import Distortion, render_distorted, render_face
from dganalysis.data.registry import register_dataset, resolve_data_dir
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)
BUILD_VERSION = 2  # bump when rendering/simulation code changes the images
DOMAINS = ("d0", "d1", "d2", "hw")


def _seed(*parts: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(p) for p in parts]))


def _resolve_fonts(fonts: Sequence[str | Path | FontFace] | None) -> list[FontFace]:
    if fonts is None:
        return discover_fonts()
    faces = [f for f in fonts if isinstance(f, FontFace)]
    folders = [f for f in fonts if not isinstance(f, FontFace)]
    return faces + (discover_fonts(folders=folders, fontconfig=False, npm=False) if folders else [])


def _dir_fingerprint(root: str | Path | None, pattern: str) -> list[Any] | None:
    if root is None:
        return None
    root = Path(root)
    return [str(root.resolve())] + [(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                                    for p in sorted(root.rglob(pattern)) if p.is_file()]


def _images(ink: np.ndarray) -> np.ndarray:
    """Ink (0 = none) uint8[K, S, S] → dark-on-white images uint8[K, 1, S, S]."""
    return (255 - ink)[:, None]


def _printed_domain(name: str, jobs: list[tuple[str, Any]], chars: list[str], image_size: int,
                    cache: CoverageCache, bar) -> tuple[Domain, list[str], dict[str, int]]:
    imgs, labels, ids, names, missing = [], [], [], [], {}
    for fid, (fname, job) in enumerate(jobs):
        ink, idx = job()
        imgs.append(_images(ink))
        labels.append(idx)
        ids.append(np.full(len(idx), fid, np.int64))
        names.append(fname)
        if len(idx) < len(chars):
            missing[fname] = len(chars) - len(idx)
        bar.update(len(chars))
    if not imgs:
        raise MissingInputError(f"PaHCC domain {name}: no fonts assigned; install Chinese fonts "
                         "(bash dganalysis/data/pahcc/install_fonts.sh) or pass fonts=[folders]")
    dom = Domain(name, np.concatenate(imgs), np.concatenate(labels), {"font": np.concatenate(ids)})
    return dom, names, missing


def _hw_domain(chars: list[str], image_size: int, writers: int, samples_per_writer: int, seed: int,
               gnt_dir, handwritten_dir, data_dir, bar) -> tuple[Domain, list[str], dict[str, Any]]:
    if gnt_dir is not None:
        from dganalysis.data.pahcc.gnt import read_gnt_dir

        imgs, labels, wids, names, skipped = read_gnt_dir(gnt_dir, chars, image_size)
        info = {"hw_source": f"CASIA-HWDB .gnt files in {gnt_dir}", "simulated": False, "gnt_skipped": skipped}
        return Domain("hw", imgs, labels, {"writer": wids}), names, info
    if handwritten_dir is not None:
        from dganalysis.data.folder import import_folder

        ds = import_folder(handwritten_dir, image_size=image_size, channels=1, data_dir=data_dir)
        index = {c: k for k, c in enumerate(chars)}
        imgs, labels, wids = [], [], []
        for wid, d in enumerate(ds.domains):
            mapped = np.array([index.get(ds.classes[k], -1) for k in d.labels], np.int64)
            keep = mapped >= 0
            imgs.append(np.asarray(d.images)[keep])
            labels.append(mapped[keep])
            wids.append(np.full(int(keep.sum()), wid, np.int64))
        info = {"hw_source": f"image folder {handwritten_dir} (DomainBed layout, one domain folder per writer)",
                "simulated": False}
        return Domain("hw", np.concatenate(imgs), np.concatenate(labels), {"writer": np.concatenate(wids)}), \
            ds.domain_names, info
    imgs, labels, wids, styles = [], [], [], []
    for w in range(writers):
        style = WriterStyle.sample(_seed(seed, 3, w))
        x, idx = simulate_writer(chars, style, image_size, seed=int(_seed(seed, 4, w).integers(2**31)),
                                 samples=samples_per_writer)
        imgs.append(x[:, None])
        labels.append(idx)
        wids.append(np.full(len(idx), w, np.int64))
        styles.append(style.as_dict())
        bar.update(len(chars))
    names = [f"simulated writer {w:03d}" for w in range(writers)]
    info = {"hw_source": "SIMULATED handwriting from hanzi-writer-data stroke medians (not real scans)",
            "simulated": True, "writer_styles": styles}
    return Domain("hw", np.concatenate(imgs), np.concatenate(labels), {"writer": np.concatenate(wids)}), names, info


def build_pahcc(
    size: str | int = "mini",
    image_size: int = 64,
    fonts: Sequence[str | Path | FontFace] | None = None,
    writers: int = 40,
    samples_per_writer: int = 1,
    distorted_instances: int | None = None,
    binarize: bool | str | int = False,
    seed: int = 0,
    data_dir: str | Path | None = None,
    gnt_dir: str | Path | None = None,
    handwritten_dir: str | Path | None = None,
    font_config: str | Path | None = None,
) -> DomainDataset:
    """PaHCC with domains ``d0, d1, d2, hw`` (paper Sec. 3), cached; optionally a binarized view.

    Args:
        size: ``"mini"`` (100 classes, mini-PaHCC), ``"full"`` (1,000) or an int number of classes.
        image_size: side of the square gray images (paper: 64).
        fonts: None = discover (fontconfig + npm @fontsource); else font folders and/or :class:`FontFace` s.
        writers, samples_per_writer: simulated writers and samples per (writer, class) for the default hw.
        distorted_instances: d1 instances (default: one per d0 face times ``instances_per_base`` of the YAML).
        binarize: False (gray), True/"otsu" (per-image Otsu) or an int fixed threshold.
        seed: seeds distortions and simulated writers.
        gnt_dir / handwritten_dir: real handwritten sources replacing the simulated hw domain.
        font_config: domain-assignment YAML (default ``resources/fonts.yaml``).

    A build shows a progress bar (tqdm's; ``TQDM_DISABLE=1`` in the environment hides it).
    """
    if isinstance(binarize, bool):
        mode: str | int | None = "otsu" if binarize else None
    elif binarize == "otsu" or (isinstance(binarize, int) and 0 <= binarize <= 255):
        mode = binarize
    else:
        raise ConfigError(f"binarize={binarize!r}: expected False, True, 'otsu' or an int threshold in [0, 255]")
    if not isinstance(image_size, int) or image_size < 8:
        raise ConfigError(f"image_size={image_size!r}: expected an int >= 8")
    if gnt_dir is not None and handwritten_dir is not None:
        raise ConfigError("give at most one of gnt_dir= and handwritten_dir=")
    chars = pahcc_classes(size)
    cfg_path = Path(font_config) if font_config is not None else FONTS_YAML
    cfg = load_font_config(cfg_path)
    assigned = assign_domains(_resolve_fonts(fonts), cfg)
    d0, d2 = assigned.get("d0", []), assigned.get("d2", [])
    n_inst = distorted_instances if distorted_instances is not None else len(d0) * int(cfg["d1"].get("instances_per_base", 1))
    hw_pkg = hanzi_writer_dir() / "package.json"
    key_src = {
        "version": BUILD_VERSION, "classes": chars, "class_source": class_source(), "image_size": image_size,
        "d0": [f.key() for f in d0], "d2": [f.key() for f in d2], "font_config": cfg_path.read_text(encoding="utf-8"),
        "distorted_instances": n_inst, "seed": seed,
        "hw": {"gnt": _dir_fingerprint(gnt_dir, "*.gnt"), "folder": _dir_fingerprint(handwritten_dir, "*"),
               "writers": writers, "samples_per_writer": samples_per_writer,
               "hanzi_writer": hw_pkg.read_text() if (gnt_dir is None and handwritten_dir is None and hw_pkg.is_file()) else None},
    }
    key = hashlib.sha1(json.dumps(key_src, sort_keys=True, default=str).encode()).hexdigest()[:16]
    root = resolve_data_dir(data_dir) / "pahcc"
    folder = root / f"pahcc-{key}"
    if (folder / "manifest.json").is_file():
        log.info("PaHCC: loading cached build %s", folder)
    else:
        hw = _Handwriting(writers, samples_per_writer, gnt_dir, handwritten_dir, data_dir)
        _build(folder, root, chars, image_size, d0, d2, assigned, cfg, n_inst, seed, hw, size)
    ds = DomainDataset.load(folder)
    if mode is None:
        return ds
    from dganalysis.data.transforms import binarize_fixed, binarize_otsu

    if mode == "otsu":
        return ds.map_images(binarize_otsu, f"{ds.name}-binary", {"binarize": "otsu (per image)"})
    return ds.map_images(lambda x: binarize_fixed(x, int(mode)), f"{ds.name}-binary",
                         {"binarize": f"fixed threshold {int(mode)}"})


class _Handwriting(NamedTuple):
    """Where the hw domain comes from: ``writers`` × ``samples_per_writer`` simulated writers, or the real sources
    ``gnt_dir`` / ``handwritten_dir`` (read under ``data_dir``)."""

    writers: int
    samples_per_writer: int
    gnt_dir: Any
    handwritten_dir: Any
    data_dir: Any


def _build(folder: Path, root: Path, chars: list[str], image_size: int, d0: list[FontFace], d2: list[FontFace],
           assigned: dict[str, list[FontFace]], cfg: dict[str, Any], n_inst: int, seed: int, hw: _Handwriting,
           size) -> None:
    t0 = time.time()
    cache = CoverageCache(root / "font_coverage.json")
    simulated = hw.gnt_dir is None and hw.handwritten_dir is None
    total = len(chars) * (len(d0) + n_inst + len(d2) + (hw.writers if simulated else 0))
    ranges = cfg["d1"]["distortion"]
    with tqdm(total=total, desc="PaHCC glyphs", unit="glyph") as bar:
        jobs0 = [(f.name, lambda f=f: render_face(f, chars, image_size, cache)) for f in d0]
        dom0, names0, miss0 = _printed_domain("d0", jobs0, chars, image_size, cache, bar)
        jobs1 = []
        for i in range(n_inst):
            base = d0[i % len(d0)] if d0 else None
            dist = Distortion.sample(ranges, _seed(seed, 1, i))
            if base is not None:
                jobs1.append((f"{base.name} (distorted #{i})",
                              lambda b=base, d=dist: render_distorted(b, d, chars, image_size, cache)))
        dom1, names1, miss1 = _printed_domain("d1", jobs1, chars, image_size, cache, bar)
        jobs2 = [(f.name, lambda f=f: render_face(f, chars, image_size, cache)) for f in d2]
        dom2, names2, miss2 = _printed_domain("d2", jobs2, chars, image_size, cache, bar)
        cache.save()
        domh, writer_names, hw_info = _hw_domain(chars, image_size, hw.writers, hw.samples_per_writer, seed,
                                                 hw.gnt_dir, hw.handwritten_dir, hw.data_dir, bar)
    n_glyphs = sum(len(d) for d in (dom0, dom1, dom2, domh))
    info = {
        "source": "PaHCC (Zhang, Zhang & Liu, Sec. 3) rebuilt from installed fonts"
                  + (" + SIMULATED handwriting" if hw_info["simulated"] else " + real handwriting"),
        "size": size, "image_size": image_size, "seed": seed, "class_source": class_source(),
        "polarity": "dark ink on white background (255 = paper) in every domain",
        "fonts": {"d0": names0, "d1": names1, "d2": names2},
        "d1_bases": "d0 faces cycled, one seeded distortion per instance",
        "unassigned_fonts": [f.name for f in assigned.get("unassigned", [])],
        "missing_glyphs": {"d0": miss0, "d1": miss1, "d2": miss2},
        "missing_total": sum(sum(m.values()) for m in (miss0, miss1, miss2)),
        "writers": writer_names,
        "writers_simulated": bool(hw_info["simulated"]),
        "build_seconds": round(time.time() - t0, 2), "glyphs": n_glyphs,
        **hw_info,
    }
    ds = DomainDataset("PaHCC", chars, [dom0, dom1, dom2, domh], info)
    ds.save(folder)
    log.info("PaHCC: built %d images in %.1f s → %s", n_glyphs, time.time() - t0, folder)


def pahcc_stats(ds: DomainDataset) -> dict[str, Any]:
    """Tables 3–6-style statistics computed from the stored arrays.

    Returns ``{"printed": DataFrame, "handwritten": DataFrame}``: per printed domain (and Total) the number
    of fonts (distinct ``font`` ids present), samples per class (samples / classes) and samples; for hw the
    number of writers, samples per class and samples, with a ``source`` column saying *simulated* or real.
    """
    import pandas as pd

    n_classes = ds.n_classes
    rows = []
    for name in ("d0", "d1", "d2"):
        if name not in ds.domain_names:
            continue
        d = ds[name]
        rows.append({"domain": name, "#fonts": int(len(np.unique(d.meta["font"]))) if len(d) else 0,
                     "#samples per class": len(d) / n_classes, "#samples": len(d)})
    if rows:
        rows.append({"domain": "Total", "#fonts": sum(r["#fonts"] for r in rows),
                     "#samples per class": sum(r["#samples"] for r in rows) / n_classes,
                     "#samples": sum(r["#samples"] for r in rows)})
    printed = pd.DataFrame(rows)
    hw_rows = []
    if "hw" in ds.domain_names:
        d = ds["hw"]
        sim = ds.info.get("writers_simulated", ds.info.get("simulated", False))
        hw_rows.append({"domain": "hw", "source": "simulated" if sim else "real",
                        "#writers": int(len(np.unique(d.meta["writer"]))) if len(d) else 0,
                        "#samples per class": len(d) / n_classes, "#samples": len(d)})
    return {"printed": printed, "handwritten": pd.DataFrame(hw_rows)}


@register_dataset("PaHCC")
def _pahcc(**kwargs: Any) -> DomainDataset:
    return build_pahcc(**kwargs)
