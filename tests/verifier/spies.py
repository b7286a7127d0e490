"""Spies the verifier's tests share."""
from tilecheck.verifier.obligations import checker as obligations


def given_case_questions(monkeypatch) -> list[str]:
    """What each solver query a level with a concrete grid asks is about (``Checker.solve``'s
    ``what``), in order, from now on in the test."""
    asked: list[str] = []
    solve = obligations.Checker.solve

    def spy(self, constraints, what, locs, key=None, **kw):
        if self.level.grid is not None:
            asked.append(what)
        return solve(self, constraints, what, locs, key, **kw)

    monkeypatch.setattr(obligations.Checker, "solve", spy)
    return asked
