"""Op-semantics registries: a name -> rule table and the decorator that fills it."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Rule = Callable[..., Any]


def registrar(rules: dict[str, Rule], kind: str) -> Callable[..., Callable[[Rule], Rule]]:
    """A decorator factory ``@register("addi", "subi")`` that adds a rule under each op name and
    refuses a name registered twice."""

    def register(*names: str) -> Callable[[Rule], Rule]:
        def add(fn: Rule) -> Rule:
            for name in names:
                if name in rules:
                    raise ValueError(f"{kind} rule for {name} registered twice")
                rules[name] = fn
            return fn

        return add

    return register
