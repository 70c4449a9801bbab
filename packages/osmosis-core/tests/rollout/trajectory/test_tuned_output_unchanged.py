"""The trajectory fast paths produce byte-identical files to the straightforward implementation.

``atif.py`` and ``dumps_trajectory`` were tuned for CPU (exact-type fast paths before the
``collections.abc`` checks, one reused C JSON encoder per document). This module keeps the
implementation as it was before that tuning, verbatim, as the specification of the output, and
checks that the tuned code writes exactly the same text on representative samples (Strands and
OpenAI Agents rollouts, multimodal content, reports, token ids, logprobs, odd inputs) and on
generated histories.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from osmosis_ai.rollout import RolloutSample
from osmosis_ai.rollout.trajectory import (
    TrajectoryReport,
    atif,
    convert_sample_to_trajectory,
    dumps_trajectory,
)
from osmosis_ai.rollout.trajectory.atif import AGENT_NAME, SCHEMA_VERSION, sdk_version

# -- the baseline: the implementation before the CPU tuning (do not "improve" it) -------------

_ROLE_TO_SOURCE = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "agent",
}
_TOOL_ROLES = frozenset({"tool", "function"})


def _text(content: Any) -> str | list[dict[str, Any]]:
    """Message content as ATIF ``message``: a string, or content parts for multimodal content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        parts: list[dict[str, Any]] = []
        texts: list[str] = []
        only_text = True
        for part in content:
            if isinstance(part, str):
                texts.append(part)
                parts.append({"type": "text", "text": part})
            elif isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    texts.append(text)
                    parts.append({"type": "text", "text": text})
                else:
                    only_text = False
                    kind = str(part.get("type", "content"))
                    parts.append({"type": "text", "text": f"[{kind} omitted]"})
        return "\n".join(texts) if only_text else parts
    return str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"raw": raw}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    return {} if raw is None else {"value": raw}


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not isinstance(calls, Sequence):
        return out
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        if isinstance(function, Mapping):
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = call.get("name"), call.get("arguments", call.get("input"))
        out.append(
            {
                "tool_call_id": str(call.get("id") or call.get("tool_call_id") or ""),
                "function_name": str(name or ""),
                "arguments": _arguments(arguments),
            }
        )
    return out


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _logprobs(value: Any) -> list[float] | None:
    if isinstance(value, Mapping):
        value = value.get("content")
        if isinstance(value, Sequence):
            out = [_float(item.get("logprob")) for item in value if isinstance(item, Mapping)]
            return [v for v in out if v is not None] or None
        return None
    if isinstance(value, Sequence) and not isinstance(value, str):
        out = [_float(v) for v in value]
        return [v for v in out if v is not None] or None
    return None


def _token_ids(value: Any) -> list[int] | None:
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        ids = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        return ids if len(ids) == len(value) else None
    return None


def usage_metrics(usage: Any) -> dict[str, Any]:
    """ATIF metrics from an OpenAI chat or Responses ``usage`` object."""
    if not isinstance(usage, Mapping):
        return {}
    metrics: dict[str, Any] = {}
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    if cached is None:
        cached = _int(usage.get("cached_tokens"))
    cost = _float(usage.get("cost_usd", usage.get("cost")))
    for key, value in (
        ("prompt_tokens", prompt),
        ("completion_tokens", completion),
        ("cached_tokens", cached),
        ("cost_usd", cost),
    ):
        if value is not None:
            metrics[key] = value
    return metrics


def _step_metrics(message: Mapping[str, Any]) -> dict[str, Any]:
    usage = message.get("usage")
    extra = message.get("extra")
    if usage is None and isinstance(extra, Mapping):
        response = extra.get("response")
        if isinstance(response, Mapping):
            usage = response.get("usage")
    metrics = usage_metrics(usage)
    prompt_ids = _token_ids(message.get("prompt_token_ids"))
    completion_ids = _token_ids(message.get("completion_token_ids", message.get("token_ids")))
    logprobs = _logprobs(message.get("logprobs"))
    if prompt_ids is not None:
        metrics["prompt_token_ids"] = prompt_ids
    if completion_ids is not None:
        metrics["completion_token_ids"] = completion_ids
    if logprobs is not None:
        metrics["logprobs"] = logprobs
    return metrics


def _timestamp(message: Mapping[str, Any]) -> str | None:
    value = message.get("created_at", message.get("timestamp"))
    if isinstance(value, str) and value:
        return value
    number = _float(value)
    if number is not None:
        return _dt.datetime.fromtimestamp(number, tz=_dt.UTC).isoformat().replace("+00:00", "Z")
    return None


def _tool_result_text(message: Mapping[str, Any]) -> Any:
    text = _text(message.get("content"))
    return text


def convert_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ATIF ``steps`` from chat-completions messages (see the module docstring)."""
    steps: list[dict[str, Any]] = []
    last_agent: dict[str, Any] | None = None
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role", ""))
        if role in _TOOL_ROLES and last_agent is not None:
            observation = last_agent.setdefault("observation", {"results": []})
            observation["results"].append(
                {
                    "source_call_id": message.get("tool_call_id") or message.get("name"),
                    "content": _tool_result_text(message),
                }
            )
            continue
        source = _ROLE_TO_SOURCE.get(role, "user")
        step: dict[str, Any] = {
            "step_id": len(steps) + 1,
            "source": source,
            "message": _text(message.get("content")),
        }
        timestamp = _timestamp(message)
        if timestamp is not None:
            step["timestamp"] = timestamp
        if source == "agent":
            model = message.get("model")
            if isinstance(model, str) and model:
                step["model_name"] = model
            reasoning = message.get("reasoning_content", message.get("reasoning"))
            if isinstance(reasoning, str) and reasoning:
                step["reasoning_content"] = reasoning
            calls = _tool_calls(message.get("tool_calls"))
            if calls:
                step["tool_calls"] = calls
            metrics = _step_metrics(message)
            if metrics:
                step["metrics"] = metrics
            last_agent = step
        elif role not in _ROLE_TO_SOURCE:
            step["extra"] = {"role": role or None}
        steps.append(step)
    return steps


def final_metrics(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {}
    for step in steps:
        metrics = step.get("metrics")
        if not isinstance(metrics, Mapping):
            continue
        for key, total in (
            ("prompt_tokens", "total_prompt_tokens"),
            ("completion_tokens", "total_completion_tokens"),
            ("cached_tokens", "total_cached_tokens"),
            ("cost_usd", "total_cost_usd"),
        ):
            value = metrics.get(key)
            if value is not None:
                totals[total] = totals.get(total, 0) + value
    totals["total_steps"] = len(steps)
    return totals


def _apply_report(
    steps: list[dict[str, Any]], report: TrajectoryReport | None
) -> tuple[str | None, list[Any] | None, list[Any] | None]:
    """Attach controller-reported per-call metrics to agent steps when the counts match."""
    if report is None or not report.samples:
        return (report.model_name if report else None), None, None
    sample_reports = list(report.samples.values())
    first, rest = sample_reports[0], sample_reports[1:]
    agent_steps = [s for s in steps if s["source"] == "agent"]
    unmatched_calls: list[Any] | None = None
    if first.llm_call_metrics and len(first.llm_call_metrics) == len(agent_steps):
        for step, call in zip(agent_steps, first.llm_call_metrics, strict=True):
            merged = dict(step.get("metrics") or {})
            merged.update({k: v for k, v in usage_from_call(call).items() if v is not None})
            if merged:
                step["metrics"] = merged
            model = call.get("model_name")
            if isinstance(model, str) and model and "model_name" not in step:
                step["model_name"] = model
    elif first.llm_call_metrics:
        unmatched_calls = list(first.llm_call_metrics)
    unmatched_reports = [r.as_dict() for r in rest] or None
    return first.model_name or report.model_name, unmatched_calls, unmatched_reports


def usage_from_call(call: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = usage_metrics(call)
    for key in ("prompt_token_ids", "completion_token_ids"):
        ids = _token_ids(call.get(key))
        if ids is not None:
            out[key] = ids
    logprobs = _logprobs(call.get("logprobs"))
    if logprobs is not None:
        out["logprobs"] = logprobs
    extra = call.get("extra")
    if isinstance(extra, Mapping) and extra:
        out["extra"] = dict(extra)
    return out


def baseline_convert(
    sample: RolloutSample,
    *,
    rollout_id: str,
    request_label: str | None = None,
    request_metadata: Mapping[str, Any] | None = None,
    request_extra_fields: Mapping[str, Any] | None = None,
    report: TrajectoryReport | None = None,
    status: str | None = None,
    err_category: str | None = None,
    err_message: str | None = None,
) -> dict[str, Any] | None:
    """The ATIF document for ``sample``, or ``None`` when it has no ``trajectory_messages``."""
    messages = sample.trajectory_messages
    if messages is None:
        return None
    steps = convert_messages(messages)
    report_model, unmatched_calls, unmatched_reports = _apply_report(steps, report)
    model_name = report_model or next((s["model_name"] for s in steps if "model_name" in s), None)
    safe = sample.json_safe_copy() if (sample.metrics or sample.extra_fields) else sample
    osmosis = {
        "rollout_id": rollout_id,
        "label": sample.label if sample.label is not None else request_label,
        "reward": sample.reward,
        "remove_sample": sample.remove_sample or None,
        "status": status,
        "err_category": err_category,
        "err_message": err_message,
        "sample_metrics": safe.metrics or None,
        "sample_extra_fields": safe.extra_fields or None,
        "request_metadata": dict(request_metadata) if request_metadata else None,
        "request_extra_fields": dict(request_extra_fields) if request_extra_fields else None,
        "unmatched_llm_call_metrics": unmatched_calls,
        "unmatched_sample_reports": unmatched_reports,
    }
    agent: dict[str, Any] = {"name": AGENT_NAME, "version": sdk_version()}
    if model_name:
        agent["model_name"] = model_name
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": rollout_id,
        "trajectory_id": rollout_id,
        "agent": agent,
        "steps": steps,
        "final_metrics": final_metrics(steps),
        "extra": {"osmosis": {k: v for k, v in osmosis.items() if v is not None}},
    }


_encode = json.JSONEncoder(ensure_ascii=False, default=str, separators=(", ", ": ")).encode


def baseline_dumps(document: Mapping[str, Any]) -> str:
    """JSON with one top-level key per line and one step per line.

    Readable with ``less`` or ``jq``, and fast: every piece goes through the C encoder
    (``indent=`` would switch to the pure-Python one, several times slower), and token-id and
    logprob arrays stay on their step's line instead of one number per line.
    """
    items = list(document.items())
    lines = ["{"]
    last = len(items) - 1
    for index, (key, value) in enumerate(items):
        comma = "," if index < last else ""
        if key == "steps" and isinstance(value, list) and value:
            lines.append(f"  {_encode(key)}: [")
            final = len(value) - 1
            lines.extend(
                f"    {_encode(step)}{',' if i < final else ''}" for i, step in enumerate(value)
            )
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {_encode(key)}: {_encode(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- representative samples -------------------------------------------------------------------

USAGE = {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
STRANDS: list[dict[str, Any]] = [
    {"role": "system", "content": "You multiply numbers. Use the multiply tool."},
    {"role": "user", "content": [{"text": "What is 10 times 12?", "type": "text"}]},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "function": {"arguments": '{"a": 10, "b": 12}', "name": "multiply"},
                "id": "call_1",
                "type": "function",
            }
        ],
        "model": "scripted-policy",
        "usage": USAGE,
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "120"},
    {
        "role": "assistant",
        "content": [{"text": "#### 120", "type": "text"}],
        "model": "scripted-policy",
        "usage": {"prompt_tokens": 37, "completion_tokens": 2, "total_tokens": 39},
    },
]
OPENAI_AGENTS: list[dict[str, Any]] = [
    {"role": "system", "content": "You multiply numbers."},
    {"role": "user", "content": 'What is 3 times 4? \u00e9\u4e2d\U0001f600 "quoted" \\ \n\t'},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "multiply", "arguments": '{"a":3,"b":4}'},
            }
        ],
        "model": "osmosis-rollout",
        "usage": {
            "input_tokens": 30,
            "output_tokens": 6,
            "input_tokens_details": {"cached_tokens": 3},
            "cost_usd": 0.25,
        },
        "created_at": 1_700_000_000.5,
    },
    {"role": "function", "name": "multiply", "content": "12"},
    {"role": "assistant", "content": "#### 12", "model": "osmosis-rollout", "usage": USAGE},
]
ODD: list[Any] = [
    {"role": "tool", "tool_call_id": "orphan", "content": "no agent yet"},
    {"role": "critic", "content": [{"type": "image_url", "image_url": {"url": "x"}}, "plain"]},
    {"content": 7},
    {
        "role": "assistant",
        "content": ["a", {"text": "b"}],
        "reasoning_content": "thinking",
        "timestamp": "2026-01-01T00:00:00Z",
        "tool_calls": [
            {"name": "flat", "input": {"x": [1, 2.5, None, True]}, "tool_call_id": "t"},
            {"id": "n", "function": {"name": "bad", "arguments": "not json"}},
            {"id": "e", "function": {"name": "empty", "arguments": "  "}},
            {"id": "l", "function": {"name": "list", "arguments": "[1, 2]"}},
            {"id": "v", "function": {"name": "num", "arguments": 5}},
            "skipped",
        ],
        "prompt_token_ids": [1, 2, 3],
        "token_ids": [4, 5],
        "logprobs": {"content": [{"logprob": -0.5}, {"logprob": float("nan")}, {"x": 1}]},
        "extra": {"response": {"usage": {"prompt_tokens": 1}}},
    },
    {
        "role": "assistant",
        "content": "",
        "usage": {"prompt_tokens": 2.0, "completion_tokens": True, "cached_tokens": 1},
        "completion_token_ids": [1, True],
        "logprobs": [-0.1, "x", float("inf"), -0.2],
        "created_at": "",
        "extra": {"response": {"usage": {"prompt_tokens": 99}}},
    },
    {"role": "tool", "content": [{"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}]},
    {"role": "assistant", "content": None, "tool_calls": "not a list", "logprobs": "nope"},
    {"role": "developer", "content": {"weird": "mapping"}},
]


def _samples() -> list[tuple[RolloutSample, dict[str, Any]]]:
    report = TrajectoryReport.from_dict(
        {
            "model_name": "ctrl",
            "samples": {
                "0": {
                    "model_name": "ctrl-0",
                    "llm_call_metrics": [
                        {"prompt_tokens": 5, "completion_token_ids": [9], "extra": {"k": 1}},
                        {"completion_tokens": 4, "logprobs": [-1.0], "model_name": "m2"},
                    ],
                },
                "1": {"model_name": "other", "llm_call_metrics": [{"prompt_tokens": 1}]},
            },
        }
    )
    return [
        (RolloutSample(messages=STRANDS, label="120", reward=1.0), {"status": "success"}),
        (
            RolloutSample(
                messages=OPENAI_AGENTS,
                reward=0.0,
                metrics={"turns": 2, "bad": float("nan")},
                extra_fields={"k": [1, 2]},
            ),
            {
                "request_label": "12",
                "request_metadata": {"m": 1},
                "request_extra_fields": {"x": "y"},
                "status": "failure",
                "err_category": "agent_error",
                "err_message": "boom",
            },
        ),
        (RolloutSample(messages=ODD, remove_sample=True), {}),
        (RolloutSample(messages=STRANDS), {"report": report}),
        (RolloutSample(messages=OPENAI_AGENTS[:3]), {"report": report}),
        (RolloutSample(messages=[]), {}),
    ]


def test_identical_documents_and_text_on_representative_samples() -> None:
    for index, (sample, kwargs) in enumerate(_samples()):
        rollout_id = f"rollout-{index}"
        expected = baseline_convert(sample, rollout_id=rollout_id, **kwargs)
        actual = convert_sample_to_trajectory(sample, rollout_id=rollout_id, **kwargs)
        assert actual == expected
        assert actual is not None
        assert expected is not None
        assert dumps_trajectory(actual) == baseline_dumps(expected)


def test_identical_steps_from_mappings_and_sequences_of_other_types() -> None:
    """Non-dict mappings and non-list sequences take the ``collections.abc`` paths."""
    from types import MappingProxyType

    def frozen(value: Any) -> Any:
        if isinstance(value, dict):
            return MappingProxyType({k: frozen(v) for k, v in value.items()})
        if isinstance(value, list):
            return tuple(frozen(v) for v in value)
        return value

    for messages in (STRANDS, OPENAI_AGENTS, ODD, [*ODD, "not a message", 3, None]):
        for variant in (messages, frozen(messages)):
            assert atif.convert_messages(variant) == convert_messages(variant)


def test_identical_text_for_documents_of_any_shape() -> None:
    odd_documents: list[dict[str, Any]] = [
        {},
        {"steps": []},
        {"steps": "not a list", "x": float("inf"), "y": -float("inf"), "z": float("nan")},
        {"steps": [{"a": 1}], "only": "\u2028 \x00 \ud83d"},
        {"a": object, "steps": [1, "two", None, [3.0]], "b": (1, 2), "c": True},
        {"schema_version": SCHEMA_VERSION, "agent": {"name": AGENT_NAME, "v": sdk_version()}},
    ]
    for document in odd_documents:
        assert dumps_trajectory(document) == baseline_dumps(document)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_content = (
    st.none()
    | st.text(max_size=20)
    | st.lists(
        st.one_of(
            st.text(max_size=5),
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
            st.fixed_dictionaries({"type": st.text(max_size=5)}),
        ),
        max_size=3,
    )
)
_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(
            ["system", "developer", "user", "assistant", "tool", "function", "other", ""]
        ),
        "content": _content,
    },
    optional={
        "tool_call_id": st.text(max_size=5),
        "name": st.text(max_size=5),
        "model": st.none() | st.text(max_size=5),
        "reasoning": st.text(max_size=5),
        "created_at": st.none() | st.floats(0, 4e9) | st.text(max_size=5),
        "usage": st.dictionaries(
            st.sampled_from(
                ["prompt_tokens", "completion_tokens", "input_tokens", "cached_tokens", "cost"]
            ),
            st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(),
        ),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {"id": st.text(max_size=4)},
                optional={
                    "function": st.fixed_dictionaries(
                        {"name": st.text(max_size=4), "arguments": _json | st.text(max_size=8)}
                    ),
                    "name": st.text(max_size=4),
                    "input": _json,
                },
            ),
            max_size=3,
        ),
        "completion_token_ids": st.lists(st.integers(0, 10**5) | st.booleans(), max_size=4),
        "prompt_token_ids": st.lists(st.integers(0, 10**5), max_size=4),
        "logprobs": st.lists(st.floats() | st.integers(), max_size=4)
        | st.fixed_dictionaries(
            {"content": st.lists(st.dictionaries(st.just("logprob"), st.floats()), max_size=3)}
        ),
        "extra": st.fixed_dictionaries({"response": st.fixed_dictionaries({"usage": _json})}),
    },
)


@settings(max_examples=120, deadline=None)
@given(
    messages=st.lists(_message, max_size=10),
    metrics=st.dictionaries(st.text(max_size=4), _json, max_size=3),
    label=st.none() | st.text(max_size=5),
)
def test_identical_output_for_generated_histories(
    messages: list[dict[str, Any]], metrics: dict[str, Any], label: str | None
) -> None:
    sample = RolloutSample(messages=messages, metrics=metrics, label=label)
    expected = baseline_convert(sample, rollout_id="gen", status="success")
    actual = convert_sample_to_trajectory(sample, rollout_id="gen", status="success")
    assert expected is not None
    assert actual is not None
    assert dumps_trajectory(actual) == baseline_dumps(expected)


def test_identical_text_without_the_c_accelerator(monkeypatch: Any) -> None:
    from osmosis_ai.rollout.trajectory import encoding

    monkeypatch.setattr(encoding, "_c_make_encoder", None)
    for index, (sample, kwargs) in enumerate(_samples()):
        document = convert_sample_to_trajectory(sample, rollout_id=f"r{index}", **kwargs)
        assert document is not None
        assert dumps_trajectory(document) == baseline_dumps(document)
