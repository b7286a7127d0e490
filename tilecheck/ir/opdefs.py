"""The table of Tile IR operations: one ``OpDef`` per op name, read by every pass.

Each entry records what the bytecode reader needs (opcode, how results, flags, attributes and
operands are laid out), what the text printer/parser need (an assembly format, see
``text/format.py``), and what the analyses need (memory effect, terminator). Passes test these
flags, never op names in ``if`` chains. Layouts follow the Tile IR spec (Binary Format,
Operations) for bytecode versions 13.1-13.4.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# Enumerations, in bytecode order (the byte value is the index).
ENUMS: dict[str, tuple[str, ...]] = {
    "atomic_mode": ("and", "or", "xor", "add", "addf", "max", "min", "umax", "umin", "xchg"),
    "ordering": ("unordered", "ordered"),
    "predicate": ("equal", "not_equal", "less_than", "less_than_or_equal", "greater_than",
                  "greater_than_or_equal"),
    "overflow": ("none", "nsw", "nuw", "nw"),
    "memory_order": ("weak", "relaxed", "acquire", "release", "acq_rel"),
    "memory_scope": ("tl_blk", "device", "sys"),
    "rounding": ("nearest_even", "zero", "negative_inf", "positive_inf", "approx", "full",
                 "nearest_int_to_zero", "nearest_away"),
    "signedness": ("unsigned", "signed"),
    "visibility": ("public", "private"),
    "multimem_reduction": ("add", "min", "max", "and", "or", "xor", "umin", "umax"),
}


class Effect(Enum):
    """What an op does to global memory."""

    NONE = "none"
    READ = "read"
    WRITE = "write"
    ATOMIC = "atomic"  # read-modify-write, atomic per element


@dataclass(frozen=True)
class OperandDef:
    name: str
    kind: str  # "single" | "optional" | "sized" (count-prefixed) | "rest" (the rest of a counted list)


@dataclass(frozen=True)
class AttrDef:
    name: str
    kind: str  # an ENUMS key, or int | bool | str | type | tagged | array | dense | i32s | bools | hints
    since: int = 0  # first bytecode version (e.g. 130300) that encodes it
    default: object = None  # value implied when absent (older bytecode, or omitted in text)


@dataclass(frozen=True)
class OpDef:
    name: str
    opcode: int
    results: str  # "0".."3": that many fixed result types; "v": a sized list of result types
    operands: tuple[OperandDef, ...]
    attrs: tuple[AttrDef, ...]
    flags: tuple[str, ...]  # bit i of the flags varint: optional operand / optional attr / bool attr
    flags_since: int
    regions: int
    fmt: str
    effect: Effect = Effect.NONE
    terminator: bool = False
    since: int = 130100

    @property
    def counted(self) -> bool:
        """Operands are prefixed by their total count (one variadic group takes the rest)."""
        return any(o.kind == "rest" for o in self.operands)

    def attr(self, name: str) -> AttrDef | None:
        for a in self.attrs:
            if a.name == name:
                return a
        return None


def _operands(spec: str) -> tuple[OperandDef, ...]:
    kinds = {"?": "optional", "*": "sized", "+": "rest"}
    out = []
    for word in spec.split():
        kind = kinds.get(word[-1], "single")
        out.append(OperandDef(word.rstrip("?*+"), kind))
    return tuple(out)


def _attrs(spec: str) -> tuple[AttrDef, ...]:
    out = []
    for word in spec.split():
        name, kind = word.split(":")
        explicit_default = None
        if "=" in kind:
            kind, explicit_default = kind.split("=")
        since = 0
        if "@" in kind:
            kind, version = kind.split("@")
            since = int(version)
        default = explicit_default or {"rounding": "nearest_even", "overflow": "none", "bool": False}.get(kind)
        out.append(AttrDef(name, kind, since, default))
    return tuple(out)


OPS: dict[str, OpDef] = {}
OPCODES: dict[int, OpDef] = {}


def _op(name: str, opcode: int, fmt: str, *, results: str = "1", operands: str = "", attrs: str = "",
        flags: str = "", flags_since: int = 0, regions: int = 0, effect: Effect = Effect.NONE,
        terminator: bool = False, since: int = 130100) -> None:
    opdef = OpDef(name, opcode, results, _operands(operands), _attrs(attrs), tuple(flags.split()),
                  flags_since, regions, fmt, effect, terminator, since)
    assert name not in OPS and opcode not in OPCODES, name
    OPS[name] = opdef
    OPCODES[opcode] = opdef


# ---- families registered in loops (same layout, different opcode) ----------------------------
_UNARY = "$source : type(result)"
_CAST = "$source : type(source) -> type(result)"
_BIN = "$lhs , $rhs : type(result)"
_BIN_SIGNED = "$lhs , $rhs $signedness : type(result)"
_BIN_OVERFLOW = "$lhs , $rhs ?{ overflow < $overflow > } : type(result)"
_BIN_FLOAT = "$lhs , $rhs ?{ rounding < $rounding_mode > } ?{ !flush_to_zero } : type(result)"

for _name, _code in (("absf", 0), ("absi", 1), ("ceil", 13), ("cos", 18), ("cosh", 19), ("floor", 39),
                     ("log", 63), ("log2", 64), ("negf", 79), ("sin", 98), ("sinh", 99), ("tan", 105)):
    _op(_name, _code, _UNARY, operands="source")
for _name, _code in (("broadcast", 11), ("reshape", 91), ("bitcast", 9), ("int_to_ptr", 51),
                     ("ptr_to_int", 86), ("ptr_to_ptr", 87)):
    _op(_name, _code, _CAST, operands="source")
for _name, _code in (("andi", 4), ("ori", 82), ("xori", 108), ("remf", 89), ("mulhii", 77),
                     ("pow", 84), ("atan2", 110)):
    _op(_name, _code, _BIN, operands="lhs rhs", since=130200 if _name == "atan2" else 130100)
_op("fpowi", 121, _BIN, operands="lhs rhs", since=130400)
for _name, _code in (("remi", 90), ("maxi", 70), ("mini", 72), ("shri", 97)):
    _op(_name, _code, _BIN_SIGNED, operands="lhs rhs", attrs="signedness:signedness")
for _name, _code in (("addi", 3), ("subi", 104), ("muli", 78), ("shli", 96)):
    _op(_name, _code, _BIN_OVERFLOW, operands="lhs rhs", attrs="overflow:overflow")
for _name, _code in (("addf", 2), ("subf", 103), ("mulf", 76), ("divf", 20)):
    _op(_name, _code, _BIN_FLOAT, operands="lhs rhs", attrs="flush_to_zero:bool rounding_mode:rounding",
        flags="flush_to_zero")
for _name, _code in (("maxf", 69), ("minf", 71)):
    _op(_name, _code, "$lhs , $rhs ?{ !propagate_nan } ?{ !flush_to_zero } : type(result)",
        operands="lhs rhs", attrs="propagate_nan:bool flush_to_zero:bool",
        flags="propagate_nan flush_to_zero")

# ---- arithmetic with their own layouts -------------------------------------------------------
_op("divi", 21, "$lhs , $rhs $signedness ?{ rounding < $rounding > } : type(result)",
    operands="lhs rhs", attrs="signedness:signedness rounding:rounding=zero")
_op("negi", 80, "$source ?{ overflow < $overflow > } : type(result)", operands="source",
    attrs="overflow:overflow@130200")
_op("exp", 23, "$source ?{ rounding < $rounding_mode > } : type(result)", operands="source",
    attrs="rounding_mode:rounding@130300=full")
_op("tanh", 106, "$source ?{ rounding < $rounding_mode > } : type(result)", operands="source",
    attrs="rounding_mode:rounding@130200=full")
_op("exp2", 24, "$source ?{ !flush_to_zero } : type(result)", operands="source",
    attrs="flush_to_zero:bool", flags="flush_to_zero")
_op("rsqrt", 93, "$source ?{ !flush_to_zero } : type(result)", operands="source",
    attrs="flush_to_zero:bool", flags="flush_to_zero")
_op("sqrt", 100, "$source ?{ rounding < $rounding_mode > } ?{ !flush_to_zero } : type(result)",
    operands="source", attrs="flush_to_zero:bool rounding_mode:rounding", flags="flush_to_zero")
_op("fma", 40, "$lhs , $rhs , $acc ?{ rounding < $rounding_mode > } ?{ !flush_to_zero } : type(result)",
    operands="lhs rhs acc", attrs="flush_to_zero:bool rounding_mode:rounding", flags="flush_to_zero")
_op("cmpi", 15, "$comparison_predicate $lhs , $rhs , $signedness : type(lhs) -> type(result)",
    operands="lhs rhs", attrs="comparison_predicate:predicate signedness:signedness")
_op("cmpf", 14, "$comparison_predicate $comparison_ordering $lhs , $rhs : type(lhs) -> type(result)",
    operands="lhs rhs", attrs="comparison_predicate:predicate comparison_ordering:ordering")
_op("select", 95, "$cond , $val_if_true , $val_if_false : type(cond) , type(result)",
    operands="cond val_if_true val_if_false")
_op("exti", 37, "$source $signedness : type(source) -> type(result)", operands="source",
    attrs="signedness:signedness")
_op("trunci", 107, "$source ?{ overflow < $overflow > } : type(source) -> type(result)",
    operands="source", attrs="overflow:overflow")
_op("ftof", 42, "$source ?{ rounding < $rounding_mode > } : type(source) -> type(result)",
    operands="source", attrs="rounding_mode:rounding")
_op("itof", 59, "$source $signedness ?{ rounding < $rounding_mode > } : type(source) -> type(result)",
    operands="source", attrs="signedness:signedness rounding_mode:rounding")
_op("ftoi", 43, "$source $signedness ?{ rounding < $rounding_mode > } ?{ !saturating } : "
    "type(source) -> type(result)", operands="source",
    attrs="saturating:bool signedness:signedness rounding_mode:rounding", flags="saturating",
    flags_since=130400)
_op("mmaf", 73, "$lhs , $rhs , $acc ?{ !fast_acc } : type(lhs) , type(rhs) , type(result)",
    operands="lhs rhs acc", attrs="fast_acc:bool", flags="fast_acc", flags_since=130300)
_op("mmai", 74, "$lhs , $rhs , $acc $signedness_lhs $signedness_rhs : type(lhs) , type(rhs) , type(result)",
    operands="lhs rhs acc", attrs="signedness_lhs:signedness signedness_rhs:signedness")
_op("mmaf_scaled", 114, "$lhs , $rhs , $acc , $lhs_scale , $rhs_scale : type(lhs) , type(rhs) , "
    "type(lhs_scale) , type(rhs_scale) , type(result)", operands="lhs rhs acc lhs_scale rhs_scale",
    since=130300)

# ---- tile construction and shape ops ---------------------------------------------------------
_op("constant", 16, "$value : type(result)", attrs="value:dense")
_op("iota", 58, ": type(result)")
_op("cat", 12, "$lhs , $rhs dim = $dim : type(lhs) , type(rhs) -> type(result)", operands="lhs rhs",
    attrs="dim:int")
_op("permute", 83, "$source $permutation : type(source) -> type(result)", operands="source",
    attrs="permutation:i32s")
_op("extract", 38, "$source [ $indices ] : type(source) -> type(result)", results="v",
    operands="source indices+")
_op("insert", 118, "$source into $destination [ $indices ] : type(source) -> type(result)",
    results="v", operands="source destination indices+", since=130400)
_op("pack", 111, _CAST, operands="source", since=130300)
_op("unpack", 112, _CAST, operands="source", since=130300)
_op("assume", 6, "$predicate , $value : type(result)", operands="value", attrs="predicate:tagged")
_op("assert", 5, "$condition , $message : type(condition)", results="0", operands="condition",
    attrs="message:str")
_op("print_tko", 85, "$str ?{ , $args } ?{ token = $token } : types(args) -> type(results)",
    results="v", operands="args* token?", attrs="str:str", flags="token", flags_since=130200)

# ---- grid, tokens, views ---------------------------------------------------------------------
_op("get_tile_block_id", 48, ": type(results)", results="3")
_op("get_num_tile_blocks", 46, ": type(results)", results="3")
_op("make_token", 68, ": type(result)")
_op("join_tokens", 60, "$tokens : type(result)", results="v", operands="tokens+")
_op("make_tensor_view", 67, "$base , shape = [ $dynamicShape ] , strides = [ $dynamicStrides ] : "
    "type(dynamicShape) -> type(result)", results="v", operands="base dynamicShape* dynamicStrides*")
_op("make_partition_view", 66, "$tensor_view : type(result)", operands="tensor_view")
_op("make_strided_view", 116, "$tensor_view : type(result)", operands="tensor_view", since=130300)
_op("make_gather_scatter_view", 115, "$tensor_view : type(result)", operands="tensor_view",
    since=130300)
_op("get_index_space_shape", 45, "$src : type(src) -> type(results)", results="v", operands="src")
_op("get_tensor_shape", 47, "$src : type(src) -> type(results)", results="v", operands="src")
_op("offset", 81, "$ptr , $offset : type(ptr) , type(offset) -> type(result)", operands="ptr offset")
_op("get_global", 44, "$name : type(result)", attrs="name:str")
_op("alloca", 113, "$num_elem , $alignment ?{ !global_ } : type(result)",
    attrs="global_:bool num_elem:int alignment:int", flags="global_", since=130300)

# ---- memory ----------------------------------------------------------------------------------
_MEM = "$memory_ordering_semantics ?{ $memory_scope } "
_HINTS = "?{ optimization_hints = $optimization_hints } "
_op("load_view_tko", 62, _MEM + "$view [ $index ] ?{ token = $token } " + _HINTS
    + "?{ inbounds = $inbounds } : type(view) , type(index) -> type(results)",
    results="v", operands="view index* token?", effect=Effect.READ,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope "
          "optimization_hints:hints inbounds:bools@130400",
    flags="memory_scope optimization_hints token")
_op("store_view_tko", 102, _MEM + "$tile , $view [ $index ] ?{ token = $token } " + _HINTS
    + "?{ inbounds = $inbounds } : type(tile) , type(view) , type(index) -> type(results)",
    results="v", operands="tile view index* token?", effect=Effect.WRITE,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope "
          "optimization_hints:hints inbounds:bools@130400",
    flags="memory_scope optimization_hints token")
_op("load_ptr_tko", 61, _MEM + "$source ?{ , $mask } ?{ , $paddingValue } ?{ token = $token } " + _HINTS
    + ": type(source) , type(mask) , type(paddingValue) -> type(results)",
    results="2", operands="source mask? paddingValue? token?", effect=Effect.READ,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope optimization_hints:hints",
    flags="memory_scope optimization_hints mask paddingValue token")
_op("store_ptr_tko", 101, _MEM + "$destination , $value ?{ , $mask } ?{ token = $token } " + _HINTS
    + ": type(destination) , type(value) , type(mask) -> type(results)",
    operands="destination value mask? token?", effect=Effect.WRITE,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope optimization_hints:hints",
    flags="memory_scope optimization_hints mask token")
_op("atomic_rmw_tko", 8, "$memory_ordering_semantics $memory_scope $pointers , $mode , $arg "
    "?{ , $mask } ?{ token = $token } : type(pointers) , type(arg) , type(mask) -> type(results)",
    results="2", operands="pointers arg mask? token?", effect=Effect.ATOMIC,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope mode:atomic_mode",
    flags="mask token")
_op("atomic_cas_tko", 7, "$memory_ordering_semantics $memory_scope $pointers , $cmp , $val "
    "?{ , $mask } ?{ token = $token } : type(pointers) , type(cmp) , type(mask) -> type(results)",
    results="2", operands="pointers cmp val mask? token?", effect=Effect.ATOMIC,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope", flags="mask token")
_op("atomic_red_view_tko", 117, "$memory_ordering_semantics $memory_scope $mode , $value , $view "
    "[ $index ] ?{ token = $token } : type(value) , type(view) , type(index) -> type(results)",
    results="v", operands="view index* value token?", effect=Effect.ATOMIC, since=130300,
    attrs="memory_ordering_semantics:memory_order memory_scope:memory_scope mode:atomic_mode",
    flags="token")
_op("memory_fence_alias_tko", 122, "$token : type(result)", operands="token", since=130400)
_op("gdc_launch_dependents_tko", 119, "?{ token = $token } : type(result)", operands="token?",
    flags="token", since=130400)
_op("gdc_wait_tko", 120, "?{ token = $token } : type(result)", operands="token?", flags="token",
    since=130400)

# ---- control flow ----------------------------------------------------------------------------
_TERM = "$operands : types(operands)"
for _name, _code in (("yield", 109), ("continue", 17), ("break", 10), ("return", 92)):
    _op(_name, _code, _TERM, results="v", operands="operands+", terminator=True)
_op("for", 41, "@for", results="v", operands="lowerBound upperBound step initValues+", regions=1,
    attrs="unsignedCmp:bool", flags="unsignedCmp", flags_since=130200)
_op("loop", 65, "@loop", results="v", operands="initValues+", regions=1)
_op("if", 50, "@if", results="v", operands="condition", regions=2)
_op("reduce", 88, "@reduce", results="v", operands="operands+", regions=1,
    attrs="dim:int identities:array")
_op("scan", 94, "@scan", results="v", operands="operands+", regions=1,
    attrs="dim:int reverse:bool identities:array")
