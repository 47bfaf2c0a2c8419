"""The reference loader itself: DomainBed imports with its optional dependencies stubbed."""


def test_domainbed_imports(domainbed):
    assert "ERM" in domainbed.algorithms.ALGORITHMS
    assert domainbed.misc.seed_hash(0, 0) == domainbed.misc.seed_hash(0, 0)
