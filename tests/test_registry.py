"""Unknown names get the closest known ones ("did you mean CORAL?") everywhere, from one helper; a flags-mode sweep
reports an unknown name before a missing flag; `report` never suggests a command `run` rejects."""

from __future__ import annotations

import pandas as pd
import pytest

from dganalysis.algorithms import get_algorithm
from dganalysis.cli import PROFILES, main
from dganalysis.data import load_dataset
from dganalysis.nets import build_featurizer
from dganalysis.records import select
from dganalysis.registry import suggest, unknown_name


def test_one_wording_with_suggestions():
    assert suggest("CORALL", ["CORAL", "ERM", "MMD"]) == ["CORAL"]
    assert suggest("coral", ["CORAL", "ERM"]) == ["CORAL"]  # case ignored
    assert suggest("XYZ", ["CORAL", "ERM"]) == []
    assert unknown_name("algorithm", "CORALL", ["ERM", "CORAL"]) == \
        "unknown algorithm 'CORALL' (did you mean 'CORAL'?); known: CORAL, ERM"
    assert unknown_name("dataset", "XYZ", ["PACS"]) == "unknown dataset 'XYZ'; known: PACS"


def test_registries_and_selection_suggest():
    with pytest.raises(KeyError, match=r"unknown algorithm 'CORALL' \(did you mean 'CORAL'"):
        get_algorithm("CORALL")
    with pytest.raises(KeyError, match=r"unknown dataset 'PAC' \(did you mean 'PACS'"):
        load_dataset("PAC")
    with pytest.raises(ValueError, match=r"unknown method 'oracel' \(did you mean 'oracle'"):
        select(pd.DataFrame(), "oracel")


def test_flags_sweep_reports_unknown_names_before_missing_flags(tmp_path, capsys):
    # no --steps / --checkpoint-freq: the unknown algorithm is still what the user hears first
    assert main(["sweep", "--dataset", "RotatedDigits", "--algorithms", "ERM", "CORALL",
                 "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'CORAL'" in err and "--checkpoint-freq" not in err
    assert main(["sweep", "--dataset", "PAC", "--algorithms", "ERM", "--store", str(tmp_path / "s")]) == 2
    assert "--dataset: unknown dataset 'PAC' (did you mean 'PACS'" in capsys.readouterr().err
    assert main(["sweep", "--dataset", "RotatedDigits", "--algorithms", "ERM", "--store", str(tmp_path / "s")]) != 0
    assert "--checkpoint-freq" in capsys.readouterr().err  # names fine: now the missing flags


def test_report_of_an_unknown_profile_suggests_one_run_accepts(tmp_path, capsys):
    assert main(["report", "--profile", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown profile 'bogus'" in err and "dganalysis run --profile bogus" not in err
    assert all(p in err for p in PROFILES)
    assert main(["report", "--profile", "quik"]) == 2
    assert "did you mean 'quick'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # and `run` indeed refuses it
        main(["run", "--profile", "bogus", "--dry-run"])


def test_unknown_names_list_known():
    with pytest.raises(KeyError, match="known: .*ERM"):
        get_algorithm("NoSuchMethod")
    with pytest.raises(KeyError, match="known: .*RotatedDigits"):
        load_dataset("NoSuchData")
    with pytest.raises(ValueError, match="featurizer"):
        build_featurizer((1, 8, 8), {"featurizer": "vgg"})
