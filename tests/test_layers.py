"""The package keeps the layout of DESIGN.md §2: one direction of dependency, bottom up, and no two
modules importing each other.

The import graph is read from the source with ``ast``: every ``import`` and ``from ... import`` of a
``tilecheck`` module, at module level or inside a function, and those under ``if TYPE_CHECKING:``
too. A type-only import runs no code, but it still says that a module is written in terms of
another one: a lower layer that names a higher layer's type knows about that layer. So it counts
like any other import, and an exception is listed below with its reason.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tilecheck"

# Each module's layer: the longest prefix of its name listed here. An import may point to the same
# layer or a lower one, never to a higher one. A new top-level module must be placed here: the
# test fails for a module with no layer.
LAYERS = {
    # 0, the ground floor: the IR, plain values and small helpers every layer may use
    "tilecheck.ir": 0,
    "tilecheck.report": 0,  # findings, witnesses, contracts, verdicts: plain values, no execution
    "tilecheck.errors": 0,
    "tilecheck.checks": 0,  # public functions' arguments checked at the door
    "tilecheck.registry": 0,  # the op-rule registry both semantics (interp, verifier) fill
    "tilecheck.grid": 0,
    "tilecheck.memo": 0,  # process-wide memos with a size bound
    "tilecheck.arrays": 0,  # array layouts of numpy/torch/device arguments
    "tilecheck.requirements": 0,  # precondition values and @tilecheck.requires
    "tilecheck.cases": 0,  # @tilecheck.case and its values
    "tilecheck.config": 0,  # [tool.tilecheck] as values (the launcher reads its assume table)
    "tilecheck.version": 0,
    # 1: the numpy interpreter and the exact detector
    "tilecheck.interp": 1,
    # 2: the Z3 verifier (may run blocks on the interpreter to confirm a witness); its rooms follow
    # the steps of a proof (docs/architecture.md), each may use the rooms below it
    "tilecheck.verifier.solver": 2.1,  # Z3 behind one boundary, work limits, bits, intervals
    "tilecheck.verifier.model": 2.2,  # symbolic execution into access footprints
    "tilecheck.verifier.contracts": 2.3,  # levels, preconditions, contracts over grids and shapes
    "tilecheck.verifier.concrete": 2.4,  # the given case: pinned contents, enumeration
    "tilecheck.verifier.obligations": 2.5,  # the questions, their witnesses and confirmation
    "tilecheck.verifier.data": 2.6,  # the launch's data step
    "tilecheck.verifier.reuse": 2.7,  # the proof cache
    "tilecheck.verifier": 2.8,  # verify: the pipeline of those steps
    # 3: launcher, DeviceOp, backends, differential runner, replay
    "tilecheck.runtime": 3,
    # 4: what the front ends share: collecting kernels, verification jobs and their reports,
    # corpus evaluation, the user-facing assertions, the CPU stand-in for a GPU, the CLI's streams
    "tilecheck.assertions": 4,
    "tilecheck.collect": 4,
    "tilecheck.console": 4,
    "tilecheck.cpu_device": 4,
    "tilecheck.evaluation": 4,
    "tilecheck.formats": 4,
    "tilecheck.jobs": 4,
    # 5: the front ends: the public API's re-exports, the command line, the pytest plugin
    "tilecheck": 5,
    "tilecheck.__main__": 5,
    "tilecheck.cli": 5,
    "tilecheck.cli_run": 5,
    "tilecheck.pytest_plugin": 5,
}

# Imports from a lower layer to a higher one that are tolerated, each with its reason:
# (importer, imported) -> why.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

# Strongly connected components (modules that import each other, directly or round a cycle) that
# are tolerated, each with its reason. A component that grows or changes fails the test.
ALLOWED_CYCLES: dict[frozenset[str], str] = {
    frozenset({"tilecheck.ir.core", "tilecheck.ir.text.printer"}):
        "Module.to_text() and Module.__str__ call the printer, which walks core's classes. Breaking "
        "it takes printing off Module (ir.print_module(module) at every caller): an API change, not "
        "made here.",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The tilecheck modules ``name`` imports: for ``from a.b import c``, ``a.b.c`` when that is a
    module, else ``a.b`` (or its closest enclosing module)."""

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package, ``level - 1`` packages up
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                       for alias in node.names]
        for target in targets:
            if target == "tilecheck" or target.startswith("tilecheck."):
                found = resolve(target)
                if found is not None and found != name:
                    out.add(found)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def layer(name: str) -> int | None:
    prefix = name
    while prefix:
        if prefix in LAYERS:
            return LAYERS[prefix]
        prefix = prefix.rpartition(".")[0]
    return None


def components(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's strongly connected components of more than one module (written without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    out.append(frozenset(members))
    return out


def test_the_graph_sees_every_kind_of_import():
    edges = graph()
    assert "tilecheck.verifier.contracts.preconditions" in edges["tilecheck.verifier"]  # module level
    assert "tilecheck.runtime.cuda.differential" in edges["tilecheck.runtime.differential"]  # in a function
    assert "tilecheck.report" in edges["tilecheck.runtime.heatmap"]  # under TYPE_CHECKING
    assert "tilecheck.interp.witness" in edges["tilecheck.interp.detect"]  # from a package import a module
    assert "tilecheck.verifier.model.footprints" in edges["tilecheck.verifier.obligations.in_block"]


def test_only_the_solver_package_imports_z3():
    """Z3 behind one boundary (docs/architecture.md): its terms reach the other rooms through
    ``solver.smt``, so a z3-solver release that changes an API changes one package."""
    outside = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n == "z3" or n.startswith("z3.") for n in names) \
                    and not name.startswith("tilecheck.verifier.solver"):
                outside.append(name)
    assert not outside, f"z3 imported outside tilecheck/verifier/solver/: {sorted(set(outside))}"


def test_no_module_imports_itself_round_a_cycle():
    found = components(graph())
    unexpected = [c for c in found if c not in ALLOWED_CYCLES]
    assert not unexpected, "import cycles:\n" + "\n".join(
        "  " + ", ".join(sorted(c)) for c in sorted(unexpected, key=sorted))
    stale = [sorted(c) for c in ALLOWED_CYCLES if c not in found]
    assert not stale, f"allowed cycles that no longer exist (remove them from ALLOWED_CYCLES): {stale}"


def test_every_module_has_a_layer():
    missing = sorted(name for name in modules() if layer(name) is None)
    assert not missing, f"modules with no layer in LAYERS: {missing}"


def test_imports_point_down():
    edges = graph()
    upward = defaultdict(list)
    for name, targets in sorted(edges.items()):
        for target in sorted(targets):
            if layer(name) is None or layer(target) is None:  # test_every_module_has_a_layer says so
                continue
            if layer(target) > layer(name) and (name, target) not in ALLOWED_UPWARD:
                upward[name].append(f"{target} (layer {layer(target)})")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(
        f"  {name} (layer {layer(name)}) -> {', '.join(targets)}" for name, targets in upward.items())
    stale = [edge for edge in ALLOWED_UPWARD if edge[1] not in edges.get(edge[0], ())]
    assert not stale, f"allowed upward imports that no longer exist: {stale}"
