"""CITATION.cff (Citation File Format 1.2.0) and the README's References name the papers by title and authors."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PAPERS = {
    "Towards Reliable Domain Generalization: A New Dataset and Evaluations": "Zhang",
    "Rethinking the Evaluation Protocol of Domain Generalization": "Yu",
    "OoD-Bench: Quantifying and Understanding Two Dimensions of Out-of-Distribution Generalization": "Ye",
    "In Search of Lost Domain Generalization": "Gulrajani",
}


def test_citation_cff_lists_the_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["title"].startswith("dganalysis")
    assert all(k in cff for k in ("message", "authors", "version"))
    refs = {r["title"]: r for r in cff["references"]}
    for title, first_author in PAPERS.items():
        assert refs[title]["authors"][0]["family-names"] == first_author
    assert any("WC-DG" in t and "poster" in refs[t]["notes"].lower() for t in refs)
    assert {r["year"] for r in refs.values() if "year" in r} >= {2021, 2022, 2024}


def test_readme_references_use_titles_not_internal_file_names():
    readme = (ROOT / "README.md").read_text()
    refs = " ".join(readme[readme.index("## References"):].split())  # titles may wrap
    for title in PAPERS:
        assert title.split(":")[0] in refs
    assert "arXiv:2305.15253" in refs and "CITATION.cff" in refs and "poster" in refs
    assert "seeds/" not in readme and "seed 00" not in readme
