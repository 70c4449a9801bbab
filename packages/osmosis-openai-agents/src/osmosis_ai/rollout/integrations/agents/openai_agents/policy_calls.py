"""What the rollout remembers about each policy call.

The OpenAI Agents SDK keeps the conversation (Responses-API items) but drops what the trainer's
trajectory needs per call: the token usage, the model that answered and the system instructions
the call was sent with (they are never stored in a session). :class:`OsmosisRolloutModel`
records one core :class:`~osmosis_ai.rollout.policy.PolicyCall` per call into the rollout's
session, which uses them to build the sample; this module reads what a response produced.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def describe_output(
    output: Iterable[Any], requested_model: str
) -> tuple[tuple[str, ...], str | None, str]:
    """``(tool call ids, assistant text, model name)`` of a response's output items.

    The model name is the one the server reported when the SDK kept it (streaming keeps the
    chunk's ``model``), else the one requested.
    """
    call_ids: list[str] = []
    texts: list[str] = []
    model = requested_model
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "function_call":
            call_id = getattr(item, "call_id", None)
            if isinstance(call_id, str):
                call_ids.append(call_id)
        elif kind == "message":
            for part in getattr(item, "content", None) or ():
                text = getattr(part, "text", None)
                if isinstance(text, str):
                    texts.append(text)
        provider_data = getattr(item, "provider_data", None)
        if isinstance(provider_data, dict):
            reported = provider_data.get("model")
            if isinstance(reported, str) and reported:
                model = reported
    return tuple(call_ids), ("".join(texts) if texts else None), model
