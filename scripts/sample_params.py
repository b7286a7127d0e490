"""A pytest plugin that samples a large suite: at most N parametrisations of each test function,
then the tests a file names deselected.

How FlagGems' quick suite (13,000 tests) became the 1,700 run under ``--tilecheck-cpu-device``
(docs/ci.md): ``PYTHONPATH=scripts pytest -p sample_params --sample-params 3 ...``. The first N in
collection order are kept, so the same tree gives the same sample; ``--sample-deselect FILE``
then drops what FILE names, without changing which parametrisations the sample kept. Give it as
one token, ``--sample-deselect=FILE``: a path given as an argument of its own is taken by pytest for
one of the paths to test when it looks for the rootdir, which changes every test id.
"""
from __future__ import annotations

from collections import Counter


def pytest_addoption(parser):
    parser.addoption("--sample-params", type=int, default=0, metavar="N",
                     help="keep at most N parametrisations of each test function (0: all)")
    parser.addoption("--sample-deselect", default=None, metavar="FILE",
                     help="after sampling, deselect the tests FILE names: one node id, or the start of "
                          "one (a file, a test function), per line; '#' starts a comment")


def pytest_collection_modifyitems(config, items):
    keep_at_most = config.getoption("--sample-params")
    dropped = []
    if keep_at_most > 0:
        seen: Counter = Counter()
        kept = []
        for item in items:
            function = (item.nodeid.split("::")[0], getattr(item, "originalname", item.name))
            seen[function] += 1
            (kept if seen[function] <= keep_at_most else dropped).append(item)
        items[:] = kept
    listed = config.getoption("--sample-deselect")
    if listed:
        with open(listed, encoding="utf-8") as lines:
            names = tuple(n for n in (line.split("#")[0].strip() for line in lines) if n)
        dropped += [item for item in items if item.nodeid.startswith(names)]
        items[:] = [item for item in items if not item.nodeid.startswith(names)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
