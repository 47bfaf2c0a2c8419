"""The algorithm registry: the papers' and DomainBed's names stay registered, unknown names list the known ones,
every registered algorithm's hparams have documented defaults and reproducible draws, family tags mean what they
say."""

from __future__ import annotations

import pytest

import dganalysis.algorithms as A
from tests.algorithms._build import registered

EXPECTED = [
    "ERM",
    "CDANN",
    "DANN",
    "IRM",
    "Fish",
    "VREx",
    "GroupDRO",
    "SelfReg",
    "SD",
    "SANDMask",
    "Mixup",
    "IB_IRM",
    "IB_ERM",
    "MMD",
    "ANDMask",
    "RSC",
    "CORAL",
    "SagNet",
    "SWAD",
    "Fishr",
    "MLDG",
    "MTL",
    "ARM",
    "IGA",
    "ERDG",
]
# our registered departures from DomainBed's algorithm of the same stem (each pinned in tests/reference/); the generic
# tests (here, test_base.py, test_precision.py) run over every registered algorithm, these lists only check that the
# names stay registered
VARIANTS = ["DANN_GRL", "CDANN_GRL", "MTL_KME", "ARM_CML", "SANDMask_tau05"]
# more of DomainBed's algorithms (each compared step for step in tests/reference/), and our
# variants EQRM_restart, ADRMX_ClassRemix and Transfer_NoGDA (their departures pinned there)
DOMAINBED_MORE = ["ERMPlusPlus", "URM", "EQRM", "CausIRL_CORAL", "CausIRL_MMD", "RDM", "TRM", "CAD", "CondCAD",
                  "Transfer", "ADRMX", "EQRM_restart", "ADRMX_ClassRemix", "Transfer_NoGDA"]

pytestmark = pytest.mark.usefixtures("one_thread")


def test_available_lists_all():
    # the 25 methods of the papers (other modules may register more, e.g. the worst-case variants)
    missing = set(EXPECTED + VARIANTS + DOMAINBED_MORE) - set(A.available())
    assert not missing, f"not registered: {sorted(missing)}"
    assert len(EXPECTED) == len(set(EXPECTED)) == 25
    assert A.available() == sorted(A.available())


def test_unknown_name_lists_known():
    with pytest.raises(KeyError) as err:
        A.get_algorithm("NoSuchAlgorithm")
    msg = str(err.value)
    assert "NoSuchAlgorithm" in msg
    for name in EXPECTED:
        assert name in msg


@pytest.mark.parametrize("name", registered())
def test_hparams_defaults_and_draws(name):
    specs = A.hparam_specs(name)
    defaults = A.default_hparams(name)
    assert set(defaults) == set(specs)
    for k, hp in A.get_algorithm(name).HPARAMS.items():
        assert defaults[k] == hp.default
        assert hp.doc, f"{name}.{k} has no doc"
    drawn = A.default_hparams(name, hparams_seed=3)
    assert set(drawn) == set(specs)
    assert A.default_hparams(name, hparams_seed=3) == drawn  # reproducible


def test_family_tags_follow_the_behaviour_they_name():
    """``wc``: exactly the algorithms that take the worst-case term's ``wc_rho``; ``variant``: a DomainBed
    algorithm's stem plus a suffix; ``grl``: variants of DANN/CDANN."""
    takes_rho = {n for n in A.available() if "wc_rho" in A.hparam_specs(n)}
    assert set(A.names(tag="wc")) == takes_rho and takes_rho
    domainbed = set(A.names(tag="domainbed"))
    for name in A.names(tag="variant"):
        stem = name.rsplit("_", 1)[0]
        assert stem in domainbed and name not in domainbed, name
    assert set(A.names(tag="grl")) <= set(A.names(tag="variant"))
    assert {n.rsplit("_", 1)[0] for n in A.names(tag="grl")} == {"DANN", "CDANN"}
    assert A.tags("DANN_GRL") == {"variant", "grl"}
    assert A.names() == A.available()


def test_unknown_tag_is_an_error():
    with pytest.raises(ValueError, match="unknown algorithm tag 'nope'.*'wc'"):
        A.names(tag="nope")
    from dganalysis.registry import Registry

    with pytest.raises(ValueError, match="tags must be a collection"):
        Registry("thing").register("x", tags="wc")
