"""A pytest plugin that keeps at most N parametrisations of each test function.

How a large suite is sampled for a run under ``--tilecheck-cpu-device`` (FlagGems' 13,000 quick
tests become about 2,500): ``PYTHONPATH=scripts pytest -p sample_params --sample-params 3 ...``.
The first N in collection order are kept, so the same tree gives the same sample.
"""
from __future__ import annotations

from collections import Counter


def pytest_addoption(parser):
    parser.addoption("--sample-params", type=int, default=0, metavar="N",
                     help="keep at most N parametrisations of each test function (0: all)")


def pytest_collection_modifyitems(config, items):
    keep_at_most = config.getoption("--sample-params")
    if keep_at_most <= 0:
        return
    seen: Counter = Counter()
    kept, dropped = [], []
    for item in items:
        function = (item.nodeid.split("::")[0], getattr(item, "originalname", item.name))
        seen[function] += 1
        (kept if seen[function] <= keep_at_most else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
