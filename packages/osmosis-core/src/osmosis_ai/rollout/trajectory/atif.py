"""Converting a rollout's sample to an ATIF trajectory document (``ATIF-v1.7``).

Input is ``sample.trajectory_messages`` (chat-completions form). Mapping:

* roles: ``system``/``developer`` -> a ``system`` step, ``user`` -> ``user``, ``assistant`` ->
  ``agent``, anything unknown -> ``user``;
* ``tool``/``function`` messages fold into the most recent agent step as
  ``observation.results[{source_call_id, content}]`` (a tool result with no agent step before
  it becomes a ``user`` step);
* assistant ``tool_calls`` become ``[{tool_call_id, function_name, arguments: dict}]``;
* per-step ``metrics`` come from the message's inline ``usage`` (chat names ``prompt_tokens`` /
  ``completion_tokens`` or Responses names ``input_tokens`` / ``output_tokens``, cached tokens
  from ``*_tokens_details.cached_tokens``, ``cost``), or from ``extra.response.usage``; token ids
  (``prompt_token_ids``, ``completion_token_ids`` or ``token_ids``) and ``logprobs`` (a list of
  floats or an OpenAI ``{"content": [{"logprob": ...}]}`` object) are kept when present;
* inline ``model`` becomes the step's ``model_name``; ``created_at``/``timestamp`` (ISO string
  or epoch seconds) becomes its ``timestamp``.

``final_metrics`` sums what the steps report; ``total_steps`` is always ``len(steps)``. Osmosis
data goes to ``extra.osmosis`` (``rollout_id``, ``label``, ``reward``, ``sample_metrics``, ...),
with null entries dropped. The document is a plain ``dict`` ready for ``json.dumps``.

Performance: this runs once per rollout, so type tests check ``type(x) is dict``/``list`` before
the ``collections.abc`` ``isinstance`` checks (several times slower); results are identical
(``tests/rollout/trajectory/test_tuned_output_unchanged.py`` keeps the straightforward version).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.trajectory.report import TrajectoryReport

if TYPE_CHECKING:
    from osmosis_ai.rollout.types.sample import RolloutSample

SCHEMA_VERSION = "ATIF-v1.7"
AGENT_NAME = "osmosis-rollout-sdk"

type Trajectory = dict[str, Any]

_ROLE_TO_SOURCE = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "agent",
}
_TOOL_ROLES = frozenset({"tool", "function"})


def sdk_version() -> str:
    """The producer's version in ``agent.version``: osmosis-ai's (see :mod:`osmosis_ai.versions`)."""
    from osmosis_ai.versions import sdk_version as installed_sdk_version

    return installed_sdk_version()


def _text(content: Any) -> str | list[dict[str, Any]]:
    """Message content as ATIF ``message``: a string, or content parts for multimodal content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if type(content) is list or (
        isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray))
    ):
        parts: list[dict[str, Any]] = []
        texts: list[str] = []
        only_text = True
        for part in content:
            if isinstance(part, str):
                texts.append(part)
                parts.append({"type": "text", "text": part})
            elif type(part) is dict or isinstance(part, Mapping):
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
    if type(raw) is not str and isinstance(raw, Mapping):
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
    if calls is None or (type(calls) is not list and not isinstance(calls, Sequence)):
        return out
    for call in calls:
        if type(call) is not dict and not isinstance(call, Mapping):
            continue
        function = call.get("function")
        if type(function) is dict or isinstance(function, Mapping):
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
    if value is None:
        return None
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
    if value is None:
        return None
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        ids = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        return ids if len(ids) == len(value) else None
    return None


def usage_metrics(usage: Any) -> dict[str, Any]:
    """ATIF metrics from an OpenAI chat or Responses ``usage`` object."""
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return {}
    metrics: dict[str, Any] = {}
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    cached = (
        _int(details.get("cached_tokens"))
        if type(details) is dict or isinstance(details, Mapping)
        else None
    )
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
        if type(message) is not dict and not isinstance(message, Mapping):
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
        if metrics is None or (type(metrics) is not dict and not isinstance(metrics, Mapping)):
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


def convert_sample_to_trajectory(
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
) -> Trajectory | None:
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
        SAMPLE_METRICS_KEY: safe.metrics or None,
        SAMPLE_EXTRA_FIELDS_KEY: safe.extra_fields or None,
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
        "extra": {OSMOSIS_KEY: {k: v for k, v in osmosis.items() if v is not None}},
    }


#: Where :func:`convert_sample_to_trajectory` puts Osmosis data, and the keys of the facts
#: that readers of a run take from it (:func:`sample_facts` is their one reader).
OSMOSIS_KEY = "osmosis"
SAMPLE_METRICS_KEY = "sample_metrics"
SAMPLE_EXTRA_FIELDS_KEY = "sample_extra_fields"
#: The key of ``sample.extra_fields`` a grader (an LLM judge) states its explanation under.
EXPLANATION_KEY = "explanation"
#: The key of ``sample.extra_fields`` the engine puts the rollout's tool errors under
#: (:func:`osmosis_ai.rollout.context.record_tool_error`).
TOOL_ERRORS_KEY = "tool_errors"


@dataclass(frozen=True, slots=True)
class SampleFacts:
    """What a trajectory document says about its sample, read with the writer's key names:
    the label, the grader's metrics (``ctx.sample.metrics``), the grader's explanation
    (``ctx.sample.extra_fields["explanation"]``), the rollout's error message and the tool
    calls that raised (``extra_fields["tool_errors"]``)."""

    label: str | None = None
    metrics: dict[str, Any] | None = None
    explanation: str | None = None
    err_message: str | None = None
    #: ``[{"tool", "message", "call_id"?}]``: the tool calls that raised.
    tool_errors: list[dict[str, Any]] | None = None


def sample_facts(document: Mapping[str, Any]) -> SampleFacts:
    """The :class:`SampleFacts` of a document :func:`convert_sample_to_trajectory` wrote."""
    extra = document.get("extra")
    osmosis = extra.get(OSMOSIS_KEY) if isinstance(extra, Mapping) else None
    if not isinstance(osmosis, Mapping):
        return SampleFacts()
    label = osmosis.get("label")
    metrics = osmosis.get(SAMPLE_METRICS_KEY)
    fields = osmosis.get(SAMPLE_EXTRA_FIELDS_KEY)
    explanation = fields.get(EXPLANATION_KEY) if isinstance(fields, Mapping) else None
    tool_errors = fields.get(TOOL_ERRORS_KEY) if isinstance(fields, Mapping) else None
    err = osmosis.get("err_message")
    return SampleFacts(
        label=label if isinstance(label, str) or label is None else json.dumps(label),
        metrics=dict(metrics) if isinstance(metrics, Mapping) and metrics else None,
        explanation=explanation if isinstance(explanation, str) and explanation else None,
        err_message=err if isinstance(err, str) else None,
        tool_errors=[dict(e) for e in tool_errors if isinstance(e, Mapping)] or None
        if isinstance(tool_errors, list)
        else None,
    )
