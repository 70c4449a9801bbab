"""One options object: ``run_eval``'s keywords, :class:`EvalOptionsDict` and :class:`EvalOptions`
cannot drift apart."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields
from pathlib import Path

import pytest

from osmosis_ai.eval import EvalOptions, EvalOptionsDict, run_eval, run_eval_async
from osmosis_ai.eval._impl.api import with_keywords
from osmosis_ai.eval._impl.plan.plan import build_plan


def test_the_keyword_form_has_exactly_the_options_fields_with_the_same_types() -> None:
    field_types = {f.name: f.type for f in fields(EvalOptions)}
    assert set(EvalOptionsDict.__annotations__) == set(field_types)
    for name, annotation in EvalOptionsDict.__annotations__.items():
        # Both are written as strings (``from __future__ import annotations``): compare the text.
        text = (
            annotation.__forward_arg__ if isinstance(annotation, typing.ForwardRef) else annotation
        )
        assert text == field_types[name], name


@pytest.mark.parametrize("function", [run_eval, run_eval_async])
def test_run_eval_takes_the_options_object_or_its_fields_as_keywords(function: object) -> None:
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    assert list(parameters)[:2] == ["rollout", "options"]
    assert parameters["kwargs"].kind is inspect.Parameter.VAR_KEYWORD
    assert {"progress", "confirm_cost"} <= set(parameters)


def test_keywords_override_the_options_and_unknown_ones_are_refused() -> None:
    base = EvalOptions(model="mock", n=2)
    merged = with_keywords(base, {"n": 3, "limit": 1})
    assert (merged.model, merged.n, merged.limit) == ("mock", 3, 1)
    assert base.n == 2  # the caller's object is not changed
    assert with_keywords(None, {}) == EvalOptions()
    with pytest.raises(TypeError, match="max_cots"):
        with_keywords(None, {"max_cots": 1.0})  # type: ignore[typeddict-unknown-key]


def test_the_plan_holds_the_options_it_was_built_from(
    workspace: typing.Callable[..., Path],
) -> None:
    config = workspace()
    options = EvalOptions(model="mock", name="opts", max_failures=2, token_ids=True, rows=[0, 1])
    plan = build_plan(config, options)
    assert plan.options.max_failures == 2
    assert plan.options.token_ids is True
    assert len(plan.rows) == 2
    assert plan.request["rows"] == "0,1"
