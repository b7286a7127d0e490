"""A contract over the shapes read at a launch: its assume facts' trees evaluated on the launch's
symbols (``evaluate``, what the proof cache's entries and the searches read), and the whole test of
a launch (index widths, rules, facts) as one generated Python function (``admission``), what the
launcher and the proof cache ask at every launch a contract decides."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tilecheck.memo import Memo


_BINARY = {"sub": lambda a, b: a - b, "div": lambda a, b: a // b if b else 0,
           "mod": lambda a, b: a % b if b else a, "le": lambda a, b: a <= b, "lt": lambda a, b: a < b,
           "ge": lambda a, b: a >= b, "gt": lambda a, b: a > b, "implies": lambda a, b: (not a) or b}


def admission(contract: Any) -> Callable[[Mapping[str, int], Mapping[str, int]], bool]:
    """``contract.admits_walked`` as one generated Python function of the launch (its symbols' values
    and index widths): the launcher and the proof cache ask it at every launch a contract decides,
    and walking its rules and fact trees cost 12 us of a 55 us launch check. Each symbol is read once;
    a symbol the launch lacks, or arithmetic that fails (a ``%`` by zero, an ill-typed tree), is not
    admitted (the walk gives None, or raises, there). A tree of a kind it does not know is walked."""
    try:
        source, names = _admission_source(contract)
    except KeyError:  # a fact of a kind without code: walk every launch
        return lambda env, widths: contract.admits_walked(env, widths)
    made = _ADMISSIONS.get(source)  # one compile per text: a contract read again from the cache is another object
    if made is not None:
        return made
    scope = {"_true": lambda v: v is True, "_sum": sum, "_mul": _product, "_eq": lambda xs: len(set(xs)) == 1,
             "_distinct": lambda xs: len(set(xs)) == len(xs), "_ite": lambda a, b, c: b if a else c,
             "_div": _BINARY["div"], "_mod": _BINARY["mod"], "_implies": _BINARY["implies"]}
    exec(compile(source, f"<contract over {len(names)} symbols>", "exec"), scope)  # our own text, below
    _ADMISSIONS[source] = scope["admits"]
    return scope["admits"]


_ADMISSIONS: dict[str, Callable[[Mapping[str, int], Mapping[str, int]], bool]] = Memo(4096)


def _admission_source(contract: Any) -> tuple[str, list[str]]:
    names = sorted(set().union(*(rule.names() for rule in contract.rules), *(_tree_names(f) for f in contract.facts)))
    slot = {name: f"s{i}" for i, name in enumerate(names)}
    tests = [f"widths.get({name!r}) == 32" for name in contract.index32]
    tests += [_rule_code(rule, slot) for rule in contract.rules]
    tests += [f"_true({_tree_code(fact, slot)})" for fact in contract.facts]
    lines = ["def admits(env, widths):", "    try:"]
    if names:
        lines.append(f"        {', '.join(slot[n] for n in names)}, = {', '.join(f'env[{n!r}]' for n in names)},")
    lines.append(f"        return bool({' and '.join(f'({t})' for t in tests) or 'True'})")
    lines.append("    except (KeyError, TypeError, ZeroDivisionError):")
    lines.append("        return False")
    return "\n".join(lines) + "\n", names


def _product(values: Sequence[Any]) -> Any:
    out = 1
    for v in values:
        out *= v
    return out


def _tree_names(tree: Any) -> set[str]:
    if tree[0] == "sym":
        return {tree[1]}
    if tree[0] == "lit":
        return set()
    return set().union(*(_tree_names(a) for a in tree[1:]))


def _term_code(term: Any, slot: Mapping[str, str]) -> str:
    base = repr(term.value) if term.name is None else slot[term.name]
    if term.tile > 1:
        base = f"(-(-{base} // {term.tile}))" if term.ceil else f"({base} // {term.tile})"
    return f"({base} * {_term_code(term.times, slot)})" if term.times is not None else base


def _rule_code(rule: Any, slot: Mapping[str, str]) -> str:
    a, b = _term_code(rule.left, slot), _term_code(rule.right, slot)
    return f"{a} == {b}" if rule.relation == "==" else f"{a} <= {b}" if rule.relation == "<=" else f"{a} % {b} == 0"


_INFIX = {"sub": "-", "le": "<=", "lt": "<", "ge": ">=", "gt": ">"}
_CALLS = {"add": "_sum", "mul": "_mul", "distinct": "_distinct", "and": "all", "or": "any"}


def _tree_code(tree: Any, slot: Mapping[str, str]) -> str:
    """A fact tree as a Python expression with ``evaluate``'s value (KeyError for a kind it lacks)."""
    kind = tree[0]
    if kind == "lit":
        return repr(tree[1])
    if kind == "sym":
        return slot[tree[1]]
    args = [_tree_code(a, slot) for a in tree[1:]]
    if kind in _CALLS:
        return f"{_CALLS[kind]}(({', '.join(args)},))"
    if kind == "eq":
        return f"({args[0]} == {args[1]})" if len(args) == 2 else f"_eq(({', '.join(args)},))"
    if kind == "uminus":
        return f"(-{args[0]})"
    if kind == "not":
        return f"(not {args[0]})"
    if kind == "xor":
        return f"({args[0]} != {args[1]})"
    if kind == "ite":
        return f"_ite({args[0]}, {args[1]}, {args[2]})"
    if kind in ("div", "mod", "implies"):
        return f"_{kind}({args[0]}, {args[1]})"
    return f"({args[0]} {_INFIX[kind]} {args[1]})"


def evaluate(tree: Any, env: Mapping[str, int]) -> Any:
    """A fact tree's value at a launch (None where it names a symbol the launch lacks). Integer
    division and modulo as SMT-LIB's (Euclidean) for the non-negative values shapes take."""
    kind = tree[0]
    if kind == "lit":
        return tree[1]
    if kind == "sym":
        return env.get(tree[1])
    args = [evaluate(a, env) for a in tree[1:]]
    if any(a is None for a in args):
        return None
    if kind == "add":
        return sum(args)
    if kind == "mul":
        out = 1
        for a in args:
            out *= a
        return out
    if kind == "uminus":
        return -args[0]
    if kind in ("eq", "distinct"):
        return (len(set(args)) == 1) if kind == "eq" else len(set(args)) == len(args)
    if kind in ("and", "or", "not", "xor"):
        return all(args) if kind == "and" else any(args) if kind == "or" else (
            not args[0] if kind == "not" else args[0] != args[1])
    if kind == "ite":
        return args[1] if args[0] else args[2]
    return _BINARY[kind](args[0], args[1])
