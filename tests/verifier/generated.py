"""Helpers for tests that generate kernels and ask the model about them directly: a cuTile kernel
from source (cuTile reads a kernel's source from its file), and a launch's shapes and strides as the
concrete values enumeration evaluates terms with."""
import hashlib
import importlib.util
import sys

from tilecheck.verifier.solver import smt


def load_kernel(source: str, folder, name: str = "k"):
    """The kernel ``name`` of ``source``, written to a file in ``folder`` named by its digest and
    imported (the module is not left in ``sys.modules``)."""
    path = folder / f"k_{hashlib.sha1(source.encode()).hexdigest()[:12]}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(path.stem, None)
    return getattr(module, name)


def case_values(fp, arrays: dict) -> list:
    """The shape and stride symbols of ``fp``'s arrays at the given numpy ``arrays`` (by parameter
    name; strides in elements), as (symbol, value) pairs."""
    return [(sym, smt.IntVal(v)) for info in fp.arrays.values()
            for sym, v in zip((*info.shape, *info.strides),
                              (*arrays[info.name].shape,
                               *(n // arrays[info.name].itemsize for n in arrays[info.name].strides)))
            if smt.is_const(sym)]
