"""Every race-free corpus kernel gives the same bits through the cuda backend (on the simulated
device: uploads keep each argument's strides, launches go through the launcher's device path,
results come back) as through the cpu backend on the same inputs."""
import numpy as np
import pytest

import tilecheck
from tests.conftest import ROOT
from tests.tiers import corpus_sample, slow_unless
from tilecheck.arrays import flat_arguments, layout_of, rebuild_arguments
from tilecheck.collect import load_module
from tilecheck.evaluation import load_manifest
from tilecheck.runtime.cuda import SimulatedDriver, to_device, to_host, use_driver

MANIFEST = load_manifest(ROOT / "corpus")
SAMPLE = corpus_sample(MANIFEST)  # the fast tier's; the other entries run under --thorough
ENTRIES = [pytest.param(e, id=e["kernel"], marks=slow_unless(i in SAMPLE)) for i, e in enumerate(MANIFEST)
           if e["expect"] == "verified" and e["file"].endswith(".py")
           and "order-dependent-atomic" not in e.get("kinds", [])
           and not e["file"].endswith("triton_kernels.py")]  # Triton kernels run on the GPU through Triton


@pytest.mark.parametrize("entry", ENTRIES)
def test_cuda_backend_matches_the_cpu_backend(entry):
    kernel = getattr(load_module(ROOT / "corpus" / entry["file"]), entry["kernel"])
    case = tilecheck.cases_of(kernel)[entry.get("case", 0)]
    # the launcher verifies without the entry's preconditions, and a device launch cannot be decided
    # on its data: entries verified by a precondition or at "this launch's data" (``launch_data``,
    # or a racy twin for other contents) run unchecked
    unsafe = bool(entry.get("assume")) or entry.get("launch_data", False) or entry.get("data", True) and _data_level(entry)
    host = case.make_args()
    tilecheck.launch(case.grid, kernel, host, unsafe=unsafe)
    with use_driver(SimulatedDriver(seed=5)) as sim:
        fresh = case.make_args()
        device = rebuild_arguments(fresh, [to_device(sim, a) if isinstance(a, np.ndarray) else a
                                           for a in flat_arguments(fresh)])
        tilecheck.launch(case.grid, kernel, device, unsafe=unsafe)
        for i, (expected, arg) in enumerate(zip(flat_arguments(host), flat_arguments(device))):
            if isinstance(expected, np.ndarray):
                got = to_host(sim, arg)
                assert layout_of(got).strides == layout_of(expected).strides
                assert got.tobytes() == expected.tobytes(), f"argument #{i} differs"
        assert sim.launches == 1  # it ran on the (simulated) device


def _data_level(entry) -> bool:
    """The entry's kernel is also labelled racy for other index contents (its verdict holds at this
    launch's data only)."""
    return any(e["file"] == entry["file"] and e.get("kernel") == entry.get("kernel") and e["expect"] == "race"
               and e.get("data") is False for e in load_manifest(ROOT / "corpus"))
