"""Property test: on random small kernels, the verifier's cross-block verdict agrees with brute
force enumeration of every block pair, iteration and lane on a small concrete grid."""
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tilecheck import ir


@dataclass(frozen=True)
class Index:
    """(a*b0 + c*b1 + d*i + k) then optionally `// m` or `% m` (all operands non-negative)."""

    a: int
    c: int
    d: int
    k: int
    op: str  # "", "div", "rem"
    m: int

    def eval(self, b0: int, b1: int, i: int) -> int:
        v = self.a * b0 + self.c * b1 + self.d * i + self.k
        return v // self.m if self.op == "div" else v % self.m if self.op == "rem" else v

    def emit(self, lines: list[str], tag: str, loop_var: str) -> str:
        def const(name: str, value: int) -> str:
            lines.append(f"  %{tag}_{name} = constant <i32: {value}> : tile<i32>")
            return f"%{tag}_{name}"

        terms = []
        for name, coef, var in (("a", self.a, "%b0"), ("c", self.c, "%b1"), ("d", self.d, loop_var)):
            if coef and var:
                lines.append(f"  %{tag}_m{name} = muli {var}, {const(name, coef)} : tile<i32>")
                terms.append(f"%{tag}_m{name}")
        acc = const("k", self.k)
        for n, t in enumerate(terms):
            lines.append(f"  %{tag}_s{n} = addi {acc}, {t} : tile<i32>")
            acc = f"%{tag}_s{n}"
        if self.op:
            name = "divi" if self.op == "div" else "remi"
            lines.append(f"  %{tag}_r = {name} {acc}, {const('m', self.m)} signed : tile<i32>")
            acc = f"%{tag}_r"
        return acc


@dataclass(frozen=True)
class Kernel:
    n: int  # array length (static)
    tile: int
    grid: tuple[int, int]
    loop: int  # 0: no loop, else trip count
    store: Index
    load: Index | None
    cond: tuple[int, int] | None  # store only when b0 % cond[0] == cond[1]

    def text(self) -> str:
        view = f"tensor_view<{self.n}xf32, strides=[1]>"
        pview = f"partition_view<tile=({self.tile}), {view}>"
        lines = ["entry @k(%p: tile<ptr<f32>>) {",
                 "  %tok = make_token : token",
                 f"  %tv = make_tensor_view %p, shape = [], strides = [] : -> {view}",
                 f"  %pv = make_partition_view %tv : {pview}",
                 "  %b0, %b1, %b2 = get_tile_block_id : tile<i32>"]
        body: list[str] = []
        loop_var = ""
        if self.loop:
            lines += ["  %c0 = constant <i32: 0> : tile<i32>", f"  %cL = constant <i32: {self.loop}> : tile<i32>",
                      "  %c1 = constant <i32: 1> : tile<i32>",
                      "  for %i in (%c0 to %cL, step %c1) : tile<i32> {"]
            loop_var = "%i"
        if self.load is not None:
            li = self.load.emit(body, "ld", loop_var)
            body.append(f"  %x, %xt = load_view_tko weak %pv[{li}] token = %tok : {pview}, tile<i32> "
                        f"-> tile<{self.tile}xf32>, token")
        si = self.store.emit(body, "st", loop_var)
        store = (f"  %st = store_view_tko weak %val, %pv[{si}] token = %tok : tile<{self.tile}xf32>, {pview}, "
                 "tile<i32> -> token")
        body += [f"  %g1 = constant <i32: {self.grid[1]}> : tile<i32>",  # each block stores its own number
                 "  %bm = muli %b0, %g1 : tile<i32>", "  %bs = addi %bm, %b1 : tile<i32>",
                 "  %bf = itof %bs signed : tile<i32> -> tile<f32>", "  %br = reshape %bf : tile<f32> -> tile<1xf32>",
                 f"  %val = broadcast %br : tile<1xf32> -> tile<{self.tile}xf32>"]
        if self.cond is not None:
            body += [f"  %cm = constant <i32: {self.cond[0]}> : tile<i32>",
                     f"  %cr = constant <i32: {self.cond[1]}> : tile<i32>",
                     "  %crem = remi %b0, %cm signed : tile<i32>",
                     "  %ceq = cmpi equal %crem, %cr, signed : tile<i32> -> tile<i1>",
                     "  if %ceq {", store, "  }"]
        else:
            body.append(store)
        lines += body
        if self.loop:
            lines.append("  }")
        lines += ["  return", "}"]
        return "\n".join(lines) + "\n"

    def elements(self, index: Index, b0: int, b1: int, i: int) -> set[int]:
        start = index.eval(b0, b1, i) * self.tile
        return {e for e in range(start, start + self.tile) if 0 <= e < self.n}

    def brute_force_race(self) -> bool:
        writes, reads = {}, {}
        for b0 in range(self.grid[0]):
            for b1 in range(self.grid[1]):
                w, r = set(), set()
                for i in range(max(self.loop, 1)):
                    if self.cond is None or b0 % self.cond[0] == self.cond[1]:
                        w |= self.elements(self.store, b0, b1, i)
                    if self.load is not None:
                        r |= self.elements(self.load, b0, b1, i)
                writes[(b0, b1)], reads[(b0, b1)] = w, r
        blocks = list(writes)
        for x in blocks:
            for y in blocks:
                if x != y and (writes[x] & writes[y] or writes[x] & reads[y]):
                    return True
        return False


def index_strategy(loop: bool):
    return st.builds(Index, a=st.integers(0, 3), c=st.integers(0, 2), d=st.integers(0, 2) if loop else st.just(0),
                     k=st.integers(0, 4), op=st.sampled_from(["", "", "div", "rem"]), m=st.integers(1, 4))


@st.composite
def kernels(draw):
    loop = draw(st.integers(0, 3))
    return Kernel(n=draw(st.integers(1, 24)), tile=draw(st.sampled_from([1, 2, 4])),
                  grid=(draw(st.integers(1, 6)), draw(st.integers(1, 2))), loop=loop,
                  store=draw(index_strategy(bool(loop))),
                  load=draw(st.none() | index_strategy(bool(loop))),
                  cond=draw(st.none() | st.tuples(st.integers(2, 3), st.integers(0, 1))))


@settings(max_examples=examples(200), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(kernel=kernels())
def test_cross_block_verdict_matches_brute_force(kernel):
    module = ir.parse(kernel.text())
    report = tilecheck.verify(module, grid=(*kernel.grid, 1))
    assert report.status in ("verified", "race"), report
    found = any(f.kind in ("write-write", "read-write") for f in report.findings)
    assert found == kernel.brute_force_race(), (kernel, str(report))
    for f in report.findings:
        if f.kind in ("write-write", "read-write"):
            # the witness really is a conflict: both blocks touch the element it names
            w = f.witness
            b1, b2 = w.first.block, w.second.block
            assert b1 != b2 and b1[2] == b2[2] == 0
            (e,) = w.element
            touched = [kernel.elements(ix, b[0], b[1], side.loops.get(next(iter(side.loops), ""), 0))
                       for ix, b, side in ((kernel.store, b1, w.first),
                                           (kernel.store if w.second.effect == "write" else kernel.load, b2,
                                            w.second))]
            assert all(e in t for t in touched), (kernel, str(report))


@settings(max_examples=examples(60), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(kernel=kernels())
def test_runtime_agrees_with_the_verifier(kernel):
    """Verified kernels give identical bits under adversarial schedules; every write-write race
    the verifier reports replays on the interpreter (the two blocks store different values)."""
    import numpy as np

    module = ir.parse(kernel.text())
    grid = (*kernel.grid, 1)
    args = (np.zeros(kernel.n, np.float32),)
    report = tilecheck.verify(module, args, grid)
    if report.status == "verified":
        runs = tilecheck.run_repeated(module, args, grid, runs=5, seed=3)
        assert runs.deterministic, (kernel, str(runs))
    for f in report.findings:
        if f.kind == "write-write":
            result = tilecheck.replay(f)
            assert result.reproduced, (kernel, str(report), str(result))
