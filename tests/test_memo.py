"""The process-wide memos keep at most their limit (tilecheck/memo.py): a long test session's
memory must not grow with its number of tests."""
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from tilecheck.ir import cutile
from tilecheck.ir.triton import frontend
from tilecheck.memo import Memo
from tilecheck.runtime import launcher


@settings(max_examples=examples(200, fast=50), deadline=None, derandomize=True)
@given(limit=st.integers(1, 5), keys=st.lists(st.integers(0, 9), max_size=40))
def test_a_memo_answers_as_a_dict_of_its_latest_keys_and_never_holds_more(limit, keys):
    memo, plain = Memo(limit), {}
    for step, key in enumerate(keys):
        memo[key] = plain[key] = step
        assert len(memo) <= limit
        # what it holds, it holds right (a dropped key is computed again when asked)
        assert all(plain[k] == v for k, v in memo.items())
    assert memo.setdefault("new", 1) == 1 and memo["new"] == 1 and len(memo) <= limit


def test_the_session_memos_are_bounded():
    for memo in (launcher._VERIFIED, launcher._SEEN, cutile._COMPILED, cutile._SPECIALIZED, cutile._CODES,
                 cutile._BINDINGS, frontend._FUNCTIONS, frontend._TTIR):
        assert isinstance(memo, Memo) and memo.limit <= 4096
