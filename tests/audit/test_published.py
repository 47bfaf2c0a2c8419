"""The audit's table readers: DomainBed's LaTeX results table and CSV tables, cell for cell; errors that name the
file and the line; the shipped tables and their sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from dganalysis.audit import published


@pytest.fixture(scope="module")
def domainbed_cells():
    return published.read_table(published.shipped("domainbed"))


def test_domainbed_latex_reader_reads_every_averages_cell(domainbed_cells):
    avg = domainbed_cells[domainbed_cells["env"] == ""]
    assert avg.groupby("selection").size().to_dict() == {"training_domain": 98, "leave_one_out": 98, "oracle": 98}
    arm = avg[(avg["selection"] == "training_domain") & (avg["algorithm"] == "ARM") & (avg["dataset"] == "ColoredMNIST")]
    assert arm[["mean", "se", "n", "se_ddof", "mean_res", "se_res"]].iloc[0].tolist() == [56.2, 0.2, 3, 0, 0.1, 0.1]
    # per-environment cells too: RotatedMNIST's six environments
    env = domainbed_cells[(domainbed_cells["dataset"] == "RotatedMNIST") & (domainbed_cells["env"] != "")]
    assert sorted(env["env"].unique()) == ["0", "15", "30", "45", "60", "75"]


def test_yu_table5_transcription_matches_the_leaderboard_csv():
    """Two independent transcriptions of Yu et al. (2024) Table 5 agree cell for cell."""
    import pandas as pd

    from dganalysis.protocols.leaderboard import PUBLISHED_CSV

    ours = published.read_table(published.shipped("yu2024_table5"))
    theirs = pd.read_csv(PUBLISHED_CSV, comment="#")
    assert len(ours) == len(theirs) == 150
    a = ours.sort_values(["algorithm", "dataset", "mean"])[["algorithm", "dataset", "mean", "se"]].to_numpy()
    b = theirs.sort_values(["algorithm", "dataset", "acc"])[["algorithm", "dataset", "acc", "se"]].to_numpy()
    assert (a == b).all()
    assert set(ours["n"]) == {3} and set(ours["se_ddof"]) == {0}


@pytest.mark.parametrize("text, pattern", [
    ("selection,dataset,algorithm,mean,se\nx,D,A,1,1\n", r"t\.csv:1: missing column\(s\) \['n'\]"),
    ("selection,dataset,algorithm,mean,se,n\nfoo,D,A,1,1,3\n", r"t\.csv:2: selection 'foo'"),
    ("selection,dataset,algorithm,mean,se,n\ntraining_domain,D,A,abc,1,3\n", r"t\.csv:2: mean='abc'"),
    ("selection,dataset,algorithm,mean,se,n\ntraining_domain,D,A,1,1,1\n", r"t\.csv:2: n=1"),
    ("selection,dataset,algorithm,mean,se,n,extra\ntraining_domain,D,A,1,1,3,x\n", r"unknown column"),
    ("selection,dataset,algorithm,mean,se,n\ntraining_domain,D,A,0.81,0.01,3\ntraining_domain,D,B,0.8,0.01,3\n",
     r"t\.csv: every mean is within \[-1, 1\]: accuracies as fractions\?"),
])
def test_csv_errors_name_file_and_line(text, pattern):
    with pytest.raises(ValueError, match=pattern):
        published.read_csv(text, "t.csv")


def test_latex_errors_name_file_and_line():
    bad = ("\\subsection{Model selection: training-domain validation set}\n\\subsubsection{Averages}\n"
           "\\textbf{Algorithm} & \\textbf{PACS} & \\textbf{Avg} \\\\\nERM & 85.5 pm 0.2 & 85.5 \\\\\n")
    with pytest.raises(ValueError, match=r"x\.tex:4: cell '85\.5 pm 0\.2'"):
        published.read_latex(bad, "x.tex")


def test_shipped_sources_are_documented():
    src = (published.DATA_DIR / "domainbed_2020_10_06_7df6f06_results.SOURCE.txt").read_text()
    assert "b93c22a" in src and "MIT License" in src and "domainbed/results/2020_10_06_7df6f06/results.tex" in src
    head = Path(published.shipped("yu2024_table5")).read_text().splitlines()[0]
    assert head.startswith("# Yu et al. (2024)")


def test_table_files_byte_order_mark_and_binary(tmp_path):
    """A spreadsheet's CSV export starts with a UTF-8 byte-order mark: read as the same table; a file that is not
    UTF-8 text is refused naming it (not a bare codec error)."""
    text = "selection,dataset,algorithm,mean,se,n\ntraining_domain,PACS,ERM,80,1,3\ntraining_domain,PACS,A,81,0.5,3\n"
    plain, bom, binary = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    plain.write_text(text, encoding="utf-8")
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    binary.write_bytes(b"\xff\xfe\x00x")
    a, b = published.read_table(plain), published.read_table(bom)
    assert a.drop(columns="source").equals(b.drop(columns="source")) and len(a) == 2
    with pytest.raises(ValueError, match=r"c\.csv: not UTF-8 text"):
        published.read_table(binary)
