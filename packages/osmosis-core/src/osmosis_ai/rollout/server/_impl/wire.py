"""Encoding results for the wire, once.

A finished rollout's result is encoded to JSON bytes exactly once and kept in that form: polls
return the bytes as they are, callbacks send them, the outbox stores them. That keeps the hot
path free of per-poll pydantic work and keeps a retained result small (a few hundred bytes
instead of a graph of model objects).

Wire sample rules (reference §1.11 / §B.3): ``trajectory_messages`` is never sent; ``metrics``
and ``extra_fields`` are made JSON-safe; a sample that still cannot be encoded is replaced by a
reward-only sample; ``reward`` is null unless the result is a success and the sample is kept.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError

from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionResult
from osmosis_ai.rollout.types.sample import RolloutSample

logger = logging.getLogger("osmosis_ai.rollout.server")

_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_EXCLUDE_TRAJECTORY = {"trajectory_messages"}
# Request fields whose values are credentials: never echoed in a validation error.
SECRET_FIELDS = frozenset({"llm_api_key", "controller_api_key", "api_key"})


def clean_text(text: str | None) -> str | None:
    """Replace lone surrogates, which strict JSON parsers reject."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def sample_json(sample: RolloutSample, *, reward: float | None) -> str:
    """The sample as a JSON object string, following the wire sample rules.

    ``reward`` is the result's :attr:`~osmosis_ai.rollout.types.execution.ExecutionResult.
    wire_reward` (the one place that decides it); it replaces the sample's own.
    """
    try:
        safe = sample.json_safe_copy()
        if safe.reward != reward:
            safe = safe.model_copy(update={"reward": reward})
        encoded = safe.model_dump_json(exclude=_EXCLUDE_TRAJECTORY)
        # model_dump_json turns non-finite floats inside messages into null; a value it cannot
        # serialize at all raises and falls through to the reward-only sample.
        return encoded
    except Exception as exc:
        logger.warning(
            "rollout sample could not be encoded as JSON (%s); sending a reward-only sample",
            type(exc).__name__,
        )
    return _dumps(
        {
            "messages": [],
            "label": clean_text(sample.label),
            "reward": reward,
            "remove_sample": bool(sample.remove_sample),
            "metrics": {},
            "extra_fields": {},
        }
    )


def result_json(rollout_id: str, result: ExecutionResult) -> bytes:
    """``RolloutResultResponse`` bytes for a terminal result."""
    status = RolloutStatus(result.status)
    sample = (
        sample_json(result.sample, reward=result.wire_reward)
        if result.sample is not None
        else "null"
    )
    return _assemble(rollout_id, status.value, sample, result.err_message, result.err_category)


def completion_json(rollout_id: str, result: ExecutionResult) -> bytes:
    """0.3.0 ``RolloutCompleteRequest`` bytes (all keys present, nulls included)."""
    category = result.err_category
    return _dumps(
        {
            "status": RolloutStatus(result.status).value,
            "rollout_id": rollout_id,
            "extra_fields": None,
            "err_message": clean_text(result.err_message),
            "err_category": RolloutErrorCategory(category).value if category else None,
        }
    ).encode()


def grader_json(rollout_id: str, result: ExecutionResult | None) -> bytes:
    """0.3.0 ``GraderCompleteRequest`` bytes; ``None`` means grading could not run."""
    if result is None:
        return _assemble(rollout_id, "failure", "null", None, None)
    success = result.status == RolloutStatus.SUCCESS
    sample = (
        sample_json(result.sample, reward=result.wire_reward)
        if result.sample is not None
        else "null"
    )
    status = "success" if success else "failure"
    return _assemble(rollout_id, status, sample, result.err_message, result.err_category)


def in_progress_json(rollout_id: str, status: RolloutStatus) -> bytes:
    return (
        f'{{"rollout_id":{_dumps(rollout_id)},"status":"{status.value}",'
        '"sample":null,"err_message":null,"err_category":null}'
    ).encode()


def _assemble(
    rollout_id: str,
    status: str,
    sample: str,
    err_message: str | None,
    err_category: RolloutErrorCategory | str | None,
) -> bytes:
    category = RolloutErrorCategory(err_category).value if err_category else None
    message = _json_text(clean_text(err_message))
    return (
        f'{{"rollout_id":{_dumps(rollout_id)},"status":"{status}","sample":{sample},'
        f'"err_message":{message},"err_category":{_json_text(category)}}}'
    ).encode()


def _json_text(value: str | None) -> str:
    """``_dumps`` of a string or ``None``: only a string has the encoder's fast path (anything
    else builds an iterating encoder per call), and a success result has two ``None``s."""
    return "null" if value is None else _dumps(value)


def validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """FastAPI-shaped 422 details (``loc`` starts with ``"body"``), with secrets redacted.

    The request model's "rollout_id is required" rule is a model-level check; it is reported
    as FastAPI reports a missing field, at ``["body", "rollout_id"]``.
    """
    details: list[dict[str, Any]] = []
    for error in exc.errors(include_url=False):
        loc = list(error.get("loc", ()))
        kind = error.get("type", "value_error")
        msg = error.get("msg", "invalid value")
        value: Any = error.get("input")
        ctx = error.get("ctx")
        if not loc and "rollout_id is required" in msg:
            loc, kind, msg, value, ctx = ["rollout_id"], "missing", "Field required", None, None
        if not loc or kind == "missing" or any(str(part) in SECRET_FIELDS for part in loc):
            value = None
        detail: dict[str, Any] = {"type": kind, "loc": ["body", *loc], "msg": msg, "input": value}
        if ctx:
            detail["ctx"] = {
                k: v if isinstance(v, (int, float, str)) else str(v) for k, v in ctx.items()
            }
        details.append(detail)
    return details


def encode_json(value: Any) -> bytes:
    """Compact JSON bytes; falls back to ``str`` for values the encoder does not know."""
    try:
        return _dumps(value).encode()
    except (TypeError, ValueError):
        return json.dumps(value, default=str, separators=(",", ":")).encode()
