"""The paper profile describes the papers' experiments: paths from one place, every dataset and published weight file
listed by the dry run (MISSING with how to get it on a bare machine; found on a machine holding them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dganalysis.nets.published import PUBLISHED
from dganalysis.studies.dryrun import dry_run, format_dry_run
from dganalysis.studies.paths import expand, profile_paths
from dganalysis.studies.smoke.trees import write_fake_data, write_reference_images

ROOT = Path(__file__).resolve().parents[2]


def test_paths_resolve_from_env_then_default(tmp_path):
    prof = tmp_path / "params" / "p"
    prof.mkdir(parents=True)
    (prof / "paths.yaml").write_text("data: {env: MY_DATA, default: /d}\nhome: {env: MY_HOME, default: /h}\n"
                                     "weights: {env: MY_W, default: '${home}/ckpt'}\n")
    assert profile_paths("p", tmp_path, {}) == {"data": "/d", "home": "/h", "weights": "/h/ckpt"}
    got = profile_paths("p", tmp_path, {"MY_HOME": "/x", "MY_DATA": "/y"})
    assert got == {"data": "/y", "home": "/x", "weights": "/x/ckpt"}
    assert expand({"a": ["${data}/PACS", 3], "b": {"c": "${weights}/f.pth"}}, got, "f.yaml") == \
        {"a": ["/y/PACS", 3], "b": {"c": "/x/ckpt/f.pth"}}
    with pytest.raises(ValueError, match=r"f.yaml: b: \$\{wieghts\} is not defined; known names: \['data', 'home'"):
        expand({"b": "${wieghts}/f"}, got, "f.yaml")
    (prof / "paths.yaml").write_text("data: /plain\n")
    with pytest.raises(ValueError, match=r"paths.yaml: entry 'data': expected \{env: VAR, default: path\}"):
        profile_paths("p", tmp_path, {})
    assert profile_paths("quick", ROOT) == {}  # the quick profile has no paths: its YAMLs are unchanged


def test_paper_yamls_take_data_and_weights_from_paths_only():
    published = {PUBLISHED.get(n).file for n in PUBLISHED.names()}
    seen = set()
    for path in sorted((ROOT / "params" / "paper").glob("[0-9][0-9]_*.yaml")):
        text = path.read_text()
        for value in _strings(yaml.safe_load(text)):
            if "/" in value:  # every path goes through ${data} or ${weights}
                assert value.startswith(("${data}/", "${weights}/")), (path.name, value)
            if value.startswith("${weights}/"):
                assert value.split("/", 1)[1] in published, (path.name, value)
                seen.add(value.split("/", 1)[1])
    assert seen == published  # every published file is used by some sweep of the paper profile


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


#: the notebooks reading the papers' datasets and weights (01-03 build PaHCC from installed fonts)
REAL_DATA = ["00_quickstart", "04_leakage_oracle", "05_leaderboards", "06_shift_estimation", "07_worst_case"]


def _env(monkeypatch, data: Path, weights: Path) -> None:
    from dganalysis.data.pahcc.fonts import npm_dir

    monkeypatch.setenv("DGANALYSIS_NPM_DIR", str(npm_dir()))  # $DGANALYSIS_DATA also locates the PaHCC sources
    monkeypatch.setenv("DGANALYSIS_DATA", str(data))
    monkeypatch.setenv("DGANALYSIS_WEIGHTS", str(weights))


def test_dry_run_without_the_data_names_every_file_and_how_to_get_it(tmp_path, monkeypatch):
    _env(monkeypatch, tmp_path / "data", tmp_path / "weights")
    res = dry_run("paper", REAL_DATA, root=ROOT, output_root=tmp_path / "out")
    assert all(not n.error for n in res.notebooks), [n.error for n in res.notebooks if n.error]
    text = format_dry_run(res)
    for name in PUBLISHED.names():
        w = PUBLISHED.get(name)
        assert f"{tmp_path / 'weights' / w.file}" in text and w.get.split()[0] in text, name
    for bench in ("PACS", "VLCS", "office_home", "terra_incognita", "domain_net", "NICO_DG", "MNIST/raw"):
        assert f"{tmp_path / 'data'}/{bench}" in text, bench
    assert "xxgege/NICO-plus" in text and "--datasets PACS" in text and "not found" in text
    assert "published, not measured here" in text and not res.ok
    by = {n.name: n for n in res.notebooks}
    n04 = res.jobs[res.jobs["notebook"] == "04_leakage_oracle"]
    weights = {json.loads(o).get("pretrained") for o in n04["overrides"]} - {None}
    assert len(weights) == 8 and {"resnet50", "resnet18", "vit_b_16"} <= set(n04["featurizer"])
    assert any("inception_weights" in m for m in by["04_leakage_oracle"].missing)


def test_dry_run_with_the_data_finds_everything(tmp_path, monkeypatch):
    data, weights = tmp_path / "data", tmp_path / "weights"
    write_fake_data(data)
    write_reference_images(data / "imagenet_fid_reference", n=1)
    weights.mkdir()
    for name in PUBLISHED.names():  # the dry run only looks for the files
        (weights / PUBLISHED.get(name).file).write_bytes(b"")
    _env(monkeypatch, data, weights)
    res = dry_run("paper", REAL_DATA, root=ROOT, output_root=tmp_path / "out")
    assert res.ok, [(n.name, n.error, n.missing) for n in res.notebooks if n.error or n.missing]
    assert "every YAML valid, every input found" in format_dry_run(res)
