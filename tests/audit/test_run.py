"""`dganalysis audit` end to end (:func:`dganalysis.audit.run.run_audit` and the verb): sweeps with planted effects
(SIMULATED) and a null sweep, the reference check, the JSON contract and every output, input errors before any work,
our own job store, the index line, the raw-sweep analyses. Table readers: test_tables.py; claims: test_claims.py."""

from __future__ import annotations

import json

import pytest

from dganalysis.audit.contract import to_json
from dganalysis.audit.run import run_audit
from dganalysis.cli import main
from tests.audit._simulated_sweep import write_sweep


def test_outputs_are_written_when_no_claim_can_be_made(tmp_path):
    """An input with the baseline alone (e.g. DomainBed's own test sweep, ERM only) gives no claim, and every
    output (JSON, HTML, CSV, LaTeX) is still written, saying so."""
    from dganalysis.audit.outputs import write_outputs

    table = tmp_path / "erm_only.csv"
    table.write_text("selection,dataset,algorithm,mean,se,n\ntraining_domain,D,ERM,50.0,1.0,3\n")
    result = run_audit([str(table)], baseline="ERM", selection="training_domain")
    written = write_outputs(result, html_path=tmp_path / "r.html", json_path=tmp_path / "r.json")
    assert {p.suffix for p in written} >= {".json", ".html", ".csv", ".tex"}
    assert json.loads((tmp_path / "r.json").read_text())["claims"] == []


def test_each_stage_says_how_long_it_took(sweeps, caplog):
    """A large sweep's audit takes tens of seconds: each stage of each input is logged (INFO, shown by the command
    line) with its time."""
    planted, _ = sweeps
    with caplog.at_level("INFO", logger="dganalysis.audit"):
        run_audit([planted], selection="training_domain", reps=50)
    said = [r.getMessage() for r in caplog.records if r.name in ("dganalysis.audit.inputs", "dganalysis.audit.run")]
    for stage in ("read and selected", "claims", "across-dataset tests", "sweep analyses"):
        assert any(m.startswith(f"audit {planted}") and stage in m and m.endswith(" s") for m in said), (stage, said)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    planted = write_sweep(root / "planted", {"ERM": 0.0, "Good": 0.15, "Bad": -0.15, "Same": 0.0}, noise=0.005)
    null = write_sweep(root / "null", {"ERM": 0.0, "A": 0.0, "B": 0.0}, noise=0.01, seed=1)
    return planted, null


def test_sweep_planted_effects_are_found(sweeps):
    planted, _ = sweeps
    r = run_audit([planted], selection="training_domain", rope=1.0, sweep_analyses=False, reps=200)
    cl = r.audits[0].claims.set_index(["dataset", "algorithm"])
    assert (cl.xs("Good", level="algorithm")["verdict"] == "better").all()
    assert (cl.xs("Bad", level="algorithm")["verdict"] == "worse").all()
    assert not cl.xs("Same", level="algorithm")["verdict"].isin(["better", "worse"]).any()
    assert (cl["n"] == 3).all() and (cl["delta"].xs("Good", level="algorithm") > 10).all()
    agg = r.audits[0].aggregate.set_index("algorithm")
    assert agg.loc["Good", "prob_improvement"] == 1.0 and agg.loc["Bad", "prob_improvement"] == 0.0
    assert agg.loc["Good", "basis"].startswith("trials") and agg.loc["Good", "p_better"] > 0.9


@pytest.mark.parametrize("selection", ["all", "leave_one_out", "oracle"])
def test_sweep_audit_needs_no_tidy_frame(tmp_path, monkeypatch, selection):
    """A sweep's audit, raw-sweep analyses included, reads the selections (and the per-draw selection of the
    expected-max curve) from the index without building the tidy frame (4.6M rows, hundreds of MB on a DomainBed-size
    sweep); the frame is still there, read on first use, for a user of ``AuditInput.records``. Whatever methods are
    audited, the analyses get the oracle and training-domain validation they compare with."""
    import pandas as pd

    from dganalysis.records import index, indexed, load

    root = write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, hparams=3, pairs=True)
    want = run_audit([root], selection=selection, reps=50, seed=1)

    def no_frame(*args, **kwargs):
        raise AssertionError("the audit built the tidy frame")

    for fn in ("assemble", "load_indexed"):
        monkeypatch.setattr(index, fn, no_frame)
    monkeypatch.setattr(indexed, "assemble", no_frame)
    got = run_audit([root], selection=selection, reps=50, seed=1)
    assert not got.audits[0].notes
    assert set(got.audits[0].sweep) >= {"selection_regret", "ranking_changes", "expected_max", "saturation",
                                        "lodo_vs_logo", "selected_hparams"}
    assert to_json(got) == to_json(want)
    monkeypatch.undo()
    frame = got.audits[0].input.records
    pd.testing.assert_frame_equal(frame.astype({c: str for c in frame.columns if frame[c].dtype == "category"}),
                                  load(root, progress=False).astype(
                                      {c: str for c in frame.columns if frame[c].dtype == "category"}),
                                  check_dtype=False)


def test_sweep_audit_says_what_the_reading_left_out(tmp_path, capsys):
    """A verdict is about the runs that were read: the audit's notes (stderr, HTML, JSON) count the job folders read
    and left out, as collect prints them."""
    root = write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4})
    (root / "crashed").mkdir()  # DomainBed's job that crashed before its first checkpoint: err.txt only
    (root / "crashed" / "err.txt").write_text("CUDA out of memory\n")
    notes = run_audit([root], selection="training_domain", reps=50, sweep_analyses=False).audits[0].input.notes
    assert notes[0].startswith("jobs: 48 of 49 job folders read; not in the table: 1 without records"), notes
    assert main(["audit", str(root), "--selection", "training_domain", "--fresh"]) == 0
    assert f"audit: {root}: jobs: 48 of 49 job folders read" in capsys.readouterr().err


def test_audit_without_a_report_draws_nothing(tmp_path):
    """An audit that writes no HTML page (stdout, --json) neither imports matplotlib nor scikit-posthocs (with
    seaborn, ~0.5 CPU-s): its statistics need neither (run in a fresh interpreter)."""
    import subprocess
    import sys

    root = write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1, "Bad": -0.1}, datasets={"PACS": 4, "VLCS": 4},
                       pairs=True)
    code = ("import sys; from dganalysis.cli import main; rc = main(['audit', sys.argv[1], '--json', sys.argv[2]]); "
            "bad = sorted(m for m in ('matplotlib', 'scikit_posthocs', 'seaborn') if m in sys.modules); "
            "print('imported:', bad); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, str(root), str(tmp_path / "a.json")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "imported: []" in out.stdout
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["friedman"] and data["sweep"][str(root)]["expected_max"]


def test_sweep_null_decides_nothing(sweeps):
    _, null = sweeps
    # unpaired: this null sweep's one realization happens to give two paired p-values below 0.012 (df 2); the
    # paired test's size is checked over 20,000 simulated claims in test_calibration.py instead
    r = run_audit([null], selection="all", rope=0.0, sweep_analyses=False, reps=200, paired=False)
    cl = r.audits[0].claims
    assert set(cl["selection"]) == {"training_domain", "oracle"}  # leave-one-out: no helper runs in this sweep
    assert not cl["verdict"].isin(["better", "worse"]).any()


def test_reference_check_consistent_lower_higher(tmp_path, sweeps):
    planted, _ = sweeps
    ours = run_audit([planted], selection="training_domain", sweep_analyses=False, reps=100).audits[0].input.cells
    rows = ["selection,dataset,algorithm,mean,se,n"]
    for _, c in ours.iterrows():
        shift = {"Good": 0.0, "Bad": 20.0, "Same": -20.0}.get(c["algorithm"], 0.0)
        rows.append(f"training_domain,{c['dataset']},{c['algorithm']},{c['mean'] + shift:.2f},{c['se']:.2f},3")
    ref = tmp_path / "ref.csv"
    ref.write_text("\n".join(rows) + "\n")
    r = run_audit([planted], selection="training_domain", reference_table=ref, rope=2.0, sweep_analyses=False,
                  reps=100)
    v = r.audits[0].reference.set_index(["dataset", "algorithm"])["verdict"]
    assert (v.xs("Bad", level="algorithm") == "lower").all()
    assert (v.xs("Same", level="algorithm") == "higher").all()
    assert not v.xs("Good", level="algorithm").isin(["lower", "higher"]).any()


def test_cli_json_contract_and_outputs(tmp_path, sweeps, capsys):
    planted, _ = sweeps
    out_json, out_html = tmp_path / "a.json", tmp_path / "r.html"
    rc = main(["audit", str(planted), "shipped:yu2024_table5", "--selection", "training_domain", "--json",
               str(out_json), "-o", str(out_html)])
    assert rc == 0
    text = capsys.readouterr().out
    assert f"audit {planted} (sweep): family = each algorithm vs ERM" in text and "better" in text
    data = json.loads(out_json.read_text())
    for row in data["claims"]:
        assert {"selection", "dataset", "algorithm", "baseline", "delta", "ci_low", "ci_high", "p_adj", "verdict",
                "trials_needed"} <= set(row)
        assert row["verdict"] in ("better", "worse", "equivalent", "undecided")
    for row in data["aggregate"]:
        assert {"selection", "algorithm", "baseline", "prob_improvement", "ci_low", "ci_high"} <= set(row)
    assert {r["input"] for r in data["claims"]} == {str(planted), "shipped:yu2024_table5"}
    page = out_html.read_text()
    assert "Holm" in page and "n = 3 vs 3 trials" in page and "<img" in page
    assert out_html.with_suffix(".claims.csv").is_file()
    assert "\\toprule" in out_html.with_suffix(".claims.tex").read_text()


def test_cli_repeated_audit_restores_its_outputs(tmp_path, capsys, monkeypatch):
    """The same audit of an unchanged sweep restores every output from the copies kept beside the sweep's index
    (byte for byte, nothing recomputed) and says so; --fresh, another option or a changed job folder recompute."""
    import dganalysis.audit.run as run_module

    sweep = write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, trials=3, hparams=1)
    out_json, out_html = tmp_path / "o" / "a.json", tmp_path / "o" / "r.html"
    argv = ["audit", str(sweep), "--selection", "training_domain", "--json", str(out_json), "-o", str(out_html)]
    assert main(argv) == 0
    first = capsys.readouterr()
    written = {p: p.read_bytes() for p in (tmp_path / "o").iterdir()}
    assert len(written) >= 4
    for p in written:
        p.unlink()
    monkeypatch.setattr(run_module, "run_audit", lambda *a, **k: pytest.fail("recomputed"))
    assert main(argv) == 0
    again = capsys.readouterr()
    assert again.out == first.out and "outputs were restored from" in again.err
    assert {p: p.read_bytes() for p in (tmp_path / "o").iterdir()} == written
    for other in (["--fresh"], ["--seed", "1"]):
        with pytest.raises(pytest.fail.Exception, match="recomputed"):
            main(argv + other)
    (sweep / "PACS_ERM_0_0_0" / "results.jsonl").write_text(
        (sweep / "PACS_ERM_0_0_0" / "results.jsonl").read_text() + "\n")
    with pytest.raises(pytest.fail.Exception, match="recomputed"):
        main(argv)


def test_cli_audit_kept_under_the_sweep_it_read(tmp_path, capsys, monkeypatch):
    """The audit's outputs are kept under the job folders as the audit read them: a job finishing while the audit
    runs (after its read, before its outputs are kept) makes the next audit compute again, not restore outputs that
    never saw that job."""
    import dganalysis.audit.outputs as report_module

    sweep = write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, trials=3, hparams=1)
    late = sweep / "PACS_ERM_0_0_0" / "results.jsonl"
    real = report_module.write_outputs

    def write_then_a_job_changes(*a, **k):
        late.write_text(late.read_text() + "\n")
        return real(*a, **k)

    monkeypatch.setattr(report_module, "write_outputs", write_then_a_job_changes)
    argv = ["audit", str(sweep), "--selection", "training_domain", "--json", str(tmp_path / "a.json")]
    assert main(argv) == 0
    capsys.readouterr()
    monkeypatch.setattr(report_module, "write_outputs", real)
    assert main(argv) == 0
    assert "outputs were restored" not in capsys.readouterr().err  # computed again, with the late job
    assert main(argv) == 0
    assert "outputs were restored" in capsys.readouterr().err  # unchanged since: restored


@pytest.mark.parametrize("argv, pattern", [
    (["audit", "missing_dir"], "INPUT missing_dir: no such file"),
    (["audit", "shipped:domainbed", "--baseline", "erm"], "did you mean 'ERM'"),
    (["audit", "shipped:nope"], "shipped table 'nope'"),
    (["audit", "shipped:domainbed", "--reference", "nope.csv"], "nope.csv: no such file"),
    (["audit", "shipped:domainbed", "--alpha", "2"], "--alpha 2"),
    (["audit", "shipped:yu2024_table5", "--selection", "oracle"], r"no cells for selection \['oracle'\]"),
])
def test_cli_input_errors(argv, pattern, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert pattern.replace("\\", "") in err.replace("\\", "") or __import__("re").search(pattern, err), err


def test_every_input_is_checked_before_work(tmp_path, monkeypatch):
    """A bad second input stops the audit before the first is analysed."""
    import dganalysis.audit.claims as claims_mod

    called = []
    monkeypatch.setattr(claims_mod, "claims", lambda *a, **k: called.append(1))
    with pytest.raises(FileNotFoundError):
        run_audit(["shipped:domainbed", str(tmp_path / "nope")])
    with pytest.raises(ValueError, match="shipped:domainbed: baseline 'SWAD'"):
        run_audit(["shipped:yu2024_table5", "shipped:domainbed"], baseline="SWAD")
    assert not called


def test_trials_for_sweeps_only_is_refused(tmp_path):
    """--trials sets n of a table's cells; given with sweep directories alone it would be ignored: refused instead,
    naming the option (with a table among the inputs it applies to the table)."""
    sweep = write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, trials=3, hparams=1)
    with pytest.raises(ValueError, match="--trials 3: sets n of a published table's cells"):
        run_audit([sweep], trials=3)
    assert main(["audit", str(sweep), "--trials", "3"]) == 2


def test_audit_reads_our_own_job_store(tmp_path):
    """A real (tiny, CPU) sweep of our engine: spec.json, settings and our store's rules go through the audit."""
    from dganalysis.sweep import Sweep, make_jobs, run_sweep
    from tests._tiny import FAST_HPARAMS, TINY, TINY_FILE  # noqa: F401  (registers the tiny dataset)

    jobs = make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM", "CORAL"], splits="leave_one_out",
                           n_hparams=1, n_trials=2, steps=4, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS))
    status = run_sweep(jobs, tmp_path / "store", n_workers=1)
    assert (status["status"] == "done").all()
    r = run_audit([tmp_path / "store"], selection="training_domain", sweep_analyses=False, reps=100)
    cl = r.audits[0].claims
    assert len(cl) == 1 and cl["algorithm"].item() == "CORAL" and cl["n"].item() == 2
    assert cl["verdict"].item() in ("better", "worse", "equivalent", "undecided")
    lines = r.summary
    assert lines[0].startswith(f"audit {tmp_path / 'store'} (sweep): family = ") and "α=0.05" in lines[0]
    assert lines[1].startswith("  training_domain: ") and "of 1 claims [all-claims family: " in lines[1]


def test_index_lists_one_line_per_audit(tmp_path):
    from dganalysis.audit.summary import read_audit_lines, record_audit_lines
    from dganalysis.studies.runner import write_index

    out = tmp_path / "quick"
    assert read_audit_lines(out) == []
    record_audit_lines(out, ["audit shipped:domainbed: 0 better, 0 worse, 0 equivalent, 91 undecided of 91 claims"])
    text = write_index(out, "quick", []).read_text()
    assert "- audit shipped:domainbed: 0 better" in text


def test_sweep_analyses_are_called_and_reported(tmp_path):
    """The raw-sweep analyses of dganalysis.audit.sweep_analyses reach the JSON, the figures and the selected-hparams file;
    one the sweep cannot give is left out with a note saying why."""
    from dganalysis.audit.outputs import write_outputs

    planted = write_sweep(tmp_path / "planted", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, pairs=True)
    r = run_audit([planted], selection="training_domain", reps=50)
    sw = r.audits[0].sweep
    assert set(sw) == {"selection_regret", "ranking_changes", "expected_max", "saturation", "lodo_vs_logo",
                       "selected_hparams"}
    data = to_json(r)["sweep"][str(planted)]
    assert {row["selection"] for row in data["selection_regret"]} == {"training_domain"}
    assert {row["budget"] for row in data["expected_max"]} == {1, 2}  # two hparams draws
    assert len(data["selected_hparams"]) == 2 * (4 + 6) * 3  # algorithms × test-environment sets × trials
    import matplotlib

    with matplotlib.rc_context({"savefig.dpi": 200}):  # the notebooks' style (dganalysis.plots.setup_style)
        written = write_outputs(r, html_path=tmp_path / "r.html", output_dir=tmp_path)
    names = {p.name for p in written}
    assert "08_audit0_expected_max.png" in names and "08_audit0_selection_regret.png" in names
    assert "r.planted.selected_hparams.json" in names
    # the page embeds each figure at 110 dpi with the saved 200-dpi file's crop: 110/200 of its pixels (±1)
    import base64
    import io
    import re

    from PIL import Image

    saved = sorted(p for p in written if p.suffix == ".png")
    page = [Image.open(io.BytesIO(base64.b64decode(b))) for b in
            re.findall(r"base64,([^']+)", (tmp_path / "r.html").read_text())]
    assert len(page) == len(saved) >= 3
    page_sizes = sorted(im.size for im in page)
    want = sorted((round(w * 110 / 200), round(h * 110 / 200)) for w, h in (Image.open(p).size for p in saved))
    assert all(abs(a - b) <= 1 for got, exp in zip(page_sizes, want) for a, b in zip(got, exp)), (page_sizes, want)
    single = write_sweep(tmp_path / "one_draw", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, hparams=1)
    a = run_audit([single], selection="training_domain", reps=50).audits[0]
    assert "lodo_vs_logo" not in a.sweep  # no runs with two test environments: nothing to compare, no note needed
    assert "expected_max" in a.sweep and a.sweep["saturation"]["saturated"].isna().all()  # N = 1: unknown


def test_optional_input_without_baseline_is_noted_not_fatal(tmp_path):
    store = write_sweep(tmp_path / "store", {"CORAL": 0.0, "Mixup": 0.0}, datasets={"PACS": 4}, hparams=1)
    r = run_audit(["shipped:yu2024_table5", store], selection="training_domain", optional=[str(store)],
                  sweep_analyses=False, reps=50)
    assert len(r.audits) == 1 and "baseline 'ERM'" in r.notes[0]
    assert any(line.startswith(f"audit {store}: not audited") for line in r.summary)
    with pytest.raises(ValueError, match="baseline 'ERM'"):
        run_audit([store], selection="training_domain", sweep_analyses=False)


def test_sweep_claims_are_paired_where_both_arms_ran_the_same_trial_seeds(sweeps, tmp_path):
    """DomainBed's trial_seed fixes the data split: where both arms ran at least 2 of the same seeds the claim is
    tested paired on those (exact for any variances), else unpaired, and the claim says which ran and what it
    dropped. (Before the one pairing rule, dganalysis.stats.pairing, an arm lacking one seed fell back to unpaired.)"""
    planted, _ = sweeps
    cl = run_audit([planted], selection="training_domain", sweep_analyses=False, reps=50).audits[0].claims
    assert cl["paired"].all() and cl["test"].str.startswith("paired t").all() and (cl["df"] == 2).all()
    unpaired = run_audit([planted], selection="training_domain", sweep_analyses=False, reps=50,
                         paired=False).audits[0].claims
    assert not unpaired["paired"].any() and unpaired["test"].str.startswith("Welch t calibrated").all()
    uneven = write_sweep(tmp_path / "uneven", {"ERM": 0.0, "A": 0.0}, trials=3)
    import shutil

    for d in uneven.glob("*_A_*_*_2"):  # A lacks trial seed 2: paired on seeds 0 and 1, ERM's seed 2 dropped
        shutil.rmtree(d)
    cl = run_audit([uneven], selection="training_domain", sweep_analyses=False, reps=50).audits[0].claims
    assert cl["paired"].all() and (cl["n_paired"] == 2).all() and (cl["df"] == 1).all()
    assert (cl["dropped"] == 0).all() and (cl["baseline_dropped"] == 1).all()
    und = cl[cl["verdict"] == "undecided"]
    assert und["why"].str.contains("dropping 0 trial(s) of A and 1 of ERM", regex=False).all()


def test_panel_titles_fit_their_panel_and_keep_both_ends():
    """A store's dataset label carries its sweep's overrides (paths included): the forest plot's panel title keeps a
    short label whole, wraps a longer one on two lines and cuts a very long one in the middle, so two settings that
    differ only at the end (e.g. the weights file) keep different titles."""
    from dganalysis.audit.outputs import panel_title

    assert panel_title("PACS") == "PACS"
    two = panel_title("NICO++ (hparams_overrides={\"batch_size\": 8, \"featurizer\": \"resnet50\"})")
    assert two.count("\n") == 1 and all(len(line) <= 44 for line in two.splitlines())
    stem = 'NICO++ (hparams_overrides={"pretrained": "/tmp/a/very/long/path/to/the/weights/of/'
    a, b = panel_title(stem + 'moco_v2_800ep.pth.tar"})'), panel_title(stem + 'resnet50-0676ba61.pth"})')
    assert a != b and a.startswith("NICO++ (") and a.endswith('moco_v2_800ep.pth.tar"})')
    assert all(len(line) <= 45 for t in (a, b) for line in t.splitlines()) and a.count("\n") == 1
    from dganalysis.audit.outputs import panel_titles

    tail = "/" + "c" * 50 + '.pth"})'  # two labels that differ only in the middle, which the cut drops
    same_ends = [stem + "x" * 30 + tail, stem + "y" * 30 + tail, "PACS"]
    titles = panel_titles(same_ends)
    assert len(set(titles.values())) == 3 and titles["PACS"] == "PACS"
    assert titles[same_ends[0]].endswith("[1]") and titles[same_ends[1]].endswith("[2]")
