"""The proof cache (issue 20): a launch verified for every shape is remembered; a later launch
of the same Tile IR that satisfies the contract is decided without a solver call, one that does
not is verified again; corrupt entries are ignored and rewritten; the CLI clears it."""

import json
import os

import numpy as np

import tilecheck
from tests.verifier.test_shape_contract import copy_tiles, same_tile
from tilecheck.verifier.reuse import proof_cache
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL


def _args(n):
    return np.ones(n, np.float32), np.zeros(n, np.float32), 16


def test_a_second_launch_of_another_shape_is_decided_by_the_contract(tmp_path):
    first = tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    assert first.level == EVERY_SHAPE_LEVEL and "cache" not in first.stats
    second = tilecheck.verify(copy_tiles, _args(1000), (63, 1, 1), cache=tmp_path)
    assert second.stats["cache"] == "hit"
    assert second.status == "verified" and second.level == EVERY_SHAPE_LEVEL
    assert str(second.launch_contract) == str(first.launch_contract)
    assert second.assumptions == first.assumptions


def test_a_launch_outside_every_stored_contract_is_verified_again(tmp_path):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    racy = tilecheck.verify(copy_tiles, _args(64), (4, 2, 1), cache=tmp_path)  # an unread axis of 2
    assert "cache" not in racy.stats
    assert racy.status == "race"


def test_a_fresh_process_reads_the_entry_from_disk(tmp_path):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    fresh = proof_cache.ProofCache(tmp_path)  # what another process sees: nothing in memory
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    assert fresh.contracts(entry.stem)
    assert (tmp_path / ".gitignore").read_text().splitlines()[-1] == "*"
    assert "created by tilecheck" in (tmp_path / "CACHEDIR.TAG").read_text()


def test_a_miss_is_read_again_once_another_process_has_written_the_entry(tmp_path):
    # this process looks first (nothing there), another process proves the kernel and writes
    # the contract: this process's next launch of another shape is decided by it
    here = proof_cache.ProofCache(tmp_path)
    first = tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=here.directory)
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    other = proof_cache.ProofCache(tmp_path)
    assert other.contracts(entry.stem)
    described = json.loads(entry.read_text())["about"]
    entry.unlink()
    stale = proof_cache.ProofCache(tmp_path)
    assert stale.contracts(entry.stem) == []  # a miss
    other.add(entry.stem, proof_cache.encode(first.launch_contract, first.assumptions, first.notes), described)
    assert stale.contracts(entry.stem), "a miss was kept in memory past the other process's write"


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    entry.write_text("{not json")
    proof_cache._OPEN.clear()
    again = tilecheck.verify(copy_tiles, _args(128), (8, 1, 1), cache=proof_cache.ProofCache(tmp_path).directory)
    assert again.status == "verified" and "cache" not in again.stats
    assert json.loads(entry.read_text())["value"]


def test_entries_of_another_version_are_not_read(tmp_path, monkeypatch):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    data = json.loads(entry.read_text())
    data["versions"]["z3"] = "0.0.0"
    entry.write_text(json.dumps(data))
    assert proof_cache.ProofCache(tmp_path).contracts(entry.stem) == []


def test_a_race_is_stored_for_its_launch_only_and_replays_from_the_cache(tmp_path):
    y = np.zeros(64, np.float32)
    first = tilecheck.verify(same_tile, (y, 16), (2, 1, 1), cache=tmp_path)
    assert first.status == "race" and not (tmp_path / "proofs").exists()
    again = tilecheck.verify(same_tile, (y, 16), (2, 1, 1), cache=tmp_path)
    assert again.stats["cache"] == "hit"
    assert str(again) == str(first) and again.to_dict()["findings"] == first.to_dict()["findings"]
    assert tilecheck.replay(again.races[0]).reproduced  # the witness runs on this launch's arrays
    # other float contents: the static verdict does not read them, so it is the same launch's
    other = tilecheck.verify(same_tile, (np.ones(64, np.float32), 16), (2, 1, 1), cache=tmp_path)
    assert other.stats["cache"] == "hit" and other.status == "race"


def test_index_contents_are_part_of_the_key(tmp_path):
    from tests.verifier import launch_data_kernels as K

    def verify(idx):
        x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
        return tilecheck.verify(K.scatter, (x, y, np.array(idx, np.int32), 16), (4, 1, 1), cache=tmp_path)
    first = verify([3, 1, 0, 2])
    assert first.status == "verified"
    assert verify([2, 0, 3, 1]).stats.get("cache") == "hit"  # contents that keep the contract's facts
    duplicated = verify([0, 0, 1, 2])  # contents the verdict did not cover: verified again, and racy
    assert "cache" not in duplicated.stats and duplicated.status == "race"


def test_a_new_process_finds_the_kernels_ir_without_compiling_it(tmp_path, monkeypatch):
    from tilecheck.ir import cutile

    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    # a new process: nothing compiled, nothing in memory; compiling is not allowed
    monkeypatch.setattr(cutile, "_COMPILED", {})
    monkeypatch.setattr(cutile, "_SPECIALIZED", {})
    monkeypatch.setattr(proof_cache, "_OPEN", {})

    def no_compile(*a, **k):
        raise AssertionError("compiled")
    monkeypatch.setattr(cutile, "compile_kernel", no_compile)
    hit = tilecheck.verify(copy_tiles, _args(4096), (256, 1, 1), cache=proof_cache.ProofCache(tmp_path).directory)
    assert hit.stats["cache"] == "hit" and hit.level == EVERY_SHAPE_LEVEL


def test_the_source_digest_follows_the_globals_and_files_a_kernel_reads(tmp_path):
    import importlib.util
    import sys

    from tilecheck.ir.source_digest import kernel_digest

    def load(name, text):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    load("sd_helpers", "def helper(v):\n    return v * 2\n")
    main = load("sd_main", "import sd_helpers\nfrom sd_helpers import helper\nOFFSET = 1\n\n"
                           "def k(x):\n    return helper(x) + OFFSET + sd_helpers.BIAS\n")
    sys.modules["sd_helpers"].BIAS = 5

    def digest():
        return kernel_digest(main.k, None, "v")
    base = digest()
    assert base is not None and digest() == base  # deterministic
    main.OFFSET = 2  # a global value the kernel reads (same file)
    assert digest() != base
    main.OFFSET = 1
    sys.modules["sd_helpers"].BIAS = 6  # an attribute of a module it names
    assert digest() != base
    sys.modules["sd_helpers"].BIAS = 5
    assert digest() == base
    (tmp_path / "sd_helpers.py").write_text("def helper(v):\n    return v * 30\n")  # a file a callee lives in
    assert digest() != base
    unpinned = load("sd_obj", "class Box:\n    pass\n\nOFFSET = Box()\n\ndef k(x):\n    return OFFSET\n")
    assert kernel_digest(unpinned.k, None, "v") is None  # an object without a stable text form


def test_a_verdict_with_a_warning_is_kept_per_launch_not_by_contract(tmp_path):
    from corpus.kernels import gemm

    case = tilecheck.cases_of(gemm.matmul_split_k_atomic)[0]
    first = tilecheck.verify(gemm.matmul_split_k_atomic, case.make_args(), case.grid, cache=tmp_path)
    assert first.status == "verified" and any(f.kind == "order-dependent-atomic" for f in first.findings)
    assert not (tmp_path / "proofs").exists()  # its witness belongs to this launch
    again = tilecheck.verify(gemm.matmul_split_k_atomic, case.make_args(), case.grid, cache=tmp_path)
    assert again.stats["cache"] == "hit"
    assert [f.kind for f in again.findings] == [f.kind for f in first.findings]


def _write_many(directory, n):
    from tilecheck.verifier.reuse import proof_cache as pc

    store = pc.ProofCache(directory)
    for i in range(n):
        store.add_verdict(pc.key("shared"), pc.about("shared"), {"writer": os.getpid(), "i": i, "pad": "x" * 20000})


def test_concurrent_writers_never_leave_a_torn_entry(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_write_many, args=(tmp_path, 60)) for _ in range(2)]
    for w in writers:
        w.start()
    path = proof_cache.ProofCache(tmp_path)._path("launches", proof_cache.key("shared"))
    seen = 0
    while any(w.is_alive() for w in writers):
        if path.exists():
            json.loads(path.read_text())  # every read is a whole entry (a rename, never a partial write)
            seen += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert json.loads(path.read_text())["value"]["i"] == 59
    assert not list(path.parent.glob("*.tmp"))


def test_cli_no_cache_writes_nothing(tmp_path, monkeypatch):
    from tilecheck.cli import main

    (tmp_path / "k.py").write_text(
        "import cuda.tile as ct\nimport numpy as np\nimport tilecheck\n\n"
        "@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 16))\n"
        "@ct.kernel\n"
        "def k(x, y, T: ct.Constant[int]):\n"
        "    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))\n")
    monkeypatch.delenv(proof_cache.ENV_OFF, raising=False)
    monkeypatch.setenv(proof_cache.ENV_DIR, str(tmp_path / "cache"))
    assert main(["verify", str(tmp_path / "k.py"), "-j", "1", "--no-cache"]) == 0
    assert not (tmp_path / "cache").exists()
    assert main(["verify", str(tmp_path / "k.py"), "-j", "1"]) == 0
    assert list((tmp_path / "cache" / "proofs").rglob("*.json"))


def test_the_launcher_generalises_its_contract_over_the_launches_it_has_seen(tmp_path, monkeypatch):
    from tests.verifier.test_shape_contract import folded
    from tilecheck.runtime import launcher

    monkeypatch.delenv(proof_cache.ENV_OFF, raising=False)
    monkeypatch.setenv(proof_cache.ENV_DIR, str(tmp_path))
    monkeypatch.setattr(launcher, "_VERIFIED", {})
    monkeypatch.setattr(launcher, "_SEEN", {})
    reports = []
    for n in (64, 128, 256, 512):
        y = np.zeros(n, np.float32)
        tilecheck.launch((4, 1, 1), folded, (y, 16))
        reports = list(launcher._VERIFIED.values())
    first, second, *rest = reports
    assert "y.shape[0] == 64" in str(first.launch_contract)  # one launch: its size is all it knows
    assert "y.shape[0] ==" not in str(second.launch_contract)  # two: what they share
    assert all(r.stats.get("cache") == "hit" for r in rest)  # the next shapes: by the contract
