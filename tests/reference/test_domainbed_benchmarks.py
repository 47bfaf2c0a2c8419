"""Our benchmark table against DomainBed's own source (Gulrajani & Lopez-Paz, 2021): environment names and order,
the folder each dataset is read from, and the class folders DomainBed's files name.

DomainBed's ``datasets.py`` and ``scripts/download.py`` are read as text (parsed with ``ast``), not imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

from dganalysis.data.benchmarks import BENCHMARKS
from dganalysis.data.wilds_data import WILDS_BENCHMARKS


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _assigned(cls: ast.ClassDef, name: str):
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def _read_dir(cls: ast.ClassDef) -> str:
    """The folder of ``self.dir = os.path.join(root, "<folder>/")`` in the class's ``__init__``."""
    for node in ast.walk(cls):
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute)
                and node.targets[0].attr == "dir" and isinstance(node.value, ast.Call)):
            return ast.literal_eval(node.value.args[1]).rstrip("/")
    raise AssertionError(f"{cls.name}: no self.dir assignment")


def test_environments_and_folders_are_domainbeds(domainbed):
    tree = ast.parse((Path(domainbed.root) / "domainbed" / "datasets.py").read_text())
    classes = _classes(tree)
    # ours, not DomainBed's (no DomainBed class, no DomainBed download function): NICO++ (Yu et al. 2024's data)
    not_domainbeds = {name for name, bench in BENCHMARKS.items() if not bench.download_fn}
    assert not_domainbeds == {"NICO++"}, not_domainbeds
    assert not not_domainbeds & set(classes)
    for name, bench in {**BENCHMARKS, **WILDS_BENCHMARKS}.items():
        if name in not_domainbeds:
            continue
        assert _assigned(classes[name], "ENVIRONMENTS") == list(bench.environments), name
        if name in BENCHMARKS:
            assert _read_dir(classes[name]) == bench.folder, name
            assert _assigned(classes[name], "CHECKPOINT_FREQ") == bench.checkpoint_freq, name
    # every download function our error messages name exists in DomainBed's download script
    download = (Path(domainbed.root) / "domainbed" / "scripts" / "download.py").read_text()
    for bench in BENCHMARKS.values():
        if bench.name not in not_domainbeds:
            assert f"def {bench.download_fn}(data_dir" in download, bench.name


def test_class_folders_named_by_domainbeds_files(domainbed):
    root = Path(domainbed.root) / "domainbed"
    download = ast.parse((root / "scripts" / "download.py").read_text())
    terra = next(n for n in ast.walk(download)
                 if isinstance(n, ast.FunctionDef) and n.name == "download_terra_incognita")
    cats = next(ast.literal_eval(n.value) for n in ast.walk(terra)
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "include_categories")
    locs = next(ast.literal_eval(n.value) for n in ast.walk(terra)
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "include_locations")
    assert sorted(cats) == list(BENCHMARKS["TerraIncognita"].classes)
    assert sorted(f"location_{loc}" for loc in locs) == list(BENCHMARKS["TerraIncognita"].env_folders)
    # DomainNet: the duplicates DomainBed deletes are real paths <domain>/<class>/<file> of the archives
    lines = [ln.strip().split("/") for ln in (root / "misc" / "domain_net_duplicates.txt").read_text().splitlines()
             if ln.strip()]
    dn = BENCHMARKS["DomainNet"]
    assert {p[0] for p in lines} <= set(dn.env_folders)
    named = {p[1] for p in lines}
    assert len(named) > 300 and named <= set(dn.classes), sorted(named - set(dn.classes))
