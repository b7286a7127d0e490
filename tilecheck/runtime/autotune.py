"""Launches made through cuTile's autotuner (``cuda.tile.tune.exhaustive_search``), checked.

Every configuration of the search space gets the check a ``ct.launch`` gets (verified once per
kernel, argument layout and grid; a race fails), before any of them is timed. A configuration
that cuTile cannot compile for its arguments is a failed configuration, as in cuTile's own search.

Without a GPU there is nothing to time, so the choice follows a documented rule instead: **the
first configuration, in the search space's order, whose check passes** (``first_passing``). Its
``Measurement`` has ``num_samples=0`` and a ``mean_us`` of 0.0: nothing was measured.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tilecheck.grid import normalize_grid
from tilecheck.ir import FrontendError

# check(grid, kernel, args): raises for a launch that must not run (a race, aliasing)
Check = Callable[[tuple[int, int, int], Any, tuple[Any, ...]], None]


@dataclass(frozen=True)
class ConfigOutcome:
    """One configuration of a search: passed its check, or was rejected (``error``: why)."""

    config: Any
    passed: bool
    error: BaseException | None = None


def check_search_space(search_space: Sequence[Any], grid_fn: Callable[[Any], Any], kernel: Any,
                       args_fn: Callable[[Any], Any], hints_fn: Callable[[Any], dict[str, Any]] | None,
                       check: Check) -> list[ConfigOutcome]:
    """``check`` every configuration as the launch ``exhaustive_search`` would make with it."""
    __tracebackhide__ = True
    outcomes = []
    for cfg in search_space:
        try:
            base = kernel if _is_kernel(kernel) else kernel(cfg)
            hints = hints_fn(cfg) if hints_fn is not None else {}
            launched = base.replace_hints(**hints) if hints else base
            check(normalize_grid(grid_fn(cfg)), launched, tuple(args_fn(cfg)))
        except FrontendError as exc:  # cuTile rejects this configuration: a failed one, as in its search
            outcomes.append(ConfigOutcome(cfg, False, exc))
            continue
        outcomes.append(ConfigOutcome(cfg, True))
    return outcomes


def first_passing(outcomes: Sequence[ConfigOutcome]) -> Any:
    """The ``cuda.tile.tune.TuningResult`` of the rule used without a GPU: best = the first
    configuration that passed its check; every passing one is a success, measured as nothing."""
    from cuda.tile.tune import Measurement, TuningResult

    passed = [Measurement(config=o.config, mean_us=0.0, num_samples=0, error_margin_us=0.0)
              for o in outcomes if o.passed]
    failures = tuple((o.config, type(o.error), str(o.error)) for o in outcomes if not o.passed)
    if not passed:
        cfg, exc_type, msg = failures[0] if failures else (None, ValueError, "empty search space")
        raise ValueError(f"No valid config found in search space.\nConfig: {cfg}\n{exc_type.__name__}: {msg}")
    return TuningResult(best=passed[0], successes=tuple(passed), failures=failures)


def checked_exhaustive_search(original: Callable[..., Any], check: Check, *, time_on_gpu: bool,
                              on_search: Callable[[Any, list[ConfigOutcome], Any], None] | None = None
                              ) -> Callable[..., Any]:
    """A drop-in ``exhaustive_search``: checks every configuration, then times them with
    ``original`` (``time_on_gpu``) or picks by ``first_passing``. ``on_search(kernel, outcomes,
    chosen config)`` hears of each search."""

    def exhaustive_search(search_space: Sequence[Any], stream: Any, grid_fn: Callable[[Any], Any], kernel: Any,
                          args_fn: Callable[[Any], Any], hints_fn: Callable[[Any], dict[str, Any]] | None = None,
                          **kwargs: Any) -> Any:
        __tracebackhide__ = True
        search_space = list(search_space)
        if not search_space:
            raise ValueError("Search space is empty.")
        outcomes = check_search_space(search_space, grid_fn, kernel, args_fn, hints_fn, check)
        if time_on_gpu:
            result = original(search_space, stream, grid_fn, kernel, args_fn, hints_fn, **kwargs)
        else:
            result = first_passing(outcomes)
        if on_search is not None:
            on_search(kernel, outcomes, result.best.config)
        return result

    exhaustive_search.__wrapped__ = original  # type: ignore[attr-defined]
    exhaustive_search.__doc__ = original.__doc__
    return exhaustive_search


def _is_kernel(obj: Any) -> bool:
    import cuda.tile as ct

    return isinstance(obj, ct.kernel)
