"""Frontend: a cuTile Python kernel plus its launch arguments -> Tile IR ``Module``.

Compiles through cuda-tile's public ``cuda.tile.compilation`` API (no GPU, no ``tileiras``) to Tile IR
bytecode and decodes that bytecode with ``tilecheck.ir.bytecode``: the IR tilecheck checks is the IR
that goes to the GPU compiler.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import io
import threading
import typing
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.ir.core import Module
from tilecheck.ir.errors import FrontendError
from tilecheck.memo import Memo

BYTECODE_VERSION = "13.4"
_INT32_MAX = 2**31 - 1

# numpy / torch / cupy dtype names -> cuda.tile dtype attribute names
_DTYPES = {"bool": "bool_", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
           "uint8": "uint8", "uint32": "uint32", "float16": "float16", "bfloat16": "bfloat16",
           "float32": "float32", "float64": "float64", "half": "float16", "float": "float32",
           "double": "float64", "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}


class KernelParam(typing.NamedTuple):
    """One parameter of the Python kernel and where it lives in the entry's argument list.

    ``kind`` is ``array`` (entry args: base pointer, then shape, then strides), ``scalar`` (one arg),
    ``constant`` (compiled in, no arg) or ``list`` (a list of arrays, passed as cuTile passes it: the
    base pointer of an in-memory table with one row of i64 words per array — data pointer, shape,
    strides — and the list's length). ``shape``/``strides`` are the example argument's; a list's are
    ``(len,)`` and ``()``, and ``items`` holds each array's (shape, strides).

    A named tuple, not a frozen dataclass: a launch of a new shape binds one per argument, and a
    frozen dataclass's ``__init__`` (a ``object.__setattr__`` per field) cost 2 us of the
    launcher's 60 us check; the ``repr`` (in cache keys) is the same.
    """

    name: str
    kind: str
    dtype: str | None
    ndim: int
    first_arg: int
    value: Any = None
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()  # in elements
    items: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()  # a list's arrays: (shape, strides)

    @property
    def num_args(self) -> int:
        return {"array": 1 + 2 * self.ndim, "scalar": 1, "list": 2}.get(self.kind, 0)


@dataclass(frozen=True)
class CompiledKernel:
    """What ``compile_kernel`` produced: the bytecode, the decoded module and the parameter map."""

    name: str
    bytecode: bytes
    module: Module
    params: tuple[KernelParam, ...]


def from_cutile(kernel: Any, args: typing.Sequence[Any]) -> Module:
    """The Tile IR of ``kernel`` specialised for ``args`` (the tuple you pass to ``ct.launch``)."""
    return compile_kernel(kernel, args).module


def _parameters(kernel: Any, args: typing.Sequence[Any]) -> tuple[str, list[Any], list[KernelParam], Any]:
    """The kernel's name, cuTile's constraint per argument, the parameter map and the calling
    convention: what a compilation is asked for (no compilation yet)."""
    ct, compilation = _import_cutile()
    pyfunc = _python_function(kernel, ct)
    name = pyfunc.__name__
    params = list(inspect.signature(pyfunc).parameters.values())
    if not isinstance(args, (tuple, list)):
        raise FrontendError(f"kernel '{name}': args must be a tuple of launch arguments, got "
                            f"{type(args).__name__}")
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise FrontendError(f"kernel '{name}' takes {len(params)} arguments ({names}), "
                            f"{len(args)} were given")
    constraints: list[Any] = []
    kparams: list[KernelParam] = []
    next_arg = 0
    for param, arg in zip(params, args):
        constraint, leaves = _constraint(name, param.name, _is_constant(param, ct), arg, ct, compilation, next_arg)
        constraints.append(constraint)
        kparams += leaves
        next_arg += sum(k.num_args for k in leaves)
    # tuple arguments need calling convention v2; other kernels keep v1 (cuTile's own JAX integration
    # makes the same choice)
    convention = compilation.CallingConvention.cutile_python_v2() if any(isinstance(a, tuple) for a in args) \
        else compilation.CallingConvention.cutile_python_v1()
    return name, constraints, kparams, convention


def specialization(params: typing.Sequence[KernelParam]) -> tuple[Any, ...]:
    """What cuTile compiles a kernel for, per parameter: an array's dtype, rank and index width, a
    list's (one for all its arrays), a scalar's type, a constant's value. Shapes, strides and
    scalar values are runtime arguments: launches that agree on this get the same Tile IR."""
    out: list[Any] = []
    for p in params:
        if p.kind == "array":
            out.append((p.name, "array", p.dtype, p.ndim, index_bits(p.shape, p.strides)))
        elif p.kind == "list":
            wide = max(index_bits(shape, strides) for shape, strides in p.items)
            out.append((p.name, "list", p.dtype, p.ndim, wide))
        elif p.kind == "constant":
            out.append((p.name, "constant", type(p.value).__name__, p.value))
        else:
            out.append((p.name, p.kind, p.dtype))
    return tuple(out)


def compile_kernel(kernel: Any, args: typing.Sequence[Any]) -> CompiledKernel:
    name, constraints, kparams, convention = _parameters(kernel, args)
    ct, compilation = _import_cutile()
    next_arg = sum(k.num_args for k in kparams)
    signature = compilation.KernelSignature(constraints, convention)
    buf = io.BytesIO()
    try:
        with _COMPILING:
            compilation.export_kernel(kernel, [signature], buf, output_format="tileir_bytecode",
                                      bytecode_version=BYTECODE_VERSION)
    except ct.TileError as exc:
        described = ", ".join(_describe(p) for p in kparams)
        raise FrontendError(f"cuTile rejected kernel '{name}' for the arguments ({described}): {exc}"
                            ) from None
    except UnicodeEncodeError:  # cuTile writes the source file's name into the debug info as UTF-8
        raise FrontendError(f"cuTile could not compile kernel '{name}': its file name "
                            f"{ascii(inspect.getsourcefile(_python_function(kernel, ct)) or '?')} is not valid UTF-8 "
                            "(rename the file)") from None
    except (TypeError, ValueError) as exc:
        raise FrontendError(f"cuTile could not compile kernel '{name}': {exc}") from None
    except OSError as exc:  # e.g. cuTile reads the kernel's source file (absent for exec'd code)
        hint = "; define kernels in a file" if "source" in str(exc) else ""
        raise FrontendError(f"cuTile could not compile kernel '{name}' ({exc}){hint}") from None
    from tilecheck.ir.bytecode.reader import read_bytecode

    data = buf.getvalue()
    module = read_bytecode(data)
    entry_args = len(module.entry.args)
    if entry_args != next_arg:
        raise FrontendError(f"kernel '{name}': expected {next_arg} entry arguments from the cuTile "
                            f"calling convention, the bytecode has {entry_args}")
    module = Module(module.functions, name, module.globals, "cutile-python", tuple(kparams))
    return CompiledKernel(name, data, module, tuple(kparams))


def _describe(p: KernelParam) -> str:
    if p.kind == "array":
        return f"{p.name}: {p.dtype}{list(p.shape)}"
    if p.kind == "list":
        return f"{p.name}: [{', '.join(f'{p.dtype}{list(shape)}' for shape, _ in p.items)}]"
    return f"{p.name}={p.value!r}"


def _import_cutile() -> tuple[Any, Any]:
    try:
        import cuda.tile as ct
        from cuda.tile import compilation
    except ImportError as exc:  # pragma: no cover - cuda-tile is a dependency
        raise FrontendError(f"cuda-tile is not importable: {exc}") from None
    return ct, compilation


def _python_function(kernel: Any, ct: Any) -> Any:
    if not isinstance(kernel, ct.kernel):
        raise FrontendError(f"expected a @ct.kernel function, got {type(kernel).__name__}; "
                            "decorate the function with @cuda.tile.kernel")
    # The decorated Python function: cuda.tile keeps it on the kernel object (no public accessor).
    pyfunc = getattr(kernel, "_pyfunc", None)
    if pyfunc is None or not callable(pyfunc):
        raise FrontendError("this cuda-tile version does not expose the kernel's Python function")
    return pyfunc


def _is_constant(param: inspect.Parameter, ct: Any) -> bool:
    ann = param.annotation
    if typing.get_origin(ann) is not typing.Annotated:
        return False
    marker = type(typing.get_args(ct.Constant[int])[1])
    return any(isinstance(m, marker) for m in typing.get_args(ann)[1:])


def _constraint(kernel: str, name: str, constant: bool, arg: Any, ct: Any, compilation: Any,
                first_arg: int) -> tuple[Any, list[KernelParam]]:
    """The cuTile constraint of one argument, and its leaf parameters (a tuple's items become
    parameters ``name[i]``, in the order of their entry arguments)."""
    where = f"kernel '{kernel}', argument '{name}'"
    if constant:
        if not isinstance(arg, (bool, int, float)):
            raise FrontendError(f"{where} is a ct.Constant and needs a Python int/float/bool, "
                                f"got {type(arg).__name__}")
        return arg, [KernelParam(name, "constant", None, 0, first_arg, arg)]
    if isinstance(arg, tuple):
        items, leaves = [], []
        for i, item in enumerate(arg):
            constraint, inner = _constraint(kernel, f"{name}[{i}]", False, item, ct, compilation,
                                            first_arg + sum(k.num_args for k in leaves))
            items.append(constraint)
            leaves += inner
        return compilation.TupleConstraint(items), leaves
    if isinstance(arg, list):
        return _list_constraint(where, name, arg, ct, compilation, first_arg)
    constraint, leaf = _leaf_constraint(where, name, arg, ct, compilation, first_arg)
    return constraint, [leaf]


def _leaf_constraint(where: str, name: str, arg: Any, ct: Any, compilation: Any,
                     first_arg: int) -> tuple[Any, KernelParam]:
    if _is_array(arg):
        dtype = _dtype_name(arg, where)
        shape = tuple(int(d) for d in arg.shape)
        strides = _element_strides(arg, where)
        index_dtype = ct.int32 if index_bits(shape, strides) == 32 else ct.int64
        constraint = compilation.ArrayConstraint(
            getattr(ct, _DTYPES[dtype]), len(shape), index_dtype=index_dtype,
            stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False)
        return constraint, KernelParam(name, "array", dtype, len(shape), first_arg, None, shape, strides)
    if isinstance(arg, bool):
        return compilation.ScalarConstraint(ct.bool_), KernelParam(name, "scalar", "bool", 0,
                                                                   first_arg, arg)
    if isinstance(arg, int):
        dtype = "int32" if -2**31 <= arg <= _INT32_MAX else "int64"
        return (compilation.ScalarConstraint(getattr(ct, dtype)),
                KernelParam(name, "scalar", dtype, 0, first_arg, arg))
    if isinstance(arg, float):
        return compilation.ScalarConstraint(ct.float32), KernelParam(name, "scalar", "float32", 0,
                                                                     first_arg, arg)
    if hasattr(arg, "dtype") and getattr(arg, "shape", None) == ():
        dtype = _dtype_name(arg, where)
        return (compilation.ScalarConstraint(getattr(ct, _DTYPES[dtype])),
                KernelParam(name, "scalar", dtype, 0, first_arg, arg))
    if arg is None:
        raise FrontendError(f"{where} is missing (None); pass an array, a scalar, or the constant value")
    raise FrontendError(f"{where}: unsupported argument type {type(arg).__name__} (expected an array "
                        "with shape/dtype/strides, a Python int/float/bool, or a ct.Constant value)")


def index_bits(shape: typing.Sequence[int], strides: typing.Sequence[int]) -> int:
    """The width of an array's index arithmetic in the compiled kernel: 32 when every dimension and
    its largest linear offset fit in int32, else 64 (a kernel is specialised on this)."""
    return _index_bits(tuple(shape), tuple(strides))


@functools.lru_cache(maxsize=4096)
def _index_bits(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    # asked for every array at every launch a memo decides (its specialisation): memoised
    extent = sum((d - 1) * abs(s) for d, s in zip(shape, strides)) if all(shape) else 0
    return 32 if max([extent, *shape, 0]) <= _INT32_MAX else 64


def _list_constraint(where: str, name: str, arg: list[Any], ct: Any, compilation: Any,
                     first_arg: int) -> tuple[Any, list[KernelParam]]:
    """A list of arrays (cuTile's ``ListConstraint``): one dtype and rank for all of them; 64-bit
    indices for all when one needs them."""
    if not arg or not all(_is_array(a) for a in arg):
        raise FrontendError(f"{where}: a list argument must be a non-empty list of arrays (cuTile passes "
                            "lists of arrays only)")
    leaves = [_leaf_constraint(f"{where}[{i}]", f"{name}[{i}]", a, ct, compilation, first_arg)
              for i, a in enumerate(arg)]
    kinds = {(leaf.dtype, leaf.ndim) for _, leaf in leaves}
    if len(kinds) > 1:
        found = ", ".join(f"{leaf.dtype} with {leaf.ndim} dimension(s)" for _, leaf in leaves)
        raise FrontendError(f"{where}: the arrays of a list must share one dtype and rank, got {found}")
    wide = any(c.index_dtype == ct.int64 for c, _ in leaves)
    first = leaves[0][1]
    element = compilation.ArrayConstraint(
        getattr(ct, _DTYPES[first.dtype]), first.ndim, index_dtype=ct.int64 if wide else ct.int32,
        stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False)
    constraint = compilation.ListConstraint(element, alias_groups=(), elements_may_alias=False)
    items = tuple((leaf.shape, leaf.strides) for _, leaf in leaves)
    return constraint, [KernelParam(name, "list", first.dtype, first.ndim, first_arg, None, (len(arg),), (),
                                    items)]


def _is_array(arg: Any) -> bool:
    return hasattr(arg, "shape") and hasattr(arg, "dtype") and getattr(arg, "shape", ()) != () and (
        hasattr(arg, "strides") or hasattr(arg, "stride") or hasattr(arg, "__cuda_array_interface__")
        or hasattr(arg, "__array_interface__"))


def _dtype_name(arg: Any, where: str) -> str:
    try:  # numpy's dtype.__str__ costs microseconds: once per dtype object
        return _DTYPE_NAMES[arg.dtype]
    except (KeyError, TypeError):
        pass
    name = str(arg.dtype).removeprefix("torch.")
    if name not in _DTYPES:
        supported = ", ".join(sorted(k for k in _DTYPES if k not in ("half", "float", "double")))
        raise FrontendError(f"{where}: dtype {name} is not supported by cuTile (supported: {supported})")
    found = _DTYPES[name].rstrip("_") if name != "bool" else "bool"
    try:
        if len(_DTYPE_NAMES) < 256:
            _DTYPE_NAMES[arg.dtype] = found
    except TypeError:  # an unhashable dtype
        pass
    return found


_DTYPE_NAMES: dict[Any, str] = {}  # dtype object -> its cuda.tile name (supported ones only)


def _element_strides(arg: Any, where: str) -> tuple[int, ...]:
    """Strides in elements, from numpy-style byte strides or torch-style element strides."""
    if type(arg) is np.ndarray:  # the common case, asked at every launch a memo decides
        itemsize = arg.itemsize
        strides = arg.strides
        if len(strides) == 1 and itemsize and strides[0] % itemsize == 0:
            return (strides[0] // itemsize,)
        if itemsize and not any(s % itemsize for s in strides):
            return tuple(s // itemsize for s in strides)
    stride = getattr(arg, "stride", None)
    if callable(stride):  # torch.Tensor.stride() counts elements
        return tuple(int(s) for s in stride())
    strides = getattr(arg, "strides", None)
    itemsize = getattr(arg, "itemsize", None) or getattr(getattr(arg, "dtype", None), "itemsize", None)
    if strides is None:
        iface = getattr(arg, "__cuda_array_interface__", None) or getattr(arg, "__array_interface__", None)
        strides = iface.get("strides") if iface else None
        if strides is None:  # C-contiguous
            out, acc = [], 1
            for d in reversed(arg.shape):
                out.append(acc)
                acc *= int(d)
            return tuple(reversed(out))
    if not itemsize:
        raise FrontendError(f"{where}: cannot tell the element size of this array")
    if any(int(s) % itemsize for s in strides):
        raise FrontendError(f"{where}: byte strides {tuple(strides)} are not multiples of the element size")
    return tuple(int(s) // itemsize for s in strides)


# Compiled once per kernel and argument signature: the launcher, the detector and the differential
# runner all ask for the same kernels again and again.
_COMPILED: dict[tuple[Any, ...], tuple[Module, bytes]] = Memo(2048)
# and compiled once per specialisation (``specialization``): a new shape binds new parameters to
# the Tile IR already compiled
_SPECIALIZED: dict[tuple[Any, ...], tuple[Module, bytes]] = Memo(1024)
# the bytecode of each compiled kernel's functions (by identity): a module bound to a launch's
# arguments has the same code, whatever path reaches it (the proof cache keys by it)
_CODES: dict[int, tuple[Any, bytes]] = Memo(1024)
# cuTile's compiler is not documented as thread-safe: one compilation at a time (threads that
# launch the same kernel wait for its one compilation rather than repeat it)
_COMPILING = threading.RLock()


def argument_signature(args: typing.Sequence[Any]) -> tuple[Any, ...]:
    """What a compilation depends on: dtype, shape and strides of arrays, type and value of the rest
    (values matter for ct.Constant parameters)."""
    key = []
    for a in args:
        if isinstance(a, tuple):
            key.append(("tuple", argument_signature(a)))
        elif isinstance(a, list):
            key.append(("list", argument_signature(a)))
        elif hasattr(a, "shape") and hasattr(a, "dtype") and getattr(a, "shape", ()) != ():
            key.append(("array", _dtype_text(a.dtype), tuple(a.shape), tuple(getattr(a, "strides", ()) or ())))
        else:
            key.append((type(a).__name__, a if isinstance(a, (bool, int, float, str)) else id(a)))
    return tuple(key)


def _dtype_text(dtype: Any) -> str:
    """``str(dtype)``, once per dtype object (numpy's costs microseconds)."""
    try:
        return _DTYPE_TEXTS[dtype]
    except (KeyError, TypeError):
        text = str(dtype)
    try:
        if len(_DTYPE_TEXTS) < 256:
            _DTYPE_TEXTS[dtype] = text
    except TypeError:
        pass
    return text


_DTYPE_TEXTS: dict[Any, str] = {}


@functools.lru_cache(maxsize=256)
def _module_code(module: Module) -> bytes:
    return module.to_text().encode()


def rebind(params: typing.Sequence[KernelParam], args: typing.Sequence[Any]) -> tuple[KernelParam, ...] | None:
    """``params`` (one launch's binding of a kernel's parameters) bound to ``args`` instead, without
    cuTile's signature machinery, when ``args`` has the same form: an array of the same dtype and rank
    where each array was, a scalar of the same Python type where each scalar or constant was. None
    otherwise (a tuple or list argument, another form): the caller binds the slow way. The caller
    compares ``specialization`` to know whether the Tile IR is the same (a constant's value, an
    index width or a scalar's int width may differ)."""
    if len(args) != len(params):
        return None
    out = []
    for p, a in zip(params, args):
        if p.kind == "array":
            if isinstance(a, (tuple, list)) or not _is_array(a):
                return None
            try:
                dtype = _dtype_name(a, "")
                strides = _element_strides(a, "")
            except (FrontendError, TypeError, ValueError):
                return None
            shape = tuple(int(d) for d in a.shape)
            if dtype != p.dtype or len(shape) != p.ndim or len(strides) != p.ndim:
                return None
            out.append(KernelParam(p.name, "array", dtype, p.ndim, p.first_arg, None, shape, strides))
        elif p.kind in ("constant", "scalar") and type(a) is type(p.value) and isinstance(a, (bool, int, float)):
            dtype = p.dtype
            if p.kind == "scalar" and type(a) is int:
                dtype = "int32" if -2**31 <= a <= _INT32_MAX else "int64"
            out.append(KernelParam(p.name, p.kind, dtype, 0, p.first_arg, a))
        else:
            return None
    return tuple(out)


def _bind(kernel: Any, args: typing.Sequence[Any], compiled: bool = False
          ) -> tuple[str, list[KernelParam], tuple[Any, ...] | None]:
    """The kernel's name and its parameters bound to ``args``: from a binding of the same form seen
    before (``rebind``) when there is one (with ``compiled``, only when its specialisation is
    compiled already: else cuTile's constraints are needed to compile it), otherwise by cuTile's
    signature machinery (``_parameters``), whose binding is then remembered. And the binding's
    ``specialization`` where it was computed on the way (None otherwise)."""
    if not any(isinstance(a, (tuple, list)) for a in args):
        known = _BINDINGS.get(kernel, ())
        for i, (name, params) in enumerate(known):
            found = rebind(params, args)
            if found is None:
                continue
            spec = specialization(found) if compiled else None
            if not compiled or (kernel, spec, False) in _SPECIALIZED:
                if i:  # the form a suite launches now is tried first next time
                    known.insert(0, known.pop(i))
                return name, list(found), spec
    name, _, kparams, _ = _parameters(kernel, tuple(args))
    if not any(p.kind == "list" for p in kparams):
        known = _BINDINGS.setdefault(kernel, [])
        if all(_form(k) != _form(kparams) for _, k in known):
            if len(known) >= _BINDINGS_PER_KERNEL:
                known.pop(0)
            known.append((name, tuple(kparams)))
    return name, kparams, None


def _form(params: typing.Sequence[KernelParam]) -> list[tuple[str, Any]]:
    """What ``rebind`` needs to match: each parameter's kind, and an array's dtype or a scalar's type."""
    return [(p.kind, p.dtype if p.kind == "array" else type(p.value)) for p in params]


# per kernel, one binding of each form seen (its kinds and dtypes; the latest few), for ``rebind``
_BINDINGS: dict[Any, list[tuple[str, tuple[KernelParam, ...]]]] = Memo(1024)
_BINDINGS_PER_KERNEL = 8


def compilation_key(kernel: Any, args: typing.Sequence[Any]) -> tuple[str | None, str, tuple[KernelParam, ...]]:
    """What names a kernel's Tile IR for these arguments without compiling it: a digest of its
    sources and the global values it reads (``source_digest``) and of the parameters'
    specialisation (None when the sources cannot be pinned down), with the kernel's name and the
    parameters bound to these arguments."""
    from tilecheck.ir.source_digest import kernel_digest
    from tilecheck.version import __version__

    ct, _ = _import_cutile()
    name, kparams, _ = _bind(kernel, args)
    pyfunc = _python_function(kernel, ct)
    digest = _DIGESTS.get(id(kernel))
    if digest is None or digest[0] is not kernel:
        import importlib.metadata

        versions = f"cuda-tile {importlib.metadata.version('cuda-tile')}|tilecheck {__version__}|{BYTECODE_VERSION}"
        digest = _DIGESTS[id(kernel)] = (kernel, kernel_digest(pyfunc, getattr(kernel, "_compiler_options", None),
                                                               versions))
    if digest[1] is None:
        return None, name, tuple(kparams)
    spec = repr((specialization(kparams), any(isinstance(a, tuple) for a in args)))
    return hashlib.sha256(f"{digest[1]}|{spec}".encode()).hexdigest(), name, tuple(kparams)


_DIGESTS: dict[int, tuple[Any, str | None]] = {}  # per kernel object: its sources' digest


def module_for(kernel: Any, args: typing.Sequence[Any]) -> tuple[Module, bytes]:
    """The kernel's Tile IR for these arguments (a ``Module`` is returned as it is) and its code
    (bytecode, or the module's text): compiled once per kernel and argument signature."""
    if isinstance(kernel, Module):
        base = _CODES.get(id(kernel.functions))  # a cuTile kernel's IR bound to a launch: its bytecode
        if base is not None and base[0] is kernel.functions:
            return kernel, base[1]
        return kernel, _module_code(kernel)
    key = (kernel, argument_signature(args))
    cached = _COMPILED.get(key)
    if cached is None:
        with _COMPILING:
            cached = _COMPILED.get(key)
            if cached is None:
                name, kparams, known = _bind(kernel, args, compiled=True)
                spec = (kernel, known if known is not None else specialization(kparams),
                        any(isinstance(a, tuple) for a in args))
                base = _SPECIALIZED.get(spec)
                if base is None:
                    compiled = compile_kernel(kernel, tuple(args))
                    base = _SPECIALIZED[spec] = (compiled.module, compiled.bytecode)
                    _CODES[id(compiled.module.functions)] = (compiled.module.functions, compiled.bytecode)
                module, code = base
                # the same Tile IR, with this launch's shapes, strides and scalar values
                cached = _COMPILED[key] = (Module(module.functions, name, module.globals, "cutile-python",
                                                  tuple(kparams)), code)
    return cached
