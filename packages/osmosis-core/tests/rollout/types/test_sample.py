"""``RolloutSample``: ``json_safe_copy`` (sanitise in place of dropping, stringify keys, no copy if
clean), and the sample built from a workflow's output."""

from __future__ import annotations

import enum
import json
import logging
import math
from typing import Any

import pytest
from pydantic import ValidationError

from osmosis_ai.rollout import AgentWorkflowOutput
from osmosis_ai.rollout.types import RolloutSample


def test_nested_values_are_sanitised_instead_of_dropping_the_whole_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sample = RolloutSample(
        messages=[{"role": "user", "content": "q"}],
        reward=1.0,
        metrics={"nested": {"ok": 1.0, "bad": math.nan}, "series": [1.0, math.inf, 2.0]},
        extra_fields={"deep": {"a": {"b": [{"keep": "x", "drop": object()}]}}},
    )
    with caplog.at_level(logging.WARNING):
        safe = sample.json_safe_copy()
    assert safe is not sample
    assert safe.metrics == {"nested": {"ok": 1.0}, "series": [1.0, 2.0]}
    assert safe.extra_fields == {"deep": {"a": {"b": [{"keep": "x"}]}}}
    # One warning names every dropped value by its path.
    [record] = [r for r in caplog.records if "not JSON-safe" in r.getMessage()]
    message = record.getMessage()
    for path in ("metrics.nested.bad", "metrics.series[1]", "extra_fields.deep.a.b[0].drop"):
        assert path in message
    # The original is untouched and the copy is strict JSON.
    assert math.isnan(sample.metrics["nested"]["bad"])
    json.dumps(safe.model_dump(mode="json"), allow_nan=False)


def test_non_string_keys_are_stringified_as_json_writes_them() -> None:
    sample = RolloutSample(metrics={"by_turn": {1: 0.5, 2: 1.0}})
    sample.extra_fields[7] = {True: "yes", None: "none", 1.5: "x"}  # type: ignore[index]
    safe = sample.json_safe_copy()
    assert safe.metrics == {"by_turn": {"1": 0.5, "2": 1.0}}
    assert safe.extra_fields == {"7": {"true": "yes", "null": "none", "1.5": "x"}}


def test_keys_json_cannot_spell_are_dropped_not_stringified(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 38 item 6: tuple and frozenset keys drop their entry (0.3.8's rule), the rest stays."""
    sample = RolloutSample(metrics={"ok": 1.0})
    sample.metrics[(1, 2)] = 3.0  # type: ignore[index]
    sample.extra_fields["nested"] = {frozenset({"a"}): "x", "kept": "y"}
    with caplog.at_level(logging.WARNING):
        safe = sample.json_safe_copy()
    assert safe.metrics == {"ok": 1.0}
    assert safe.extra_fields == {"nested": {"kept": "y"}}
    assert "tuple key" in caplog.text
    assert "frozenset key" in caplog.text
    json.dumps(safe.model_dump(mode="json"), allow_nan=False)


def test_returns_the_sample_itself_when_nothing_needs_changing() -> None:
    class Colour(enum.StrEnum):
        RED = "red"

    clean = RolloutSample(
        messages=[{"role": "user", "content": "q"}],
        metrics={"a": 1, "b": 2.5, "c": True, "d": None, "e": [1, (2, 3)], "f": {"g": "h"}},
        extra_fields={"model": "m"},
    )
    assert clean.json_safe_copy() is clean
    empty = RolloutSample()
    assert empty.json_safe_copy() is empty
    # A value that only needs converting (a str enum member here) is converted, not dropped.
    converted = RolloutSample(metrics={"ok": 1.0})
    converted.metrics["colour"] = Colour.RED
    safe = converted.json_safe_copy()
    assert safe is not converted
    assert safe.metrics == {"ok": 1.0, "colour": "red"}
    assert type(safe.metrics["colour"]) is str


def test_numpy_like_values_are_converted_and_cycles_are_dropped() -> None:
    class Scalar(float):
        """A float subclass, like ``numpy.float64``."""

    class Array:
        """Anything with ``tolist()``, like a numpy array."""

        def tolist(self) -> list[Any]:
            return [1, 2.0, math.nan]

    circular: dict[str, Any] = {"ok": 1}
    circular["self"] = circular
    sample = RolloutSample(metrics={"s": Scalar(0.5), "bad": Scalar("nan"), "arr": Array()})
    sample.extra_fields["loop"] = circular
    safe = sample.json_safe_copy()
    assert safe.metrics == {"s": 0.5, "arr": [1, 2.0]}
    assert type(safe.metrics["s"]) is float
    json.dumps(safe.model_dump(mode="json"), allow_nan=False)
    assert safe.extra_fields["loop"]["ok"] == 1


def test_sample_from_a_validated_output_equals_the_constructed_one() -> None:
    from osmosis_ai.rollout.agent_workflow import coerce_output

    returned = [
        {"role": "user", "content": "q", "parts": [{"kind": "text", "value": [1, 2]}]},
        {"role": "assistant", "content": "a"},
    ]
    output = coerce_output(AgentWorkflowOutput(messages=returned, metrics={"turns": 2.0}))
    assert output is not None
    assert output.messages is not None
    fast = RolloutSample._from_output(output.messages, "42", output.metrics)
    built = RolloutSample(messages=output.messages, label="42", metrics=output.metrics)
    assert fast == built
    assert fast.model_fields_set == built.model_fields_set
    assert fast.model_dump_json() == built.model_dump_json()
    # The trajectory copy is deep: a grader editing the messages leaves it alone.
    output.messages[0]["parts"][0]["value"].append(3)
    assert fast.trajectory_messages is not None
    assert fast.trajectory_messages[0]["parts"][0]["value"] == [1, 2]
    assert fast.metrics is not output.metrics
    # Assignment is still validated.
    with pytest.raises(ValidationError):
        fast.reward = math.nan
