"""The Triton frontend: ``@triton.jit`` kernels -> TTIR -> the Tile IR model (see frontend.py)."""
from tilecheck.ir.triton.frontend import Bound, bind, is_triton_kernel, jit_function

__all__ = ["Bound", "bind", "is_triton_kernel", "jit_function", "resolve"]


def resolve(kernel: object, args: object) -> tuple[object, object]:
    """``(kernel, args)`` as the rest of tilecheck takes them: a Triton kernel becomes its Tile IR
    module bound to this launch, with the arguments in the module's parameter order; anything else
    is returned as it is."""
    if not is_triton_kernel(kernel):
        return kernel, args
    bound = bind(kernel, args)
    return bound.module, bound.args
