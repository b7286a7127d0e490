"""Frontend: a ``@triton.jit`` kernel plus its launch arguments -> Tile IR ``Module``.

Compiles through Triton's own compiler to TTIR (``triton.compile(ASTSource(...))``, no GPU or
driver), reads the TTIR (``ttir.py``) and lowers it (``lower.py``). Arguments are given as for a
Triton launch: a dict by parameter name, or a sequence of every parameter in order (constexprs
included); parameters with defaults may be left out. A pointer parameter becomes a 1-D array over
the memory its tensor spans (``canonical``), so the rest of tilecheck sees a kernel with cuTile's
calling convention and arrays it already knows how to run, copy and compare.
"""
from __future__ import annotations

import inspect
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.ir import types as T
from tilecheck.ir.core import Function, Module
from tilecheck.ir.cutile import KernelParam, index_bits
from tilecheck.ir.errors import FrontendError
from tilecheck.memo import Memo

TARGET_ARCH = 90  # the GPUTarget the TTIR is made for (TTIR does not depend on it in practice)
_INT32 = (-2**31, 2**31 - 1)
# torch / numpy dtype names -> Triton's pointer and scalar type names
_TRITON_TYPES = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                 "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16",
                 "float32": "fp32", "float64": "fp64", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}
_COMPILING = threading.RLock()
_FUNCTIONS: dict[tuple[Any, ...], Function] = Memo(1024)
_TTIR: dict[tuple[Any, ...], str] = Memo(1024)  # per specialisation (kernel, signature, constexprs): Triton's TTIR


def is_triton_kernel(obj: Any) -> bool:
    """A ``@triton.jit`` function, or one wrapped by ``triton.heuristics`` (Triton is not imported
    for the question: a kernel of it can only exist once it is)."""
    if "triton" not in sys.modules:
        return False
    return jit_function(obj) is not None


def jit_function(obj: Any) -> Any:
    """The JITFunction behind ``obj`` (through heuristics and autotuner wrappers), or None."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:  # pragma: no cover - a broken triton install
        return None
    seen = 0
    while obj is not None and seen < 8:
        if isinstance(obj, JITFunction):
            return obj
        if type(obj).__name__ == "InterpretedFunction" and hasattr(obj, "fn"):  # TRITON_INTERPRET=1
            return JITFunction(obj.fn)
        obj = getattr(obj, "fn", None) if type(obj).__module__.startswith("triton") else None
        seen += 1
    return None


@dataclass(frozen=True)
class Bound:
    """A Triton launch as tilecheck runs it: the module and the arguments in its parameter order."""

    module: Module
    args: tuple[Any, ...]


def bind(kernel: Any, args: Any) -> Bound:
    """The Tile IR of ``kernel`` for these launch arguments, and the arguments it runs on."""
    fn = jit_function(kernel)
    if fn is None:
        raise FrontendError(f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    name = fn.fn.__name__
    values = _by_name(kernel, fn, name, args)
    params = fn.params
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for p in params:
        v = values[p.name]
        if p.is_constexpr or v is None:
            constexprs[p.name] = v
            signature[p.name] = "constexpr"
        else:
            signature[p.name] = _triton_type(name, p.name, v)
    memory = {p.name: values[p.name].base if signature[p.name].startswith("tensordesc") else values[p.name]
              for p in params if signature[p.name].startswith(("*", "tensordesc"))}
    reach = _reach(memory)
    module, canonical = _module(fn, name, params, values, signature, constexprs, reach)
    # an argument the kernel only reads may read on past another argument's memory in its allocation
    # (a fused QKV buffer's k into v's rows): its memory is then its allocation's, to the end; the
    # arguments overlap, and where one of them is written the launch is one of shared memory
    wider = _reach(memory, through=_read_only(module, memory))
    if wider != reach:
        module, canonical = _module(fn, name, params, values, signature, constexprs, wider)
    return Bound(module, tuple(canonical))


def _module(fn: Any, name: str, params: Any, values: dict[str, Any], signature: dict[str, str],
            constexprs: dict[str, Any], reach: dict[str, int]) -> tuple[Module, list[Any]]:
    """The module of this launch and its arguments in parameter order, each pointer argument's
    memory as far as ``reach`` says."""
    kparams: list[KernelParam] = []
    canonical: list[Any] = []
    next_arg = 0
    index_types: list[str] = []
    origins: list[int] = []  # per array, where its pointer points in its memory (negative strides)
    for p in params:
        v = values[p.name]
        if signature[p.name] == "constexpr":
            kparams.append(KernelParam(p.name, "constant", None, 0, next_arg, v))
            canonical.append(v)
        elif signature[p.name].startswith(("*", "tensordesc")):
            descriptor = signature[p.name].startswith("tensordesc")
            flat, span, origin = _flat(name, p.name, v.base if descriptor else v, reach.get(p.name))
            origins.append(origin)
            bits = index_bits((span,), (1,))
            index_types.append(f"i{bits}")
            kparams.append(KernelParam(p.name, "array", _dtype_name(flat), 1, next_arg, None, (span,), (1,)))
            canonical.append(flat)
            next_arg += 3
            # Triton passes a host descriptor as its base pointer, then its shape (i32) and strides
            # (i64); the view's bounds are the descriptor's own, checked by its loads and stores
            for what, values_, dtype in ((("shape", v.shape, "int32"), ("stride", v.strides, "int64"))
                                         if descriptor else ()):
                for d, n in enumerate(values_):
                    kparams.append(KernelParam(f"{p.name}.{what}.{d}", "scalar", dtype, 0, next_arg, int(n)))
                    canonical.append(int(n))
                    next_arg += 1
        else:
            kparams.append(KernelParam(p.name, "scalar", _SCALAR_DTYPES[signature[p.name]], 0, next_arg, v))
            canonical.append(v)
            next_arg += 1
    function = _function(fn, name, signature, constexprs, tuple(index_types), tuple(origins))
    module = Module((function,), name, (), "triton", tuple(kparams), distinct_arrays=False)
    return module, canonical


def _read_only(module: Module, memory: dict[str, Any]) -> frozenset[str]:
    """The pointer arguments no op of ``module`` writes (none, when a write's array is not known)."""
    from tilecheck.ir.opdefs import Effect
    from tilecheck.ir.summary import memory_ops

    written = {m.array for m in memory_ops(module) if m.effect in (Effect.WRITE, Effect.ATOMIC)}
    if not written <= set(memory):
        return frozenset()
    return frozenset(memory) - written


_SCALAR_DTYPES = {triton: name for name, triton in _TRITON_TYPES.items()}  # "fp16" -> "float16"


def _by_name(kernel: Any, fn: Any, name: str, args: Any) -> dict[str, Any]:
    names = [p.name for p in fn.params]
    if isinstance(args, dict):
        unknown = [k for k in args if k not in names]
        if unknown:
            raise FrontendError(f"kernel '{name}' has no parameter {', '.join(map(repr, unknown))} "
                                f"(parameters: {', '.join(names)})")
        given = dict(args)
    else:
        if not isinstance(args, (tuple, list)):
            raise FrontendError(f"kernel '{name}': args must be a dict of launch arguments by name, or a "
                                f"tuple of every parameter in order; got {type(args).__name__}")
        if len(args) > len(names):
            raise FrontendError(f"kernel '{name}' takes {len(names)} parameters ({', '.join(names)}), "
                                f"{len(args)} were given")
        given = dict(zip(names, args))
    defaults = {k: p.default for k, p in inspect.signature(fn.fn).parameters.items()
                if p.default is not inspect.Parameter.empty}
    heuristics = _heuristics(kernel)
    for key, rule in heuristics:
        if key not in given:
            given[key] = rule({**defaults, **given})
    missing = [n for n in names if n not in given and n not in defaults]
    if missing:
        raise FrontendError(f"kernel '{name}': missing argument(s) {', '.join(missing)} (pass them by name; "
                            "constexprs too, as you would to kernel[grid](...))")
    return {n: given[n] if n in given else defaults[n] for n in names}


def _heuristics(kernel: Any) -> list[tuple[str, Any]]:
    """``@triton.heuristics`` rules, outermost first, as Triton applies them before a launch."""
    rules: list[tuple[str, Any]] = []
    obj, seen = kernel, 0
    while obj is not None and seen < 8 and type(obj).__module__.startswith("triton"):
        values = getattr(obj, "values", None)
        if isinstance(values, dict) and type(obj).__name__ == "Heuristics":
            rules += list(values.items())
        obj = getattr(obj, "fn", None)
        seen += 1
    return rules


def _dtype_name(arr: Any) -> str:
    return str(arr.dtype).removeprefix("torch.")


def _is_descriptor(v: Any) -> bool:
    """A host-side ``triton.tools.tensor_descriptor.TensorDescriptor`` (TMA): a view of ``base``."""
    return type(v).__name__ == "TensorDescriptor" and all(
        hasattr(v, a) for a in ("base", "shape", "strides", "block_shape"))


def _triton_type(kernel: str, param: str, v: Any) -> str:
    if _is_descriptor(v):
        element = _triton_type(kernel, f"{param}.base", v.base).removeprefix("*")
        return f"tensordesc<{element}[{', '.join(str(int(n)) for n in v.block_shape)}]>"
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        return "i32" if _INT32[0] <= v <= _INT32[1] else "i64"
    if isinstance(v, float):
        return "fp32"
    if hasattr(v, "dtype") and (hasattr(v, "shape") or callable(getattr(v, "data_ptr", None))):
        dtype = _dtype_name(v)
        if dtype not in _TRITON_TYPES:
            raise FrontendError(f"kernel '{kernel}', argument '{param}': dtype {dtype} is not supported")
        if getattr(v, "shape", None) == () and not hasattr(v, "data_ptr"):
            return _TRITON_TYPES[dtype]
        return "*" + _TRITON_TYPES[dtype]
    raise FrontendError(f"kernel '{kernel}', argument '{param}': unsupported argument type {type(v).__name__} "
                        "(expected a tensor or array, a Python int/float/bool, or a constexpr)")


def _flat(kernel: str, param: str, v: Any, reach: int | None = None) -> tuple[Any, int, int]:
    """A 1-D view of the memory ``v``'s pointer may reach, its length, and the element its pointer
    points at (the origin: 0, or past the elements a negative stride reaches below it: FlagGems'
    flip). The memory is the elements ``v`` spans and, past them, the rest of its allocation up to
    the next argument's memory (``_reach``, in bytes from the pointer): a row's padding, a padded
    tail, which a Triton program may read and write as the GPU lets it (issue 52: memory, not views)."""
    if callable(getattr(v, "data_ptr", None)) and not hasattr(v, "as_strided"):
        return _duck_flat(kernel, param, v)
    if hasattr(v, "data_ptr") and callable(getattr(v, "stride", None)):  # torch.Tensor (no negative strides)
        strides = tuple(int(s) for s in v.stride())
        span = 1 + sum((n - 1) * s for n, s in zip(v.shape, strides)) if v.numel() else 0
        length = max(span, (reach or 0) // v.element_size())
        return v.as_strided((length,), (1,), v.storage_offset()), length, 0
    arr = np.asarray(v) if not isinstance(v, np.ndarray) else v
    itemsize = arr.itemsize
    if any(s % itemsize for s in arr.strides):
        raise FrontendError(f"kernel '{kernel}', argument '{param}': strides {arr.strides} are not "
                            "multiples of the element size")
    strides = [s // itemsize for s in arr.strides]
    below = -sum((n - 1) * s for n, s in zip(arr.shape, strides) if s < 0) if arr.size else 0
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(arr.shape, strides)) if arr.size else 0
    if below:  # the lowest element: where the flat view starts
        lowest = arr[tuple(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in zip(arr.shape, strides))]
        flat = np.lib.stride_tricks.as_strided(lowest, (span,), (itemsize,), writeable=arr.flags.writeable)
        return flat, span, below
    length = max(span, (reach or 0) // itemsize)
    flat = np.lib.stride_tricks.as_strided(arr, (length,), (itemsize,), writeable=arr.flags.writeable)
    return flat, length, 0


def _duck_flat(kernel: str, param: str, v: Any) -> tuple[Any, int, int]:
    """What Triton accepts as a pointer besides tensors: any object with ``data_ptr()`` and a
    ``dtype`` (FlagGems' ``StridedBuffer``), its elements described by ``shape`` and ``stride()`` (in
    elements; one element without them). Read in place, as a numpy array over that memory: host
    memory only (a CPU device, or tilecheck's CPU stand-in for CUDA)."""
    import ctypes

    device = getattr(v, "device", "cpu")
    if str(getattr(device, "type", device)) != "cpu":
        raise FrontendError(f"kernel '{kernel}', argument '{param}': a {type(v).__name__} on {device} (tilecheck "
                            "reads pointer arguments other than tensors in host memory only)")
    name = _dtype_name(v)
    try:
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):  # numpy has none: ml_dtypes' stand in
            import ml_dtypes

            dtype = np.dtype(getattr(ml_dtypes, name))
        else:
            dtype = np.dtype(name)
    except (TypeError, KeyError, ImportError):
        raise FrontendError(f"kernel '{kernel}', argument '{param}': dtype {name} is not supported") from None
    if not hasattr(v, "shape"):  # a bare address and a dtype (FlagGems' TypedPtr): its allocation's rest
        return _bare_pointer_flat(kernel, param, int(v.data_ptr()), dtype)
    shape = tuple(int(n) for n in v.shape)
    stride = getattr(v, "stride", None)
    strides = tuple(int(s) for s in (stride() if callable(stride) else stride or ()))
    if not strides:  # contiguous
        strides = tuple(int(np.prod(shape[d + 1:])) for d in range(len(shape)))
    if len(strides) != len(shape):
        raise FrontendError(f"kernel '{kernel}', argument '{param}': strides {strides} for shape {shape} "
                            "(one per dimension)")
    if not all(shape):
        return np.zeros(0, dtype), 0, 0
    below = -sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides))
    memory = (ctypes.c_char * (span * dtype.itemsize)).from_address(int(v.data_ptr()) - below * dtype.itemsize)
    return np.frombuffer(memory, dtype, count=span), span, below


def _bare_pointer_flat(kernel: str, param: str, address: int, dtype: np.dtype) -> tuple[Any, int, int]:
    """A pointer given as an address and a dtype alone: it may reach what the allocation holding that
    address holds past it (a complex tensor read as its floats, an offset into a buffer). The
    allocation is found among the live torch tensors' storages; none found, the pointer's memory is
    not known and the launch is not checked (a ``FrontendError``), never read as one element (that
    made FlagGems' typed-pointer tests false out-of-bounds refusals)."""
    import ctypes
    import gc

    torch = sys.modules.get("torch")
    end = None
    for obj in gc.get_objects() if torch is not None else ():
        # host tensors with a storage of their own (a sparse or meta tensor has none to hold it)
        if isinstance(obj, torch.Tensor) and obj.device.type == "cpu" and obj.layout == torch.strided:
            try:
                storage = obj.untyped_storage()
                lo, size = storage.data_ptr(), storage.nbytes()
            except RuntimeError:  # (a tensor subclass whose storage cannot be reached)
                continue
            if lo <= address < lo + size:
                end = max(end or 0, lo + size)
    if end is None:
        raise FrontendError(f"kernel '{kernel}', argument '{param}': a pointer given as an address alone, into "
                            "memory tilecheck cannot find (no live host tensor holds it): give a tensor, or an "
                            "object with a shape")
    span = (end - address) // dtype.itemsize
    memory = (ctypes.c_char * (span * dtype.itemsize)).from_address(address)
    return np.frombuffer(memory, dtype, count=span), span, 0


# how far past its own elements an argument's memory is extended into its allocation: at most three
# times its span more, or 2**20 elements (the exact detector keeps a few bytes per element)
_REACH_TIMES, _REACH_ELEMENTS = 4, 1 << 20


def _reach(memory: dict[str, Any], through: frozenset[str] = frozenset()) -> dict[str, int]:
    """Per pointer argument, the bytes from its pointer to where its memory ends for tilecheck: the
    end of its allocation (a numpy array's base array, a torch tensor's storage), or the start of
    another argument's memory inside that allocation, whichever comes first (so that a store past an
    argument's view never lands in another argument unseen: it is out of bounds), within
    ``_REACH_TIMES`` its span or ``_REACH_ELEMENTS`` elements. The arguments ``through`` (read only)
    reach on past the others, to the allocation's end. Absent where the allocation is not known."""
    spans = {name: _span_and_allocation(v) for name, v in memory.items()}
    out = {}
    for name, found in spans.items():
        if found is None:
            continue
        (lo, hi, itemsize), end = found
        others = [] if name in through else [
            o[0][0] for other, o in spans.items() if other != name and o is not None and hi <= o[0][0] < end]
        limit = min([end, *others])
        cap = max(_REACH_TIMES * (hi - lo), (hi - lo) + _REACH_ELEMENTS * itemsize)
        out[name] = max(0, min(limit, lo + cap) - lo)
    return out


def _span_and_allocation(v: Any) -> tuple[tuple[int, int, int], int] | None:
    """``((first byte, one past the last byte, element size), end of the allocation)`` of an array
    whose pointer is its lowest address (its layout: ``arrays.layout_of``), or None."""
    from tilecheck.arrays import layout_of

    try:
        layout = layout_of(v)
        if hasattr(v, "data_ptr") and callable(getattr(v, "stride", None)):  # torch.Tensor: its storage
            storage = v.untyped_storage()
            end = storage.data_ptr() + storage.nbytes()
        elif isinstance(v, np.ndarray):  # the array at the root of its views
            root = v
            while isinstance(root.base, np.ndarray):
                root = root.base
            whole = layout_of(root)
            end = whole.lowest + whole.extent
        else:
            return None
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None
    if layout is None or layout.extent == 0 or any(s < 0 for s in layout.strides):
        return None
    return (layout.lowest, layout.lowest + layout.extent, layout.itemsize), max(end, layout.lowest + layout.extent)


def _function(fn: Any, name: str, signature: dict[str, str], constexprs: dict[str, Any],
              index_types: tuple[str, ...], origins: tuple[int, ...] = ()) -> Function:
    """The lowered entry function, compiled once per specialisation."""
    key = (fn, tuple(sorted(signature.items())), repr(sorted(constexprs.items(), key=lambda kv: kv[0])),
           index_types, origins)
    cached = _FUNCTIONS.get(key)
    if cached is not None:
        return cached
    with _COMPILING:
        cached = _FUNCTIONS.get(key)
        if cached is None:
            # Triton's compile does not depend on the index widths: a launch lowered again with wider
            # memory (``bind``) reuses its TTIR
            text = _TTIR.get(key[:3])
            if text is None:
                text = _TTIR[key[:3]] = ttir(fn, name, signature, constexprs)
            cached = _FUNCTIONS[key] = _lower_text(text, name, signature, index_types, origins)
    return cached


def ttir(fn: Any, name: str, signature: dict[str, str], constexprs: dict[str, Any]) -> str:
    """Triton's TTIR for this specialisation (no GPU needed)."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError as exc:
        raise FrontendError(f"Triton is not importable ({exc}); install tilecheck[triton]") from None
    try:
        src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
        with warnings.catch_warnings():  # e.g. Triton 3.9's notice on FP fusion, a later stage's concern
            warnings.simplefilter("ignore", UserWarning)
            return _ttir_stage(triton, src, GPUTarget("cuda", TARGET_ARCH, 32))
    except Exception as exc:  # Triton's compile errors have many types; each one is the user's kernel
        raise FrontendError(f"Triton could not compile kernel '{name}': {_compile_error(exc)}") from None


def _compile_error(exc: Exception) -> str:
    """Triton's compile error with its cause first: Triton writes "at L:C:", the source line, a caret
    and then the cause; a one-line summary (the CLI's error line) must hold the cause."""
    import re

    lines = [line for line in str(exc).strip().splitlines()]
    if not lines:
        return type(exc).__name__
    where = re.fullmatch(r"at (\d+):(\d+):", lines[0].strip())
    caret = next((i for i, line in enumerate(lines) if line.strip() == "^"), None)
    if where is None or caret is None or caret + 1 >= len(lines):
        return "\n".join(lines[-12:])
    cause = " ".join(line.strip() for line in lines[caret + 1:] if line.strip())
    excerpt = "\n".join(lines[1:caret + 1][-10:])
    return f"{cause} (line {where.group(1)}, column {where.group(2)} of the kernel)\n{excerpt}"


def _ttir_stage(triton: Any, src: Any, target: Any) -> str:
    """The TTIR of ``src``: Triton's pipeline run to its ``ttir`` stage only. ``triton.compile`` runs
    every stage, down to ptxas making a cubin, 6-8 times the work (an autotuned kernel compiles once
    per configuration); the stages are Triton's internals, so on a Triton whose internals differ
    the whole pipeline runs instead (the same text)."""
    try:
        from triton._C.libtriton import ir
        from triton.compiler.compiler import make_backend

        backend = make_backend(target)
        options = backend.parse_options(dict(src.parse_options()))
        stages: dict[str, Any] = {}
        backend.add_stages(stages, options, src.language)
        make_ttir = stages["ttir"]
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        codegen, module_map = backend.get_codegen_implementation(options), backend.get_module_map()
        module = src.make_ir(target, options, codegen, module_map, context)
    except (ImportError, AttributeError, KeyError, TypeError):
        return triton.compile(src, target=target).asm["ttir"]
    return str(make_ttir(module, {}))


def _lower_text(text: str, name: str, signature: dict[str, str], index_types: tuple[str, ...],
                origins: tuple[int, ...] = ()) -> Function:
    from tilecheck.ir.triton.lower import Param, lower
    from tilecheck.ir.triton.ttir import parse_ttir

    func, locs = parse_ttir(text, name)
    runtime: list[tuple[str, str, int]] = []  # (name, signature, descriptor rank) per TTIR argument
    for n, sig in signature.items():
        if sig == "constexpr":
            continue
        rank = sig.count(",") + 1 if sig.startswith("tensordesc") else 0
        runtime.append((n, sig, rank))
        # then a host descriptor's shape and strides, as Triton expands it
        runtime += [(f"{n}.shape.{d}", "i32", 0) for d in range(rank)]
        runtime += [(f"{n}.stride.{d}", "i64", 0) for d in range(rank)]
    if len(func.args) != len(runtime):
        raise FrontendError(f"kernel '{name}': the TTIR takes {len(func.args)} arguments, the launch "
                            f"passes {len(runtime)} ({', '.join(n for n, _, _ in runtime)})")
    widths, starts = iter(index_types), iter(origins)
    params = []
    for (_, type_text), (pname, sig, rank) in zip(func.args, runtime):
        array = sig.startswith("*") or rank
        index_type = T.ScalarType(next(widths)) if array else T.I32
        params.append(Param(pname, type_text, index_type, rank, next(starts, 0) if array else 0))
    return lower(func, locs, params)

