"""A named GPU on a CPU-only machine, for running a CUDA-only test suite under the pytest plugin
(``--tilecheck-cpu-device[=sm_90]``).

While installed:

- torch: every ``device="cuda"`` / ``torch.device("cuda", i)`` given to a torch function, and
  ``Tensor.cuda()`` / ``.to("cuda")`` / ``Module.cuda()``, give CPU tensors instead (a torch
  function mode, so factory functions and tensor methods alike; it covers the thread that
  installed it, the one pytest runs tests in);
- ``torch.cuda`` answers as the named GPU would: ``is_available()`` True, one device, its
  capability, name and properties (SM count, memory, L2, shared memory), streams and events
  (``record``/``synchronize``/``elapsed_time``, timed with the CPU's clock), ``synchronize``,
  memory statistics (zero) and seeding (the CPU generator);
- ``torch.autocast(device_type="cuda")`` (and ``torch.amp.autocast``) casts on the CPU, where the
  tensors are;
- ``cuda.tile.launch`` is not touched here: the plugin runs it on the interpreter, checked.

What it cannot do: tensors still *are* CPU tensors (``t.is_cuda`` is False, ``t.device`` is
cpu), torch ops that exist only for CUDA (some fp8 matmuls, ``pin_memory``, CUDA graphs, the
caching allocator) fail as they do on any CPU build, and timings are the interpreter's, not the
GPU's. Nothing in tilecheck's own checks depends on it: the launcher still sees host memory.
"""
from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass
from typing import Any

from tilecheck.errors import TilecheckError


@dataclass(frozen=True)
class GpuModel:
    """What ``torch.cuda`` reports for one GPU (``torch.cuda.get_device_properties``' fields)."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int
    L2_cache_size: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    max_threads_per_multi_processor: int
    regs_per_multiprocessor: int = 65536
    shared_memory_per_block: int = 49152
    max_threads_per_block: int = 1024
    warp_size: int = 32
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    gcnArchName: str = "NA"
    uuid: str = "00000000-0000-0000-0000-000000000000"

    @property
    def arch(self) -> str:
        return f"sm_{self.major}{self.minor}"


_GiB = 1024**3
_MiB = 1024**2
# the datasheet figures of one common part per architecture cuTile supports
GPUS: dict[str, GpuModel] = {m.arch: m for m in (
    GpuModel("NVIDIA A100-SXM4-80GB", 8, 0, 108, 80 * _GiB, 40 * _MiB, 166912, 167936, 2048),
    GpuModel("NVIDIA RTX A6000", 8, 6, 84, 48 * _GiB, 6 * _MiB, 101376, 102400, 1536),
    GpuModel("NVIDIA L40S", 8, 9, 142, 48 * _GiB, 96 * _MiB, 101376, 102400, 1536),
    GpuModel("NVIDIA H100 80GB HBM3", 9, 0, 132, 80 * _GiB, 50 * _MiB, 232448, 233472, 2048),
    GpuModel("NVIDIA B200", 10, 0, 148, 180 * _GiB, 126 * _MiB, 232448, 233472, 2048),
    GpuModel("NVIDIA GeForce RTX 5090", 12, 0, 170, 32 * _GiB, 96 * _MiB, 101376, 102400, 1536),
)}
DEFAULT_ARCH = "sm_90"


def parse_arch(text: str) -> GpuModel:
    """``sm_90``, ``sm90``, ``sm_90a``, ``90`` or ``9.0`` -> the GPU model of that architecture."""
    m = re.fullmatch(r"(?:sm_?)?(\d+)(?:\.(\d))?[af]?", text.strip().lower())
    arch = None
    if m is not None:
        arch = f"sm_{m.group(1)}{m.group(2)}" if m.group(2) is not None else f"sm_{m.group(1)}"
    if arch not in GPUS:
        raise TilecheckError(f"--tilecheck-cpu-device: unknown GPU architecture {text!r} "
                             f"(expected one of {', '.join(GPUS)})")
    return GPUS[arch]


class CpuDevice:
    """Installs and removes the CUDA stand-in (``install()`` / ``uninstall()``)."""

    def __init__(self, gpu: GpuModel) -> None:
        self.gpu = gpu
        self._saved: list[tuple[Any, str, Any]] = []
        self._mode: Any = None

    def install(self) -> None:
        import torch
        import torch.cuda

        if self._mode is not None:
            return
        self._mode = _cuda_to_cpu_mode(torch)
        self._mode.__enter__()
        for name, value in _torch_cuda_api(torch, self.gpu).items():
            self._saved.append((torch.cuda, name, getattr(torch.cuda, name, _MISSING)))
            setattr(torch.cuda, name, value)
        autocast = _cpu_autocast(torch)
        for module in (torch, torch.amp):
            self._saved.append((module, "autocast", module.autocast))
            module.autocast = autocast
        self._saved.append((torch.library.Library, "impl", torch.library.Library.impl))
        torch.library.Library.impl = _cpu_dispatch(torch.library.Library.impl)

    def uninstall(self) -> None:
        if self._mode is None:
            return
        for module, name, value in reversed(self._saved):
            if value is _MISSING:
                delattr(module, name)
            else:
                setattr(module, name, value)
        self._saved.clear()
        with contextlib.suppress(RuntimeError):  # a mode entered in another order is already gone
            self._mode.__exit__(None, None, None)
        self._mode = None


_MISSING = object()


def _cpu_autocast(torch: Any) -> Any:
    """``torch.autocast`` whose ``device_type="cuda"`` is the CPU's: the tensors a CUDA region
    computes on are CPU tensors here, and CUDA autocast would leave their dtypes mixed."""
    base = torch.autocast

    class CpuAutocast(base):  # type: ignore[misc, valid-type]
        def __init__(self, device_type: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__("cpu" if is_cuda_device(device_type) else device_type, *args, **kwargs)

    return CpuAutocast


# torch dispatch keys of CUDA tensors, and those of the CPU tensors that stand in for them
_DISPATCH = {"CUDA": "CPU", "AutogradCUDA": "AutogradCPU", "AutocastCUDA": "AutocastCPU"}


def _cpu_dispatch(impl: Any) -> Any:
    """``torch.library.Library.impl`` registering for the CPU what a library registers for CUDA: a
    kernel library's ops (FlagGems' ``use_gems``: aten ops on the CUDA key) must run for the CPU
    tensors that stand in for CUDA ones, or torch's own CPU ops answer and no kernel is launched."""
    def register(self: Any, op_name: Any, fn: Any, dispatch_key: str = "", *args: Any, **kwargs: Any) -> Any:
        return impl(self, op_name, fn, _DISPATCH.get(dispatch_key, dispatch_key), *args, **kwargs)

    register.__name__ = register.__qualname__ = "impl"
    return register


def is_cuda_device(device: Any) -> bool:
    """``"cuda"``, ``"cuda:1"``, ``torch.device("cuda", 0)`` or a bare CUDA ordinal's type string."""
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return getattr(device, "type", None) == "cuda"


def _cuda_to_cpu_mode(torch: Any) -> Any:
    from torch.overrides import TorchFunctionMode

    identity = {torch.Tensor.cuda, torch.Tensor.pin_memory}

    class CudaToCpu(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func in identity:
                return args[0]
            if is_cuda_device(kwargs.get("device")) or _ordinal(kwargs.get("device")):
                kwargs["device"] = "cpu"  # (a bare ordinal, device=0, is a CUDA device to torch)
            if func is torch.Tensor.to:
                args = tuple("cpu" if is_cuda_device(a) or _ordinal(a) else a for a in args)
            return func(*args, **kwargs)

    return CudaToCpu()


class _Event:
    """``torch.cuda.Event`` on the CPU: ``record`` notes the time, ``elapsed_time`` is in ms."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False,
                 external: bool = False) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        if self._time is None or end._time is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end._time - self._time) * 1000.0


class _Stream:
    """``torch.cuda.Stream`` on the CPU: every launch has finished when it returns."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        self.priority = priority
        self.cuda_stream = 0
        self.stream_id = 0
        self.device_index = 0
        self.device_type = 1

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> _Event:
        event = event or _Event()
        event.record(self)
        return event

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Stream)

    def __hash__(self) -> int:
        return 0


_DEFAULT_STREAM = _Stream()


class _DeviceContext(contextlib.nullcontext):
    """``torch.cuda.device(i)``: there is one device."""

    def __init__(self, device: Any = None) -> None:
        super().__init__()
        self.idx = 0


def _ordinal(device: Any) -> bool:
    """A CUDA device given by its ordinal alone (``device=0``, ``tensor.to(0)``)."""
    return isinstance(device, int) and not isinstance(device, bool)


def _cuda_generator(torch: Any) -> Any:
    """``torch.cuda.default_generators[0]`` as the CPU stands in for it: a CPU generator (torch ops
    given it draw from it) whose ``get_state`` / ``set_state`` speak the CUDA generator's Philox
    layout, 16 bytes, the seed then the offset as int64. Kernel libraries read that state to seed
    their own kernels' random numbers and advance its offset (FlagGems' ``philox_backend_seed_offset``);
    a CPU generator's mt19937 state (5056 bytes) made 63 of FlagGems' tests fail."""

    class CudaGenerator(torch.Generator):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.philox = [int(super().initial_seed()), 0]

        def get_state(self) -> Any:
            return torch.tensor(self.philox, dtype=torch.int64).view(torch.uint8)

        def set_state(self, state: Any) -> Any:
            self.philox = [int(v) for v in state.view(torch.int64)[:2].tolist()]
            return self

        def manual_seed(self, seed: int) -> Any:
            # "cuda" tensors are CPU tensors here, drawn from torch's CPU generator: seed it too
            super().manual_seed(int(seed))
            torch.default_generator.manual_seed(int(seed))
            self.philox = [int(seed), 0]
            return self

        def seed(self) -> int:
            value = int(super().seed())
            self.philox = [value, 0]
            return value

        def initial_seed(self) -> int:
            return self.philox[0]

    return CudaGenerator()


def _torch_cuda_api(torch: Any, gpu: GpuModel) -> dict[str, Any]:
    generator = _cuda_generator(torch)

    def seed(value: int) -> None:
        generator.manual_seed(int(value))

    def zero(*_: Any, **__: Any) -> int:
        return 0

    def nothing(*_: Any, **__: Any) -> None:
        return None

    api = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": nothing,
        "get_device_capability": lambda device=None: (gpu.major, gpu.minor),
        "get_device_properties": lambda device=None: gpu,
        "get_device_name": lambda device=None: gpu.name,
        "get_arch_list": lambda: [gpu.arch],
        "is_bf16_supported": lambda including_emulation=True: True,
        "synchronize": nothing,
        "current_stream": lambda device=None: _DEFAULT_STREAM,
        "default_stream": lambda device=None: _DEFAULT_STREAM,
        "set_stream": nothing,
        "Stream": _Stream,
        "Event": _Event,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "device": _DeviceContext,
        "empty_cache": nothing,
        "memory_allocated": zero,
        "max_memory_allocated": zero,
        "memory_reserved": zero,
        "max_memory_reserved": zero,
        "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing,
        "memory_stats": lambda device=None: {},
        "mem_get_info": lambda device=None: (gpu.total_memory, gpu.total_memory),
        "manual_seed": seed,
        "manual_seed_all": seed,
        "seed": nothing,
        "seed_all": nothing,
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "set_rng_state": lambda new_state, device="cuda": torch.set_rng_state(new_state),
        "_sleep": nothing,
        # the one device's generator (torch.cuda.default_generators[i].manual_seed, FlagGems' seeding)
        "default_generators": (generator,),
    }
    # one function object per name: torch._dynamo keys its rules by the object, and refuses one
    # object that stands for two torch.cuda functions with different rules (torch.compile, and
    # whatever imports torch._dynamo, would fail)
    return {name: fn if isinstance(fn, (type, tuple)) else _named(fn, name) for name, fn in api.items()}


def _named(fn: Any, name: str) -> Any:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in
