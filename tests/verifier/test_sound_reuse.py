"""Issue 49: a reused verdict is as sound as a fresh one. Each example the issue names is a test:
the cache answering a question about any contents from a contract on contents, a helper edited in
another module, defaults and attribute chains, a file edited after the import, integer arithmetic
that wraps in a branch or a mask, the launcher's memo, and what the cache does to a user's files."""
import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tests.verifier import launch_data_kernels as K
from tilecheck.errors import TilecheckError
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL
from tilecheck.verifier.reuse import proof_cache


def _same(a, b):
    """Two reports that say the same: status, level and findings' kinds."""
    return (a.status, a.level, sorted(f.kind for f in a.findings)) == (b.status, b.level, sorted(f.kind for f in b.findings))


# ---- the mode: a contract on contents never answers a question about any contents ---------------
def test_data_false_is_never_answered_by_a_contract_on_contents(tmp_path):
    from corpus.kernels.loops import _groups, grouped_rows_scan

    args, grid = _groups(), (5, 1, 1)
    first = tilecheck.verify(grouped_rows_scan, args, grid, cache=tmp_path)
    assert first.status == "verified" and first.launch_contract.contents  # rests on the sizes
    fresh = tilecheck.verify(grouped_rows_scan, args, grid, data=False, cache=False)
    reused = tilecheck.verify(grouped_rows_scan, args, grid, data=False, cache=tmp_path)
    assert fresh.status == "race"
    assert "cache" not in reused.stats and _same(reused, fresh)
    # and the question about this launch's data is still answered by the contract, contents evaluated
    again = tilecheck.verify(grouped_rows_scan, args, grid, cache=tmp_path)
    assert again.stats.get("cache") == "hit" and again.status == "verified"


def test_a_contract_on_contents_is_evaluated_on_each_launchs_contents(tmp_path):
    def verify(idx, **kw):
        x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
        return tilecheck.verify(K.scatter, (x, y, np.array(idx, np.int32), 16), (4, 1, 1), **kw)
    assert verify([3, 1, 0, 2], cache=tmp_path).status == "verified"
    for idx in ([0, 0, 1, 2], [3, -1, 0, 2], [7, 1, 0, 2]):  # duplicates, padding, out of range
        reused, fresh = verify(idx, cache=tmp_path), verify(idx, cache=False)
        assert reused.stats.get("cache") != "hit" or reused.status == fresh.status
        assert _same(reused, fresh), idx


def test_the_launchers_memo_evaluates_a_contract_on_contents_at_every_launch(tmp_path, monkeypatch):
    from tilecheck.runtime import launcher

    monkeypatch.delenv(proof_cache.ENV_OFF, raising=False)  # the default cache, as a user has it
    monkeypatch.setenv(proof_cache.ENV_DIR, str(tmp_path / "cache"))
    monkeypatch.setattr(launcher, "_CHECKED", {})
    monkeypatch.setattr(launcher, "_VERIFIED", {})
    monkeypatch.setattr(launcher, "_ON_DATA", {})
    x, y, idx = np.ones(64, np.float32), np.zeros(64, np.float32), np.array([3, 1, 0, 2], np.int32)
    tilecheck.verify(K.scatter, (x, y, idx, 16), (4, 1, 1))  # stores a contract on idx's contents
    with pytest.warns(tilecheck.LaunchWarning):
        tilecheck.launch((4, 1, 1), K.scatter, (x, y, idx, 16))
    idx[:] = [0, 0, 1, 2]  # the same buffer refilled: same address, shape and strides
    with pytest.raises(tilecheck.RaceError):
        tilecheck.launch((4, 1, 1), K.scatter, (x, y, idx, 16))


# ---- identity: what the source digest must see ---------------------------------------------------
def _load(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _digest(kernel):
    from tilecheck.ir.cutile import _import_cutile, _python_function
    from tilecheck.ir.source_digest import kernel_digest

    return kernel_digest(_python_function(kernel, _import_cutile()[0]), None, "v")


HELPER = """
import cuda.tile as ct

@ct.function
def slot(b):
    return b{edit}
"""
KERNEL = """
import cuda.tile as ct
from {helpers} import slot

@ct.kernel
def k(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, index=(slot(b),), tile=ct.load(x, index=(b,), shape=(T,)))
"""


def test_a_ct_function_helper_in_another_module_is_part_of_the_digest(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _load(tmp_path, "rh_helpers", HELPER.format(edit=""))
    main = _load(tmp_path, "rh_main", KERNEL.format(helpers="rh_helpers"))
    base = _digest(main.k)
    assert base is not None
    (tmp_path / "rh_helpers.py").write_text(textwrap.dedent(HELPER.format(edit=" // 2")))
    assert _digest(main.k) != base  # the helper's file, not cuTile's wrapper's


@pytest.mark.slow
def test_the_cli_sees_a_helper_edited_in_another_module(tmp_path):
    (tmp_path / "cli_helpers.py").write_text(textwrap.dedent(HELPER.format(edit="")))
    kernel = KERNEL.format(helpers="cli_helpers").replace(
        "@ct.kernel", "@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 16))\n"
                      "@ct.kernel")
    (tmp_path / "cli_kernel.py").write_text("import numpy as np\nimport tilecheck\n" + textwrap.dedent(kernel))
    env = {**__import__("os").environ, "TILECHECK_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    env.pop("TILECHECK_NO_CACHE", None)

    def run():
        return subprocess.run([sys.executable, "-m", "tilecheck", "verify", "cli_kernel.py"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
    assert run().returncode == 0
    (tmp_path / "cli_helpers.py").write_text(textwrap.dedent(HELPER.format(edit=" // 2")))
    racy = run()
    assert racy.returncode == 1, racy.stdout + racy.stderr


def test_defaults_kwonly_defaults_and_attribute_chains_are_part_of_the_digest(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _load(tmp_path, "ac_sub", "SHIFT = 1\n")
    cfg = _load(tmp_path, "ac_cfg", "import ac_sub as sub\n")
    _load(tmp_path, "ac_defaults", "WIDTH = 2\n")
    main = _load(tmp_path, "ac_main", """
        import cuda.tile as ct
        import ac_cfg as cfg
        from ac_defaults import WIDTH

        @ct.function
        def scaled(b, by=3, *, width=WIDTH):
            return b * by * width

        @ct.kernel
        def k(x, y, T: ct.Constant[int]):
            b = ct.bid(0)
            ct.store(y, index=(scaled(b) + cfg.sub.SHIFT,), tile=ct.load(x, index=(b,), shape=(T,)))
        """)
    base = _digest(main.k)
    assert base is not None
    cfg.sub.SHIFT = 2  # a constant reached through an attribute chain
    assert _digest(main.k) != base
    cfg.sub.SHIFT = 1
    assert _digest(main.k) == base
    main.scaled.__wrapped__.__kwdefaults__["width"] = 5  # a keyword-only default
    assert _digest(main.k) != base
    main.scaled.__wrapped__.__kwdefaults__["width"] = 2
    main.scaled.__wrapped__.__defaults__ = (4,)  # a positional default
    assert _digest(main.k) != base


def test_a_file_edited_after_the_import_does_not_name_the_old_code(tmp_path, monkeypatch):
    # process A imported v1 and then the file became v2; process B imports v2: their digests differ
    monkeypatch.syspath_prepend(str(tmp_path))
    _load(tmp_path, "fe_helpers", HELPER.format(edit=""))
    stale = _load(tmp_path, "fe_main", KERNEL.format(helpers="fe_helpers"))
    (tmp_path / "fe_main.py").write_text(textwrap.dedent(KERNEL.format(helpers="fe_helpers")).replace(
        "slot(b),", "slot(b) // 2,"))
    in_a = _digest(stale.k)
    fresh = _load(tmp_path, "fe_main", (tmp_path / "fe_main.py").read_text())
    assert _digest(fresh.k) != in_a


# ---- arithmetic that wraps where it decides what is accessed -------------------------------------
WRAPPING = """
import cuda.tile as ct

@ct.kernel
def header_once(x, y, CHUNK: ct.Constant[int], T: ct.Constant[int]):
    b = ct.bid(0)
    if b * CHUNK == 0:  # block 0 writes the header, unless b * CHUNK wraps to 0
        ct.store(y, index=(0,), tile=ct.load(x, index=(b,), shape=(T,)))

@ct.kernel
def masked_chunk(x, y, n: int, CHUNK: ct.Constant[int], T: ct.Constant[int]):
    b = ct.bid(0)
    lanes = ct.arange(T, dtype=ct.int32)
    mask = b * CHUNK + lanes < n
    ct.scatter(y, lanes, ct.gather(x, lanes, mask=mask), mask=mask)
"""


@pytest.mark.parametrize("name, scalars", [("header_once", (65536, 16)), ("masked_chunk", (1, 1 << 20, 16))])
def test_no_contract_admits_a_launch_where_a_branch_or_mask_wraps(tmp_path, name, scalars):
    kernel = getattr(_load(tmp_path, f"wrap_{name}", WRAPPING), name)
    args = (np.ones(16, np.float32), np.zeros(16, np.float32), *scalars)
    small = tilecheck.verify(kernel, args, (4, 1, 1), cache=tmp_path / "cache")
    assert small.status == "verified"
    wrapping = (65537, 1, 1)  # block 65536's b * CHUNK wraps
    reused = tilecheck.verify(kernel, args, wrapping, cache=tmp_path / "cache", data=False)
    fresh = tilecheck.verify(kernel, args, wrapping, cache=False, data=False)
    assert reused.status != "verified" and _same(reused, fresh)
    assert any(f.kind == "overflow" for f in fresh.findings)


# ---- the cache and a user's files ----------------------------------------------------------------
def _verified_into(directory):
    from tests.verifier.test_shape_contract import copy_tiles

    return tilecheck.verify(copy_tiles, (np.ones(64, np.float32), np.zeros(64, np.float32), 16), (4, 1, 1),
                            cache=directory)


def test_a_folder_of_someone_elses_files_is_never_written_to(tmp_path):
    (tmp_path / "README.md").write_text("my project\n")
    with pytest.warns(proof_cache.CacheWarning, match="not a tilecheck cache"):
        report = _verified_into(tmp_path)
    assert report.status == "verified"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]
    assert (tmp_path / "README.md").read_text() == "my project\n"
    with pytest.raises(TilecheckError, match="not a tilecheck cache"):
        proof_cache.ProofCache(tmp_path).clear()
    assert (tmp_path / "README.md").exists()


def test_clear_removes_only_what_the_cache_wrote(tmp_path):
    cache = tmp_path / "cache"
    _verified_into(cache)
    assert (cache / "CACHEDIR.TAG").exists()
    (cache / "notes.txt").write_text("mine\n")  # a file a user put there
    (cache / "proofs" / "mine.txt").write_text("mine too\n")
    assert proof_cache.ProofCache(cache).clear()
    left = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    assert left == ["notes.txt", "proofs", "proofs/mine.txt"]


def test_clear_through_a_symlinked_directory(tmp_path):
    real = tmp_path / "real"
    _verified_into(real)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert proof_cache.ProofCache(link).clear()
    assert link.is_symlink() and not any(real.iterdir())


def test_cli_cache_clear_refuses_a_folder_that_is_not_a_cache(tmp_path, monkeypatch):
    from tilecheck.cli import main

    (tmp_path / "src.py").write_text("x = 1\n")
    monkeypatch.setenv(proof_cache.ENV_DIR, str(tmp_path))
    from tilecheck.cli import EXIT_USAGE

    assert main(["cache", "clear"]) == EXIT_USAGE
    assert (tmp_path / "src.py").exists()


def test_an_entry_copied_under_another_key_is_not_trusted(tmp_path):
    from tests.verifier.test_shape_contract import copy_tiles, same_tile

    _verified_into(tmp_path)
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    y = np.zeros(64, np.float32)
    fresh = tilecheck.verify(same_tile, (y, 16), (2, 1, 1), cache=False)
    assert fresh.status == "race"
    # the racy kernel's contracts entry, filled with the race-free kernel's contract
    from tilecheck.ir.cutile import module_for
    from tilecheck.ir.identity import access_digest, program_digest
    from tilecheck.verifier.reuse.lookup import CacheCase

    module, _ = module_for(same_tile, (y, 16))
    racy_name = proof_cache.key(*CacheCase(program_digest(module), access_digest(module), [], module.name, (), (2, 1, 1), {}).proof_parts())
    target = tmp_path / "proofs" / racy_name[:2] / f"{racy_name}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(entry.read_text())
    proof_cache._OPEN.clear()
    again = tilecheck.verify(same_tile, (y, 16), (2, 1, 1), cache=proof_cache.ProofCache(tmp_path).directory)
    assert again.status == "race" and again.stats.get("cache") != "hit"
    assert copy_tiles is not None


@pytest.mark.parametrize("value", [[], {"rules": 3}, "text", [{"$": "Loc"}], {"report": {"$": "Loc", "file": 1}},
                                   {"report": {"$": "Loc", "file": "k.py", "line": 1, "col": 0}, "floats": None},
                                   {"report": {"$": "Report", "kernel": "k", "status": "verified", "findings": 3}}])
def test_valid_json_of_an_unexpected_layout_is_ignored(tmp_path, value):
    from tests.verifier.test_shape_contract import same_tile

    def both():  # a contract (proofs/, kernels/) and a launch's verdict (launches/)
        racy = tilecheck.verify(same_tile, (np.zeros(64, np.float32), 16), (2, 1, 1), cache=tmp_path)
        return _verified_into(tmp_path).status, racy.status
    first = both()
    assert first == ("verified", "race")
    for entry in tmp_path.rglob("*.json"):
        data = json.loads(entry.read_text())
        data["value"] = value
        entry.write_text(json.dumps(data))
    proof_cache._OPEN.clear()
    assert both() == first


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(proof_cache.json, "dump", full)
    assert _verified_into(tmp_path).status == "verified"
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("*.json"))


def test_every_entry_says_what_it_is_about(tmp_path):
    _verified_into(tmp_path)
    for entry in tmp_path.rglob("*.json"):
        data = json.loads(entry.read_text())
        assert set(data) == {"versions", "about", "value"}
        assert proof_cache._name(data["about"]) == entry.stem


def test_the_cache_is_on_by_default_and_reuse_agrees_with_a_fresh_proof_on_the_corpus_sample(tmp_path):
    # the README's question (eval of the corpus) for the kernels whose entries ask twice
    from corpus.kernels.loops import _groups, grouped_rows_prefix_sum

    args = _groups()
    for data in (True, False):
        warm = tilecheck.verify(grouped_rows_prefix_sum, args, (5, 1, 1), data=data, cache=tmp_path)
        cold = tilecheck.verify(grouped_rows_prefix_sum, args, (5, 1, 1), data=data, cache=False)
        assert _same(warm, cold)
    assert EVERY_SHAPE_LEVEL


# ---- proofs that span float widths (issue 51): a contract proved for float32 decides float16 -----
def test_a_contract_proved_for_float32_decides_the_float16_launch_as_a_fresh_proof_does(tmp_path):
    from tests.verifier.test_shape_contract import copy_tiles
    from tilecheck.ir.cutile import module_for
    from tilecheck.ir.identity import access_digest, program_digest

    wide = (np.ones(64, np.float32), np.zeros(64, np.float32), 16)
    half = (np.ones(128, np.float16), np.zeros(128, np.float16), 16)
    ints = (np.ones(64, np.int16), np.zeros(64, np.int16), 16)
    m32, m16, mi = (module_for(copy_tiles, a)[0] for a in (wide, half, ints))
    assert program_digest(m32) != program_digest(m16) and access_digest(m32) == access_digest(m16)
    assert access_digest(mi) != access_digest(m32)  # integer widths are kept
    assert tilecheck.verify(copy_tiles, wide, (4, 1, 1), cache=tmp_path).status == "verified"
    reused = tilecheck.verify(copy_tiles, half, (8, 1, 1), cache=tmp_path)
    fresh = tilecheck.verify(copy_tiles, half, (8, 1, 1), cache=False)
    assert reused.stats.get("cache") == "hit" and _same(reused, fresh)
    racy = tilecheck.verify(copy_tiles, half, (8, 2, 1), cache=tmp_path)  # outside the contract: proved again
    assert "cache" not in racy.stats and racy.status == "race"


# ---- a lock whose loop leaves on any value but "taken" rests on the lock array's contents --------
def test_a_lock_counted_on_zeroed_contents_is_not_reused_for_other_contents(tmp_path):
    from tests.oracle_relation import load_file
    from tests.test_oracle import DATA

    racy = load_file(DATA / "lock_loop_exits_on_other_contents.py")
    acc, _, tile = racy.args
    zeroed = (acc.copy(), np.zeros(2, np.int32), tile)
    for data in (True, False):
        first = tilecheck.verify(racy.kernel, zeroed, (3, 1, 1), data=data, cache=tmp_path)
        assert first.status == "verified" and any("holds only 0 and 1" in a for a in first.assumptions)
        reused = tilecheck.verify(racy.kernel, racy.args, (3, 1, 1), data=data, cache=tmp_path)
        fresh = tilecheck.verify(racy.kernel, racy.args, (3, 1, 1), data=data, cache=False)
        assert reused.status == fresh.status and fresh.status != "verified", (reused, fresh)
        # with this launch's data, tilecheck.detect decides it (race); for any contents, the note
        assert fresh.status == "race" if data else any("is not counted" in n for n in fresh.notes)


def test_a_contracts_protocol_is_evaluated_at_every_launch_in_any_mode():
    from tilecheck.verifier.contracts import shapes as shape_contract
    from tilecheck.verifier.reuse.lookup import admissible

    contract = shape_contract.ShapeContract((), proved=True, protocol=(tilecheck.bounded("lk", 0, 1),))
    assert admissible(contract, {"every_shape": True, "data": False})  # the lock's protocol, not index data
    assert contract.admits({}, {}, {"lk": np.zeros(4, np.int32)})
    assert not contract.admits({}, {}, {"lk": np.array([0, -1, 0, 0], np.int32)})
    assert not contract.admits({}, {}, None)  # contents that cannot be read: not admitted
    assert "values of 'lk' lie in [0, 1]" in str(contract)


# ---- contracts on contents keep an index range, not the data's own --------------------------------
def _targets(values):
    from corpus.kernels.norms import _ce_args

    logits, _, loss, v = _ce_args()
    return logits, np.array(values, np.int32), loss, v


def test_a_contract_on_contents_keeps_an_index_range_not_the_datas_own(tmp_path):
    from corpus.kernels.norms import cross_entropy_ignore_index as ce
    from tilecheck.verifier.contracts.preconditions import bounded

    first = tilecheck.verify(ce, _targets([3, -100, 17, 4, 5, -100, 9, 10]), (8, 1, 1), cache=tmp_path)
    assert first.status == "verified" and first.level == EVERY_SHAPE_LEVEL, first
    # the data's own range is [3, 17]; the proof holds for the logits' columns [0, 63]
    assert first.launch_contract.contents == (bounded("target", 0, 63, also=(-100,)),), first.launch_contract
    other = tilecheck.verify(ce, _targets([60, 0, -100, 63, 1, 2, 33, -100]), (8, 1, 1), cache=tmp_path)
    assert other.stats.get("cache") == "hit" and other.status == "verified", other


_TARGET = st.one_of(st.integers(0, 63), st.just(-100), st.integers(-3, 70))


@settings(max_examples=examples(40, fast=4), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(st.integers(0, 40), min_size=8, max_size=8, unique=True),
       at=st.integers(0, 7), value=st.one_of(st.sampled_from([-1, 0, 55, 56, 63, 64, -100]), _TARGET),
       shifted=st.booleans())
def test_a_widened_contract_on_contents_says_no_more_than_a_fresh_proof(tmp_path_factory, first, at, value,
                                                                          shifted):
    # the next launch changes one target; shifted: a kernel whose targets index [8, 63] only,
    # where widening the range to the logits' columns is wrong
    from corpus.kernels.norms import cross_entropy_ignore_index

    ce = K.shifted_pick if shifted else cross_entropy_ignore_index
    then = [*first[:at], value, *first[at + 1:]]
    cache = tmp_path_factory.mktemp("contents")
    tilecheck.verify(ce, _targets(first), (8, 1, 1), cache=cache)
    reused = tilecheck.verify(ce, _targets(then), (8, 1, 1), cache=cache)
    fresh = tilecheck.verify(ce, _targets(then), (8, 1, 1), cache=False)
    assert reused.status == fresh.status or (reused.status == "verified" and fresh.status == "unknown"), \
        (first, then, str(reused), str(fresh))
    if reused.status == "verified":
        assert tilecheck.detect(ce, _targets(then), (8, 1, 1)).status == "verified", (first, then)
