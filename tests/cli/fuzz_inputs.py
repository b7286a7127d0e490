"""Fuzz inputs for the command line and the two Tile IR readers (issue 14), shared by the CI
tests (tests/cli/test_fuzz.py, tests/ir/test_fuzz_readers.py) and the long-run script
(scripts/fuzz_cli.py).

An input is a small project: one Python kernel file (from a template with a random grid,
argument factory, kernel body and decorator order, or random/mutilated text), a .tileir text
file and a .tileirbc bytecode file (real files, mutated), an optional pyproject.toml, and an
argument vector that names them (or names nothing sensible). ``check`` runs the command line
in-process and returns what is wrong with the outcome, if anything: a traceback, an exception
escaping ``main``, an exit status outside 0-3, or exit 1 without a race in the output.
"""
from __future__ import annotations

import io
import json
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
IR_DATA = ROOT / "tests" / "ir" / "data"
TEXT_SEEDS = sorted(IR_DATA.glob("*.tileir")) + sorted((ROOT / "corpus" / "tileir").glob("*.tileir"))
BYTECODE_SEEDS = sorted(IR_DATA.glob("*.tilebc"))

# ---- Tile IR text and bytecode -------------------------------------------------------------------
_TOKENS = ["%", "(", ")", "<", ">", "[", "]", "{", "}", ":", ",", "=", "?", "-1", "0", "99999999999999999999",
           "tile<", "ptr<", "!", "\n", '"', "#loc", "loc(", "@", "^", "f32", "i1", "i64", "token", "entry", "for",
           "if", "yield", " ", "->", "x", "\\", "\x00", "\u00e9", "\ufeff", "%arg0", "make_token", "load_view_tko",
           "store_view_tko", "join_tokens", "make_partition_view", "tensor_view<", "partition_view<"]


@st.composite
def tileir_text(draw: st.DrawFn) -> str:
    """A real .tileir file, mutated a few times (cut, insert a token, duplicate a line, splice)."""
    text = draw(st.sampled_from(TEXT_SEEDS)).read_text()
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 4]))):  # about half unmutated
        i = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            text = text[:i] + text[i + draw(st.integers(1, 40)):]
        elif kind == 1:
            text = text[:i] + draw(st.sampled_from(_TOKENS) | st.text(max_size=6)) + text[i:]
        elif kind == 2:
            lines = text.splitlines(True)
            if lines:
                j = draw(st.integers(0, len(lines) - 1))
                lines.insert(draw(st.integers(0, len(lines))), lines[j])
                text = "".join(lines)
        else:
            j = draw(st.integers(0, len(text)))
            text = text[:i] + text[j:j + draw(st.integers(1, 60))] + text[i:]
    return text


@st.composite
def tileir_bytes(draw: st.DrawFn) -> bytes:
    """A real bytecode file, mutated (byte set, bit flip, cut, insert, truncate), or random bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    data = bytearray(draw(st.sampled_from(BYTECODE_SEEDS)).read_bytes())
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 6]))):  # about half unmutated
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        kind = draw(st.integers(0, 4))
        if kind == 0:
            data[i] = draw(st.integers(0, 255))
        elif kind == 1:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == 2:
            del data[i:i + draw(st.integers(1, 16))]
        elif kind == 3:
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[i:]
    return bytes(data)


# ---- Python kernel files -------------------------------------------------------------------------
_HEADER = "import sys\n\nimport cuda.tile as ct\nimport numpy as np\n\nimport tilecheck\n\n"
_GRID_ITEM = st.one_of(st.integers(1, 8).map(str), st.integers(-2, 0).map(str),
                       st.sampled_from(["2**31", "2**31 - 1", "65535", "65536", "8.0", "True", "False", "None", "'8'",
                                        "np.int64(4)", "np.float32(4)", "1e9", "-1", "[]", "(2,)"]))
GRIDS = st.one_of(_GRID_ITEM, st.lists(_GRID_ITEM, min_size=0, max_size=4).map(lambda xs: f"({', '.join(xs)},)"),
                  st.lists(_GRID_ITEM, max_size=4).map(lambda xs: f"[{', '.join(xs)}]"))
_ARRAYS = ["np.ones(16, np.float32)", "np.zeros(16, np.float32)", "np.ones(64, np.float32)",
           "np.ones(16, np.float64)", "np.ones((4, 4), np.float32)", "np.ones(16, np.int32)",
           "np.broadcast_to(np.zeros(1, np.float32), (16,))", "np.ones(0, np.float32)", "np.ones(16, np.bool_)",
           "1", "2.5", "None", "'x'", "[1, 2]", "object()"]
FACTORIES = st.one_of(
    st.tuples(st.sampled_from(_ARRAYS), st.sampled_from(_ARRAYS)).map(lambda ab: f"lambda: ({ab[0]}, {ab[1]})"),
    st.sampled_from(["lambda: (np.ones(16, np.float32), np.zeros(16, np.float32))",
                     "lambda: (lambda x: (x, x))(np.ones(16, np.float32))",  # aliasing: a race
                     "lambda: (np.ones(16, np.float32),)", "lambda: ()", "lambda: 5", "lambda: None",
                     "lambda: 1 / 0", "lambda: sys.exit(1)", "lambda: sys.exit(0)",
                     "lambda: (_ for _ in ()).throw(KeyboardInterrupt) if False else (1, 2)",
                     "lambda: [np.ones(16, np.float32), np.zeros(16, np.float32)]", "42", "None"]))
_SOUND_FACTORIES = ["lambda: (np.ones(16, np.float32), np.zeros(16, np.float32))",
                    "lambda: (np.ones(64, np.float32), np.zeros(64, np.float32))",
                    "lambda: (lambda x: (x, x))(np.ones(16, np.float32))"]  # the last aliases: a race
_BODIES = {
    "copy": "    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))\n",
    "racy": "    ct.store(y, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))\n",
    "gather": ("    idx = ct.bid(0) * 4 + ct.arange(4, dtype=ct.int32)\n"
               "    ct.scatter(y, idx, ct.gather(x, idx))\n"),
    "atomic": "    ct.atomic_add(y, ct.arange(4, dtype=ct.int32), ct.load(x, index=(ct.bid(0),), shape=(4,)))\n",
    "bad_shape": "    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(3,)))\n",
    "undefined": "    ct.store(y, index=(ct.bid(0),), tile=nothing_here)\n",
    "pass": "    pass\n",
}


@st.composite
def kernel_file(draw: st.DrawFn) -> str:
    """A Python file with one or two kernels and their cases, most of it plausible, some of it wrong."""
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return draw(st.text(max_size=200))
    if kind == 1:
        return _HEADER + draw(st.sampled_from(["raise RuntimeError('at import')\n", "sys.exit(1)\n", "sys.exit(0)\n",
                                               "x = 1\n", "def f(:\n", "import no_such_module_xyz\n",
                                               "os.exit\n", "raise SystemExit('bye')\n"]))
    sound = kind < 10  # half the files are plausible kernels and cases, so they get verified and run
    grids = st.sampled_from(["(4, 1, 1)", "(4,)", "4", "(2, 2)", "[4, 1]"]) if sound else GRIDS
    factories = st.sampled_from(_SOUND_FACTORIES) if sound else FACTORIES
    bodies = st.sampled_from(["copy", "racy", "gather", "atomic"] if sound else sorted(_BODIES))
    out = [_HEADER]
    for n in range(draw(st.integers(1, 2))):
        cases = [f"@tilecheck.case(grid={draw(grids)}, args={draw(factories)})\n"
                 for _ in range(draw(st.integers(1 if sound else 0, 2)))]
        order = 5 if sound else draw(st.integers(0, 5))
        body = _BODIES[draw(bodies)]
        signature = "x, y" if sound else draw(st.sampled_from(["x, y", "x, y, z", "x"]))
        if order == 0:  # the classic mistake: @tilecheck.case under @ct.kernel
            out.append(f"@ct.kernel\n{''.join(cases)}def k{n}({signature}):\n{body}\n\n")
        elif order == 1:  # no @ct.kernel at all
            out.append(f"{''.join(cases)}def k{n}({signature}):\n{body}\n\n")
        else:
            out.append(f"{''.join(cases)}@ct.kernel\ndef k{n}({signature}):\n{body}\n\n")
    text = "".join(out)
    if not sound and draw(st.integers(0, 4)) == 0:  # mutilate: cut a piece out
        i = draw(st.integers(0, len(text)))
        text = text[:i] + text[i + draw(st.integers(1, 30)):]
    return text


@st.composite
def loud_kernel_file(draw: st.DrawFn) -> str:
    """A kernel file that may print while it loads and while its args factories run (issue 23:
    JSON and SARIF on stdout must survive it)."""
    text = draw(kernel_file())
    if draw(st.integers(0, 2)) == 0:
        text = text.replace(_HEADER, _HEADER + "print('loading kernels (numpy backend)')\n", 1)
        text = text.replace("args=lambda: (", "args=lambda: print('making args', file=sys.stdout) or (")
    return text


def long_tileir(n_ops: int) -> str:
    """A valid .tileir function of ``n_ops`` chained ops (big inputs: parsing must stay linear)."""
    view = "partition_view<tile=(64), tensor_view<256xf32, strides=[1]>>"
    body = [f'  %u{i} = addf {"%t" if i == 0 else f"%u{i - 1}"}, %t : tile<64xf32> loc("big.py":{i + 10}:4)'
            for i in range(n_ops)]
    return "\n".join([
        "entry @big(%p: tile<ptr<f32>>) {", "  %root = make_token : token",
        "  %tv = make_tensor_view %p, shape = [], strides = [] : -> tensor_view<256xf32, strides=[1]>",
        f"  %pv = make_partition_view %tv : {view}", "  %b0, %b1, %b2 = get_tile_block_id : tile<i32>",
        f"  %t, %lt = load_view_tko weak %pv[%b0] token = %root : {view}, tile<i32> -> tile<64xf32>, token",
        *body,
        f"  %st = store_view_tko weak %u{n_ops - 1}, %pv[%b0] token = %lt : tile<64xf32>, {view}, tile<i32> -> token",
        "  return", "}", ""])


def tileir_text_or_big() -> st.SearchStrategy[str]:
    """Mostly a mutated real file; one in forty a big one (2,000-8,000 ops), sometimes cut short."""
    big = st.builds(lambda n, cut: (lambda t: t[:len(t) * cut // 100])(long_tileir(n)),
                    st.integers(2000, 8000), st.sampled_from([100, 100, 100, 57, 99]))
    return st.one_of(*[tileir_text()] * 39, big)


PYPROJECTS = st.one_of(
    st.none(), st.none(), st.none(),
    st.sampled_from(["[tool.tilecheck]\ntimeout = 'soon'\n", "[tool.tilecheck]\njobs = 'many'\n",
                     "[tool.tilecheck]\npaths = 5\n", "[tool.tilecheck]\npaths = ['k.py']\n",
                     "[tool.tilecheck]\nallow-unknown = 3\n", "[tool.tilecheck]\npathz = []\n",
                     "[tool.tilecheck]\ntimeout = -1\n", "[tool.tilecheck]\njobs = 0\n",
                     "[tool.tilecheck.assume]\nk0 = ['distinct:x']\n", "[tool.tilecheck.assume]\nk0 = ['nonsense']\n",
                     "[tool.tilecheck.assume]\nk0 = 'distinct:x'\n", "[tool.tilecheck]\nassume = 1\n",
                     "[tool.tilecheck\n", "tool = 1\n"]),
    st.text(max_size=80))


# ---- argument vectors ----------------------------------------------------------------------------
def _values(*good: str) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(good), st.text(max_size=8))


def argv(jobs: tuple[str, ...] = ("1",)) -> st.SearchStrategy[list[str]]:
    """An argument vector over the files of ``write_project`` (K = the kernel file, T = the text
    IR, B = the bytecode, D = the folder with all three): half well-formed commands, so the files
    get verified, run and explained, and half noise (bad values, unknown options, odd paths)."""
    return st.one_of(_well_formed(jobs), _noisy(jobs))


def _well_formed(jobs: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    def options(*choices: st.SearchStrategy[tuple[str, ...]]) -> st.SearchStrategy[list[str]]:
        return st.lists(st.one_of(*choices), max_size=3, unique_by=lambda o: o[0]).map(
            lambda opts: [x for o in opts for x in o])

    def pair(flag: str, *values: str) -> st.SearchStrategy[tuple[str, ...]]:
        return st.tuples(st.just(flag), st.sampled_from(values))

    flag = lambda *names: st.sampled_from(names).map(lambda f: (f,))
    # --timeout is the backstop of a whole case: generous, so that a rerun on a loaded machine
    # answers as the first run did (a fired backstop is an unknown, status 2)
    verify = st.builds(lambda t, o: ["verify", t, "--timeout", "120", *o],
                       st.sampled_from(["D", "K", "T", "B", "D/.."]),
                       options(pair("--format", "text", "json", "sarif"), pair("--grid", "4", "4,1,1", "2,3", "8"),
                               pair("-j", *jobs), flag("--strict", "--allow-unknown", "--debug"),
                               pair("-o", "out.json")))
    ir_ = st.builds(lambda t, o: ["ir", t, *o], st.sampled_from(["D", "K", "T", "B"]), options(flag("--print-ir")))
    run = st.builds(lambda t, o: ["run", t, "--repeat", "2", *o], st.sampled_from(["K::k0", "K::k1"]),
                    options(pair("--case", "0", "1"), pair("--seed", "0", "3"), pair("--report", "out.json"),
                            pair("--heatmap", "out.png")))
    explain = st.builds(lambda t, o: ["explain", t, *o], st.sampled_from(["K::k0", "K::k1"]),
                        options(pair("--case", "0", "1")))
    return st.one_of(verify, verify, ir_, run, explain)


def _noisy(jobs: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    targets = st.sampled_from(["K", "T", "B", "D", "missing.py", "K::k0", "K::k1", "K::nope", "::", "", "-",
                               "D/..", "/dev/null", "T::k0"])
    option = st.one_of(
        st.tuples(st.just("--format"), _values("text", "json", "sarif", "xml")),
        st.tuples(st.just("--grid"), _values("4", "4,1,1", "2,3", "0", "abc", "2147483648", "1,65536", "8.0", "")),
        st.tuples(st.just("-j"), _values(*jobs, "0", "-1", "x")),
        st.tuples(st.just("--timeout"), _values("120", "0", "nan", "-1", "inf", "1e-9")),
        st.tuples(st.just("--case"), _values("0", "1", "-1", "99")),
        st.tuples(st.just("--repeat"), _values("1", "2", "0", "-3")),
        st.tuples(st.just("--runs"), _values("1", "0")),
        st.tuples(st.just("--backend"), _values("cpu", "cuda", "gpu")),
        st.tuples(st.just("--seed"), _values("0", "7", "-1", "x")),
        st.tuples(st.sampled_from(["--report", "--heatmap", "-o", "--output"]),
                  st.sampled_from(["out.json", "out.png", "no/such/dir/x", "D", ""])),
        st.sampled_from(["--strict", "--allow-unknown", "--debug", "--print-ir", "--run", "--help", "-h",
                         "--nonsense"]).map(lambda f: (f,)),
    )
    command = st.sampled_from(["verify", "verify", "ir", "run", "explain", "eval", "Verify", ""])
    return st.builds(lambda c, ts, opts: [c, *ts, "--timeout", "120", *[x for o in opts for x in o]]
                     if c == "verify" else [c, *ts, *[x for o in opts for x in o]],
                     command, st.lists(targets, max_size=3), st.lists(option, max_size=4))


# ---- running one input ---------------------------------------------------------------------------
@dataclass
class Project:
    folder: Path
    kernel: str
    text: str
    bytecode: bytes
    pyproject: str | None
    # a second kernel file at D/<input>/D/k.py: its path ends like D/k.py's (two modules, never one)
    twin: str | None = None


TWIN = "D/{n}/D/k.py"


def write_project(folder: Path, project: Project) -> None:
    folder.mkdir(parents=True)
    (folder / "D").mkdir()
    (folder / "D" / "k.py").write_text(project.kernel, errors="surrogatepass")
    (folder / "D" / "t.tileir").write_text(project.text, errors="surrogatepass")
    (folder / "D" / "b.tileirbc").write_bytes(project.bytecode)
    if project.pyproject is not None:
        (folder / "pyproject.toml").write_text(project.pyproject, errors="surrogatepass")
    if project.twin is not None:
        twin = folder / TWIN.format(n=folder.name)
        twin.parent.mkdir(parents=True)
        twin.write_text(project.twin, errors="surrogatepass")


def resolve(args: list[str], folder: Path) -> list[str]:
    names = {"K": "D/k.py", "T": "D/t.tileir", "B": "D/b.tileirbc", "D": "D"}
    out = []
    for a in args:
        head, sep, tail = a.partition("::")
        out.append(names.get(head, head) + sep + tail if head in names else a)
    return out


# exit 1 needs a defect in the output: a race, or (docs/ci.md) an out-of-bounds access
_RACE = re.compile(r'^race: |^out-of-bounds: |"status": "(race|out-of-bounds)"|'
                   r'"ruleId": "(write-write|read-write|unordered-in-block|out-of-bounds|aliasing|'
                   r'order-dependent-atomic)"|NONDETERMINISTIC|order-dependent-atomic|'
                   r'tilecheck.detect, this launch: \d+ race', re.MULTILINE)


class Slow(Exception):
    """An input that ran past the time limit (reported separately: slow is not wrong)."""


class StreamState(io.TextIOBase):
    """A standard stream in some state: working (``exc`` None), or failing with ``exc`` once
    ``room`` characters have been written (a pipe whose reader leaves, a full disk, a closed fd)."""

    def __init__(self, room: int = 0, exc: BaseException | None = None) -> None:
        super().__init__()
        self.room, self.exc, self.parts = room, exc, []

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.exc is not None and sum(map(len, self.parts)) + len(text) > self.room:
            raise self.exc
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        if self.exc is not None and self.room == 0:
            raise self.exc

    def getvalue(self) -> str:
        return "".join(self.parts)

    def __repr__(self) -> str:
        return f"StreamState({self.room}, {self.exc!r})"


def broken_streams() -> st.SearchStrategy[object]:
    """stdout or stderr closed at start (None), or failing after a few characters."""
    return st.one_of(st.just(None), st.builds(StreamState, st.integers(0, 300), st.sampled_from([
        BrokenPipeError(32, "Broken pipe"), OSError(9, "Bad file descriptor"), OSError(28, "No space left on device"),
        ValueError("I/O operation on closed file.")])))


class _Late(BaseException):
    pass


def run_main(args: list[str], folder: Path, seconds: int = 0, stdout: object = "capture", stderr: object = "capture",
             sigterm_after: float | None = None) -> tuple[object, str, str]:
    """``tilecheck.cli.main(args)`` in ``folder``: (exit status or the exception that escaped, stdout, stderr).
    ``stdout``/``stderr``: a ``StreamState`` or None (closed) instead of a capture; ``sigterm_after``:
    send this process SIGTERM that many seconds in (as a CI runner's cancel would)."""
    import threading

    from tilecheck import cli

    out = io.StringIO() if stdout == "capture" else stdout
    err = io.StringIO() if stderr == "capture" else stderr
    cwd = os.getcwd()
    os.chdir(folder)
    timer = None
    if sigterm_after is not None:
        # a SIGTERM that arrives after main returned must not end the fuzzer
        signal.signal(signal.SIGTERM, lambda *_: None)
        timer = threading.Timer(sigterm_after, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()

    def alarm(*_: object) -> None:
        raise Slow(f"more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm) if seconds else None
    signal.alarm(seconds)
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout, sys.stderr = out, err
        try:
            status: object = cli.main(args)
        except SystemExit as exc:  # argparse: --help (0) and usage errors (3)
            status = exc.code
        except Slow:
            raise
        except BaseException as exc:  # noqa: BLE001 - what the fuzzer is looking for
            status = exc
    finally:
        sys.stdout, sys.stderr = saved
        if timer is not None:
            timer.cancel()
            timer.join()
        signal.alarm(0)
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    text = lambda stream: stream.getvalue() if stream is not None else ""  # noqa: E731
    return status, text(out), text(err)


def problems(args: list[str], status: object, out: str, err: str, folder: Path) -> list[str]:
    """What is wrong with one outcome (empty: nothing)."""
    found = []
    if isinstance(status, BaseException):
        found.append(f"{type(status).__name__} escaped main: {status}")
    elif status not in (0, 1, 2, 3):
        found.append(f"exit status {status!r}")
    if "Traceback (most recent call last)" in out + err and "--debug" not in args:
        found.append("a traceback was printed")
    if status == 1:
        reports = ""
        for i, a in enumerate(args[:-1]):
            if a in ("-o", "--output", "--report") and (folder / args[i + 1]).is_file():
                reports += (folder / args[i + 1]).read_text(errors="replace")
        if not _RACE.search(out + reports):
            found.append("exit 1 without a race in the output")
    if "internal error:" in err:  # allowed (exit 3, one line), but a bug the fuzzer is here to find
        found.append("internal error: " + err.split("internal error:", 1)[1].splitlines()[0][:200])
    if status == 3 and "error" not in err:
        found.append("exit 3 without an error message")
    if args and args[0] == "verify":
        found += _misattributed(out, folder)
    if _report_on_stdout(args) and status in (0, 1, 2, 3) and out.strip():
        try:
            json.loads(out)
        except ValueError:
            found.append(f"a JSON/SARIF report on stdout does not parse: {out[:80]!r}")
    return found


_ID = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.py)::(\w+)\[\d+\]")  # a case's id: what a verdict is reported under


def _misattributed(out: str, folder: Path) -> list[str]:
    """A kernel reported under a file that does not define it (two files taken for one module)."""
    found = []
    for file, name in set(_ID.findall(out)):
        path = folder / file
        if path.is_file() and f"def {name}(" not in path.read_text(errors="replace"):
            found.append(f"misattributed: {file}::{name} is reported, that file has no kernel {name}")
    return found


def _report_on_stdout(args: list[str]) -> bool:
    if not args or args[0] != "verify" or any(a in ("-h", "--help", "-o", "--output") for a in args):
        return False
    return any(a == "--format" and b in ("json", "sarif") for a, b in zip(args, args[1:]))


def stream_problems(status: object, reference: object, out: object, err: object) -> list[str]:
    """The same input with broken streams must exit as it did with working ones."""
    if status != reference:
        return [f"streams changed the status: {reference!r} with working streams, {status!r} with "
                f"stdout={out!r} stderr={err!r}"]
    return []


def signal_problems(status: object, reference: object, out: str, err: str, args: list[str] = ()) -> list[str]:
    """SIGTERM mid-run: exit 143 (or what the run gave, if it finished first), no worker left."""
    import multiprocessing

    found = []
    if status not in (143, reference):
        found.append(f"SIGTERM: exit {status!r} (expected 143, or {reference!r} if it had finished)")
    if "Traceback (most recent call last)" in out + err and "--debug" not in args:
        found.append("SIGTERM: a traceback was printed: " + (out + err).split("Traceback", 1)[1][:600])
    alive = multiprocessing.active_children()
    if alive:
        found.append(f"SIGTERM: {len(alive)} worker process(es) left running")
        for p in alive:
            p.kill()
            p.join()
    return found
