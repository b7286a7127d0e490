"""--tilecheck-cpu-device (a CUDA-only suite on a CPU-only machine) and autotuned launches under the
plugin. The parts that need torch skip without it; option parsing, the refusal without torch and
the autotuner interception are tested without torch."""
import shutil
import sys
from pathlib import Path

import pytest

from tilecheck.cpu_device import GPUS, parse_arch
from tilecheck.errors import TilecheckError

SUITE = Path(__file__).resolve().parents[1] / "examples" / "cuda_suite"

# imported here, once: pytester drops modules a test imported, and torch cannot be imported twice
try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (the CPU build is enough)")


# ---- without torch ------------------------------------------------------------------------------
@pytest.mark.parametrize("text, arch", [("sm_90", "sm_90"), ("sm90", "sm_90"), ("sm_90a", "sm_90"),
                                        ("90", "sm_90"), ("9.0", "sm_90"), ("SM_80", "sm_80"),
                                        ("sm_100", "sm_100"), ("12.0", "sm_120")])
def test_arch_names(text, arch):
    gpu = parse_arch(text)
    assert gpu.arch == arch and (gpu.major, gpu.minor) == (int(arch[3:-1]), int(arch[-1]))


@pytest.mark.parametrize("text", ["sm_70", "hopper", "", "sm_9x"])
def test_unknown_arch_is_an_error_naming_the_choices(text):
    with pytest.raises(TilecheckError, match="unknown GPU architecture.*sm_80.*sm_90"):
        parse_arch(text)


def test_every_model_has_plausible_properties():
    for arch, gpu in GPUS.items():
        assert gpu.arch == arch and gpu.multi_processor_count > 50 and gpu.total_memory >= 16 * 1024**3


def test_unknown_arch_is_a_usage_error(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--tilecheck-cpu-device=sm_42")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown GPU architecture 'sm_42'*"])


@needs_torch
def test_the_flag_followed_by_a_path_tests_that_path_on_the_default_gpu(pytester):
    # ``pytest --tilecheck-cpu-device tests/`` as docs/ci.md writes it: the path is not an architecture
    pytester.makepyfile(test_here="def test_here():\n    import torch\n    assert torch.cuda.get_device_capability() == (9, 0)\n",
                        test_elsewhere="def test_elsewhere():\n    raise AssertionError('not asked for')\n")
    result = pytester.runpytest_subprocess("--tilecheck-cpu-device", "test_here.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess("--tilecheck-cpu-device", "test_here.py::test_here", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_without_torch_the_option_says_so(pytester, monkeypatch):
    # a torch that cannot be imported, ahead of the real one on the path
    fake = pytester.mkdir("no_torch")
    (fake / "torch.py").write_text("raise ImportError('no torch here')\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    result = pytester.runpytest_subprocess("--tilecheck-cpu-device", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tilecheck-cpu-device stands in for CUDA in torch; install torch*"])


@needs_torch
def test_cpu_device_refuses_the_gpu_backend(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--tilecheck-cpu-device", "--tilecheck-backend=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


TUNED = '''
from types import SimpleNamespace
import numpy as np
import cuda.tile as ct
from cuda.tile.tune import exhaustive_search


@ct.kernel
def copy_tiles(src, dst, TILE: ct.Constant[int], SHIFT: ct.Constant[int]):
    b = ct.bid(0)
    # SHIFT > 0 makes neighbouring blocks write the same tile: a race in that configuration
    ct.store(dst, index=(b // (1 + SHIFT),), tile=ct.load(src, index=(b,), shape=(TILE,)))


def tuned_copy(src, dst, configs):
    n = src.shape[0]
    result = exhaustive_search(configs, None, lambda c: (n // c.TILE, 1, 1), copy_tiles,
                               lambda c: (src, dst, c.TILE, c.SHIFT), quiet=True)
    cfg = result.best.config
    ct.launch(None, (n // cfg.TILE, 1, 1), copy_tiles, (src, dst, cfg.TILE, cfg.SHIFT))
    return result


def test_safe_configs():
    src, dst = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    result = tuned_copy(src, dst, [SimpleNamespace(TILE=t, SHIFT=0) for t in (64, 32, 128)])
    assert result.best.config.TILE == 64 and len(result.successes) == 3
    assert (dst == src).all()


def test_a_racy_config_fails_the_test():
    src, dst = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    tuned_copy(src, dst, [SimpleNamespace(TILE=64, SHIFT=0), SimpleNamespace(TILE=32, SHIFT=1)])


def test_a_config_cutile_rejects_is_a_failed_config():
    src, dst = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    # a tile of 48 elements is not a power of two: cuTile refuses to compile it
    result = tuned_copy(src, dst, [SimpleNamespace(TILE=48, SHIFT=0), SimpleNamespace(TILE=32, SHIFT=0)])
    assert result.best.config.TILE == 32 and len(result.failures) == 1
    assert (dst == src).all()
'''


def test_autotuned_launches_are_checked_on_the_cpu(pytester):
    pytester.makepyfile(test_tuned=TUNED)
    result = pytester.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu", "-p",
                                           "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*RaceError: refusing to launch copy_tiles: it has a data race*",
                                 "*= tilecheck =*", "copy_tiles: * verified, 1 refused (a race), 2 autotuned"])
    for line in [
        "  refused (a race): test_tuned.py::test_a_racy_config_fails_the_test: refusing to launch copy_tiles*",
        ("  autotuned: test_tuned.py::test_a_config_cutile_rejects_is_a_failed_config: 2 configuration(s) "
         "checked, 1 passed, rejected by cuTile: namespace(TILE=48, SHIFT=0) (FrontendError); "
         "chose namespace(TILE=32, SHIFT=0): the first that passes its check*"),
        ("  autotuned: test_tuned.py::test_safe_configs: 3 configuration(s) checked, 3 passed; chose "
         "namespace(TILE=64, SHIFT=0)*"),
    ]:
        result.stdout.fnmatch_lines([line])


def test_on_the_gpu_backend_every_config_is_checked_before_cutile_times_them(pytester):
    # cuTile's own search stands in as a recorder (no GPU here); the plugin wraps whatever is installed
    pytester.makeconftest('''
import cuda.tile.tune as tune
from cuda.tile.tune import Measurement, TuningResult

TIMED = []

def fake_search(space, stream, grid_fn, kernel, args_fn, hints_fn=None, **kw):
    TIMED.append([c.TILE for c in space])
    best = Measurement(config=space[-1], mean_us=1.0, num_samples=5, error_margin_us=0.1)
    return TuningResult(best=best, successes=(best,), failures=())

tune.exhaustive_search = fake_search
''')
    pytester.makepyfile(test_gpu='''
from types import SimpleNamespace
import numpy as np
import pytest
from cuda.tile.tune import exhaustive_search
import conftest
from test_tuned import copy_tiles

def search(configs):
    src, dst = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    return exhaustive_search(configs, None, lambda c: (256 // c.TILE, 1, 1), copy_tiles,
                             lambda c: (src, dst, c.TILE, c.SHIFT))

def test_timed_by_cutile_after_the_check():
    result = search([SimpleNamespace(TILE=64, SHIFT=0), SimpleNamespace(TILE=32, SHIFT=0)])
    assert result.best.config.TILE == 32 and conftest.TIMED == [[64, 32]]

def test_racy_config_never_reaches_the_timer():
    search([SimpleNamespace(TILE=64, SHIFT=0), SimpleNamespace(TILE=32, SHIFT=2)])
''', test_tuned=TUNED.split("def tuned_copy")[0])
    result = pytester.runpytest_subprocess("--tilecheck-launches", "-p", "no:cacheprovider",
                                           "test_gpu.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*RaceError: refusing to launch copy_tiles*",
                                 "*chose namespace(TILE=32, SHIFT=0): timed by cuTile's search*"])


# ---- with torch ---------------------------------------------------------------------------------
@needs_torch
def test_the_example_cuda_suite_runs_on_the_cpu(pytester):
    for f in SUITE.glob("*.py"):
        shutil.copy(f, pytester.path / f.name)
    result = pytester.runpytest_subprocess("--tilecheck-cpu-device", "-p", "no:cacheprovider", "-rf")
    # every test passes but the one whose kernel races: refused, not run
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines([
        "*= tilecheck =*",
        "CUDA stood in for by the CPU (NVIDIA H100 80GB HBM3, sm_90)*",
        "_add_kernel: * verified, 3 autotuned",
        "_group_scale_kernel: 1 at-launch",
        "  race-free at the launch only (on its own data, or run by tilecheck.detect): "
        "test_ops.py::test_group_scale_list_of_arrays: *",
        "_row_sum_racy_kernel: 1 refused (a race)",
        "  refused (a race): test_ops.py::test_tile_sum_racy: refusing to launch _row_sum_racy_kernel: it has a data race*",
        "FAILED test_ops.py::test_tile_sum_racy - tilecheck.runtime.launcher.RaceError*",
    ])


@needs_torch
def test_without_the_option_the_suite_cannot_start_on_a_cpu_machine(pytester):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    for f in SUITE.glob("*.py"):
        shutil.copy(f, pytester.path / f.name)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tilecheck-launches",
                                           "--tilecheck-backend=cpu")
    # TileGym's failure: the conftest's first CUDA query ends the session before any test runs
    assert result.ret != 0 and " passed" not in result.stdout.str()
    result.stderr.fnmatch_lines(["*Torch not compiled with CUDA enabled*"])


@needs_torch
def test_cpu_device_in_process():
    from tilecheck.cpu_device import CpuDevice

    real_available = torch.cuda.is_available
    device = CpuDevice(parse_arch("sm_80"))
    device.install()
    try:
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
        assert torch.cuda.get_device_capability("cuda") == (8, 0)
        assert torch.cuda.get_device_properties(0).multi_processor_count == 108
        assert torch.cuda.get_device_name() == "NVIDIA A100-SXM4-80GB"
        x = torch.ones(4, device="cuda")
        y = torch.zeros(2, 2).cuda().to("cuda:0")
        z = torch.nn.Linear(2, 2).to("cuda").weight
        assert x.device.type == y.device.type == z.device.type == "cpu"
        assert not x.is_cuda  # tensors are what they are: tilecheck's launcher sees host memory
        stream = torch.cuda.current_stream()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        end.record(stream)
        stream.synchronize()
        torch.cuda.synchronize()
        assert start.elapsed_time(end) >= 0
        torch.cuda.manual_seed(3)
        a = torch.rand(3, device="cuda")
        torch.cuda.manual_seed_all(3)
        assert torch.equal(a, torch.rand(3, device="cuda"))
        with torch.cuda.device(0), torch.cuda.stream(torch.cuda.Stream()):
            assert torch.cuda.memory_allocated() == 0
        # an op a kernel library registers for CUDA tensors runs for the CPU ones that stand in
        lib = torch.library.Library("tilecheck_test", "DEF")
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CUDA")
        assert torch.equal(torch.ops.tilecheck_test.twice(torch.ones(2, device="cuda")), torch.full((2,), 2.0))
        # a bare ordinal is a CUDA device to torch; the device's generator is seeded as FlagGems does
        assert torch.zeros(2, device=0).device.type == torch.ones(2).to(0).device.type == "cpu"
        torch.cuda.default_generators[0].manual_seed(5)
        b = torch.rand(3, device="cuda")
        torch.cuda.manual_seed(5)
        assert torch.equal(b, torch.rand(3, device="cuda"))
        # and its state is the CUDA generator's Philox layout (seed, offset), which FlagGems reads and
        # advances to seed its own kernels
        gen = torch.cuda.default_generators[0]
        state = gen.get_state()
        assert state.dtype == torch.uint8 and state.view(torch.int64).tolist() == [5, 0]
        state.view(torch.int64)[1] += 8
        gen.set_state(state)
        assert gen.get_state().view(torch.int64).tolist() == [5, 8] and gen.initial_seed() == 5
        assert torch.rand(2, generator=gen).shape == (2,)
        # torch._dynamo maps each torch object to one rule: the stand-ins must be distinct objects
        from torch._dynamo import trace_rules

        trace_rules.get_torch_obj_rule_map.cache_clear()
        assert torch.cuda.synchronize in trace_rules.get_torch_obj_rule_map()
    finally:
        if "torch._dynamo.trace_rules" in sys.modules:  # (importing it is what failed before)
            sys.modules["torch._dynamo.trace_rules"].get_torch_obj_rule_map.cache_clear()
        device.uninstall()
    assert torch.cuda.is_available is real_available
    if not real_available():
        with pytest.raises((RuntimeError, AssertionError)):
            torch.ones(1, device="cuda")


@needs_torch
def test_cuda_autocast_casts_the_cpu_tensors_that_stand_in():
    # a CUDA autocast region leaves CPU tensors alone, so a bf16 input met an fp32 weight unconverted
    # (Liger's fused linear JSD amp tests: "expected m1 and m2 to have the same dtype")
    from tilecheck.cpu_device import CpuDevice

    real = torch.autocast
    device = CpuDevice(parse_arch("sm_90"))
    device.install()
    try:
        x, w = torch.ones(2, 4, dtype=torch.bfloat16, device="cuda"), torch.ones(3, 4, device="cuda")
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            assert torch.nn.functional.linear(x, w).dtype == torch.bfloat16
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
        with torch.autocast(device_type="cpu", enabled=False):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
    finally:
        device.uninstall()
    assert torch.autocast is real and torch.amp.autocast is real
