"""What the package says about itself agrees with what it is: the licence and notices, the citation, and the
dependency lists against the code's imports, the tested set (``constraints.txt``) and the two installers
(``quickstart.sh``, ``environment.yml``), and CI's lint step."""

from __future__ import annotations

import ast
import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="Python 3.10 has no tomllib: `pip install tomli` runs these checks")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
CONSTRAINTS = ROOT / "constraints.txt"

#: runtime dependencies the package needs without importing them by name, and why
NOT_IMPORTED = {
    "ipykernel": "the kernel papermill starts to run the notebooks (`dganalysis run`)",
}
#: imports of the package that an extra provides, and which extra
OPTIONAL_IMPORTS = {"wilds": "wilds"}
#: top-level names the tests import that are not distributions: the tests' own helpers and the reference codebases
TEST_LOCAL = {"tests", "_tiny", "_ledger", "conftest", "audit", "studies", "bench", "domainbed", "ood_bench"}


def _requirements(group: str | None = None) -> list[Requirement]:
    raw = PROJECT["dependencies"] if group is None else PROJECT["optional-dependencies"][group]
    return [Requirement(r) for r in raw]


def _all_requirements() -> list[tuple[str, Requirement]]:
    out = [("dependencies", r) for r in _requirements()]
    for group in PROJECT["optional-dependencies"]:
        out += [(f"[{group}]", r) for r in _requirements(group)]
    return out


def _names(reqs: list[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in reqs}


def _pins() -> dict[str, Version]:
    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
            assert m, f"constraints.txt: expected 'name==version' lines only, got {line!r}"
            pins[canonicalize_name(m[1])] = Version(m[2])
    return pins


def _imports(root: Path) -> dict[str, set[str]]:
    """Top-level module name -> files of ``root`` that import it (absolute imports, lazy ones included), stdlib
    left out."""
    out: dict[str, set[str]] = {}
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names:
                    out.setdefault(top, set()).add(str(f.relative_to(ROOT)))
    return out


def _distribution(module: str) -> str:
    """The installed distribution that provides top-level ``module`` (the module's own name when not installed)."""
    dists = metadata.packages_distributions().get(module)
    return canonicalize_name(dists[0] if dists else module)


# --- licence, notices, citation ---------------------------------------------------------------------------------


def test_licence_is_mit_and_metadata_says_so():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License"), "LICENSE: expected the MIT License text"
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text
    assert PROJECT["license"] == "MIT", "pyproject.toml: project.license must be the SPDX expression 'MIT'"
    for f in PROJECT["license-files"]:
        assert (ROOT / f).is_file(), f"pyproject.toml: license-files names {f}, which does not exist"
    holders = [a["name"] for a in PROJECT["authors"]]
    m = re.search(r"Copyright \(c\) (\d{4})(?:-(\d{4}))? (.+)", text)
    assert m and m[3].strip() in holders, f"LICENSE's copyright holder {m and m[3]!r} is not among authors {holders}"
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"]), (
        "pyproject.toml: with a PEP 639 licence expression, 'License ::' classifiers are not allowed")


def test_notice_covers_every_shipped_third_party_data_file():
    """Every data table the package ships (``dganalysis/**/data/``: published results, transcribed tables) is named
    in NOTICE with its source; DomainBed's MIT notice travels with its results.tex."""
    notice = (ROOT / "NOTICE").read_text()
    shipped = [p for p in (ROOT / "dganalysis").rglob("data/*") if p.suffix in {".tex", ".csv"}]
    assert shipped, "expected the shipped data tables under dganalysis/**/data/"
    for p in shipped:
        assert str(p.relative_to(ROOT)) in notice, f"NOTICE does not name the shipped file {p.relative_to(ROOT)}"
    assert "Copyright (c) Facebook, Inc. and its affiliates." in notice
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in notice, "NOTICE: DomainBed's full MIT notice must accompany results.tex"
    assert "NOTICE" in PROJECT["license-files"], "pyproject.toml: NOTICE must ship in the wheel (license-files)"



def test_package_data_ships_the_page_templates():
    """The HTML pages' templates (``dganalysis/templates/*.j2``, read by jinja2 at run time) are package data, so the
    wheel carries them: each matches one of pyproject's package-data patterns, expanded as setuptools expands them."""
    import glob

    package = ROOT / "dganalysis"
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["dganalysis"]
    shipped = {f for pat in patterns for f in glob.glob(pat, root_dir=package, recursive=True)}
    templates = sorted(p.relative_to(package).as_posix() for p in (package / "templates").glob("*.j2"))
    assert templates, "expected the page templates in dganalysis/templates/"
    assert not set(templates) - shipped, f"not package data: {sorted(set(templates) - shipped)}"

def test_citation_agrees_with_pyproject():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == PROJECT["version"]
    assert cff["license"] == PROJECT["license"]
    assert [a["name"] for a in cff["authors"]] == [a["name"] for a in PROJECT["authors"]]
    # no public address yet: neither file may invent one, and once given they must agree
    urls = PROJECT.get("urls", {})
    assert cff.get("repository-code") == urls.get("Source") and cff.get("url") == urls.get("Homepage")
    assert set(PROJECT["keywords"]) >= set(cff["keywords"]), "CITATION.cff keywords missing from pyproject.toml"


def _entries(text: str) -> list[str]:
    """A markdown reference list's entries (``- ...`` items with their continuation lines)."""
    return [e for e in re.split(r"\n(?=- )", text) if e.startswith("- ")]


@pytest.mark.parametrize("doc", ["README.md", "docs/references.md"])
def test_arxiv_2305_15253_is_yu_et_al(doc):
    """arXiv:2305.15253 is Yu et al., 'Rethinking the Evaluation Protocol of Domain Generalization' (the seed's own
    header: 'arXiv:2305.15253v2 [cs.LG] 23 Mar 2024'), never the PaHCC paper of Zhang, Zhang & Liu."""
    text = (ROOT / doc).read_text()
    hits = [e for e in _entries(text) if "2305.15253" in e]
    assert hits, f"{doc}: expected Yu et al. 2024 with its arXiv number in the references"
    for e in hits:
        assert "Rethinking the Evaluation" in e and "Yu" in e, f"{doc}: arXiv:2305.15253 given to another paper: {e!r}"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for ref in cff["references"]:
        ids = [i["value"] for i in ref.get("identifiers", [])]
        if any("2305.15253" in i for i in ids):
            assert ref["title"] == "Rethinking the Evaluation Protocol of Domain Generalization"


# --- dependencies -----------------------------------------------------------------------------------------------


def test_runtime_dependencies_are_what_the_package_imports():
    """Runtime = what ``import dganalysis`` and the CLI import, lazy imports included: nothing imported is missing,
    nothing declared is unused (except :data:`NOT_IMPORTED`, needed by name)."""
    declared = _names(_requirements())
    imported = _imports(ROOT / "dganalysis")
    imported.pop("dganalysis")
    needed = {}
    for module, files in imported.items():
        if module in OPTIONAL_IMPORTS:
            extra = OPTIONAL_IMPORTS[module]
            assert canonicalize_name(module) in _names(_requirements(extra)), f"{module}: expected in [{extra}]"
            continue
        needed[_distribution(module)] = files
    missing = {d: sorted(f) for d, f in needed.items() if d not in declared}
    assert not missing, f"imported by the package but not in pyproject.toml's dependencies: {missing}"
    unused = declared - set(needed) - set(NOT_IMPORTED)
    assert not unused, (f"pyproject.toml declares runtime dependencies the package never imports: {sorted(unused)} "
                        "(move test-only ones to [test], tools to an extra)")


def test_test_only_imports_are_in_the_test_extra():
    runtime = _names(_requirements())
    test = _names(_requirements("test"))
    optional = {canonicalize_name(m) for m in OPTIONAL_IMPORTS}
    imported = _imports(ROOT / "tests")
    missing = {}
    for module, files in imported.items():
        if module in TEST_LOCAL or module == "dganalysis" or module == "pytest":
            continue
        d = _distribution(module)
        if d not in runtime | test | optional:
            missing[d] = sorted(files)
    assert not missing, f"imported by tests/ but in neither dependencies nor [test]: {missing}"
    assert "pytest" in test


def test_no_exact_pins_and_every_requirement_has_a_floor():
    """A library states ranges (the exact tested set is constraints.txt): no ``==``/``===`` and a ``>=`` floor."""
    for where, req in _all_requirements():
        ops = {s.operator for s in req.specifier}
        assert not ops & {"==", "==="}, f"pyproject.toml {where}: {req} is an exact pin; give a range"
        assert ">=" in ops, f"pyproject.toml {where}: {req} has no floor (>=)"


def test_constraints_pin_every_requirement_inside_its_range():
    pins = _pins()
    for where, req in _all_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt: no pin for {req.name} ({where}); refresh it (see its header)"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject.toml's {where} range {req.specifier}")


def test_floors_the_code_relies_on():
    """Floors set by what the code or the test command needs (bench/lowest_versions.sh installs exactly these):
    pytest-xdist 3.8 brought ``--no-loadscope-reorder`` (the README's and CI's test command); scipy 1.15 made
    ``wilcoxon(method="auto")`` a permutation test with ties or zeros at n <= 13, which ``wilcoxon_ps`` reproduces
    (tests/stats/test_rank_tests.py holds it equal to the installed scipy's own call)."""
    floors = {canonicalize_name(r.name): min(Version(s.version) for s in r.specifier if s.operator == ">=")
              for _, r in _all_requirements()}
    if "--no-loadscope-reorder" in (ROOT / "README.md").read_text() + (ROOT / ".ci" / "run").read_text():
        assert floors["pytest-xdist"] >= Version("3.8")
    assert floors["scipy"] >= Version("1.15")


def test_environment_matches_the_tested_set():
    """The installed versions of every declared package are constraints.txt's (quickstart.sh installs with it).
    A mismatch means this environment was not made by quickstart.sh: rerun ``bash quickstart.sh --setup-only``."""
    pins = _pins()
    off = {}
    for _, req in _all_requirements():
        name = canonicalize_name(req.name)
        try:
            have = Version(metadata.version(req.name))
        except metadata.PackageNotFoundError:
            continue  # an extra this environment did not install
        want = pins[name]
        if Version(have.public) != want:
            off[req.name] = f"installed {have}, constraints.txt {want}"
    assert not off, f"environment differs from constraints.txt: {off}"


def _quickstart_installs() -> dict[str, object]:
    """The pip install lines of quickstart.sh: constraints files, explicit pins, the editable extras."""
    out: dict[str, object] = {"constraints": set(), "pins": set(), "extras": None}
    for line in (ROOT / "quickstart.sh").read_text().splitlines():
        if line.lstrip().startswith("#") or "pip install" not in line:
            continue
        args = shlex.split(line.split("pip install", 1)[1])
        _collect(args, out)
    return out


def _collect(args: list[str], out: dict[str, object]) -> None:
    it = iter(args)
    for a in it:
        if a in ("-c", "--constraint"):
            out["constraints"].add(next(it))
        elif a in ("-e", "--editable"):
            out["extras"] = _extras(next(it))
        elif a.startswith("-c"):
            out["constraints"].add(a[2:].strip())
        elif a.startswith("-e"):
            out["extras"] = _extras(a[2:].strip())
        elif "==" in a:
            out["pins"].add(a)


def _extras(target: str) -> frozenset[str]:
    m = re.fullmatch(r"\.\[([^\]]*)\]", target)
    assert m, f"expected an editable install of '.[extras]', got {target!r}"
    return frozenset(x.strip() for x in m[1].split(","))


def _environment_yml_installs() -> dict[str, object]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    out: dict[str, object] = {"constraints": set(), "pins": set(), "extras": None}
    _collect([tok for item in pip for tok in shlex.split(item)], out)
    return out


def test_environment_yml_installs_what_quickstart_installs():
    """Same constraints file, same explicit pins, same extras (and every extra of pyproject.toml)."""
    qs, env = _quickstart_installs(), _environment_yml_installs()
    assert qs["constraints"] == env["constraints"] == {"constraints.txt"}, (qs["constraints"], env["constraints"])
    assert qs["pins"] == env["pins"], f"explicit pins differ: quickstart.sh {qs['pins']}, environment.yml {env['pins']}"
    assert qs["extras"] == env["extras"], f"extras differ: quickstart.sh {qs['extras']}, environment.yml {env['extras']}"
    assert qs["extras"] == set(PROJECT["optional-dependencies"]), (
        f"quickstart.sh installs extras {sorted(qs['extras'])}, pyproject.toml has {sorted(PROJECT['optional-dependencies'])}")
    pins = _pins()
    for p in qs["pins"]:
        name, version = p.split("==")
        assert pins[canonicalize_name(name)] == Version(version), f"{p} is not constraints.txt's pin"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert f"Python {python.split('=')[1]}" in CONSTRAINTS.read_text(), "environment.yml's Python is not the tested one"


def test_ci_installs_with_quickstart_and_runs_ruff_before_the_tests():
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines() if not ln.lstrip().startswith("#")]
    setup = next(i for i, ln in enumerate(lines) if ln.startswith("bash quickstart.sh"))
    ruff = next((i for i, ln in enumerate(lines) if "ruff check" in ln), None)
    pytest_line = next(i for i, ln in enumerate(lines) if "-m pytest" in ln)
    assert ruff is not None, ".ci/run must run `ruff check`"
    assert setup < ruff < pytest_line, ".ci/run: ruff must run after the install and before pytest"
    for target in ("dganalysis", "tests", "bench"):
        assert target in lines[ruff].split(), f".ci/run: ruff must check {target}/"
    assert "ruff" in _names(_requirements("test")), "ruff must be in the [test] extra (CI installs it from there)"
