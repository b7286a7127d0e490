"""The Tile IR model: types, ops, modules; the text and bytecode readers; the cuTile frontend."""
from tilecheck.ir.core import Block, Function, Module, Op, Region, Value
from tilecheck.ir.errors import BytecodeError, FrontendError, TileIRError, TileIRParseError
from tilecheck.ir.loc import Loc
from tilecheck.ir.opdefs import OPS, Effect, OpDef

__all__ = ["OPS", "Block", "BytecodeError", "Effect", "FrontendError", "Function", "Loc", "Module", "Op",
           "OpDef", "Region", "TileIRError", "TileIRParseError", "Value", "from_cutile", "parse", "read_bytecode"]


def read_bytecode(data: bytes) -> Module:
    """Decode Tile IR bytecode (what cuTile's ``export_kernel`` writes) into a Module."""
    from tilecheck.ir.bytecode.reader import read_bytecode as _read

    try:
        return _read(data)
    except RecursionError:  # a type or region nested past Python's stack (or a cycle of type ids)
        raise TileIRError("Tile IR bytecode nested too deeply to read (or a type that contains itself)") from None


def from_cutile(kernel: object, args: "tuple[object, ...]") -> Module:
    """Compile a ``@ct.kernel`` for ``args`` (the tuple passed to ``ct.launch``) and read its Tile IR."""
    from tilecheck.ir.cutile import from_cutile as _from_cutile

    return _from_cutile(kernel, args)


def parse(text: str, filename: str = "<text>") -> Module:
    """Parse the MLIR text form of Tile IR (``tileirdisasm`` output, ``.tileir`` files)."""
    from tilecheck.ir.text.parser import parse as _parse

    try:
        return _parse(text, filename)
    except RecursionError:  # e.g. tile<tile<tile<...>>> thousands deep
        raise TileIRError(f"{filename}: Tile IR text nested too deeply to parse") from None
