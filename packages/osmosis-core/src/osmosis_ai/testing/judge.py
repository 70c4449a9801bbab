"""The scripted policy server as an LLM judge: verdicts, malformed replies, 429s, slow replies.

A judge verdict is an ordinary scripted turn, so everything :class:`ScriptedPolicyServer`
offers (scripts per scope, callables, request log, ``max_in_flight``) works for judges too::

    from osmosis_ai.testing import ScriptedPolicyServer, error_reply
    from osmosis_ai.testing.judge import judge_verdict, malformed_verdict, scripted_judge

    # a fixed script: a 429 (retry after 0 s), then a verdict
    ScriptedPolicyServer([error_reply(429, headers={"Retry-After": "0"}), judge_verdict(0.8)])

    # a judge deciding from the graded text (the candidate output in the judge's prompt)
    ScriptedPolicyServer(scripted_judge(lambda answer: 1.0 if "42" in answer else 0.0))

Point the judge at it with ``base_url=server.url`` (any ``provider/model`` string works; no
key is needed with an explicit base URL). :func:`scripted_judge` answers in the shape the
request asked for: a tool call when the request offers tools, JSON text otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from osmosis_ai.testing.replies import ErrorReply, Reply, ToolCall, as_reply
from osmosis_ai.testing.responders import message_text

_CANDIDATE = re.compile(
    r"<<<BEGIN_CANDIDATE_OUTPUT>>>\n(.*?)\n<<<END_CANDIDATE_OUTPUT>>>", re.DOTALL
)

type Verdict = float | int | Reply | ErrorReply | str


def judge_verdict(
    score: float, explanation: str = "scripted verdict", *, delay: float = 0.0
) -> Reply:
    """A judge reply carrying ``{"score": score, "explanation": explanation}`` as JSON text."""
    content = json.dumps({"score": score, "explanation": explanation})
    return Reply(content=content, delay=delay)


def malformed_verdict(
    text: str = "Looks fine to me, maybe a seven?", *, delay: float = 0.0
) -> Reply:
    """A judge reply with no readable score (the judge retries it, then fails)."""
    return Reply(content=text, delay=delay)


def candidate_text(body: Mapping[str, Any]) -> str:
    """The graded output inside a judge request (empty when the request is not a judge's)."""
    return _last_user_match(body, _CANDIDATE)


def scripted_judge(
    decide: Callable[[str], Verdict], *, explanation: str = "scripted verdict"
) -> Callable[[Mapping[str, Any]], Reply | ErrorReply]:
    """A responder: ``decide(candidate_text)`` returns a score, or any scripted turn."""

    def respond(body: Mapping[str, Any]) -> Reply | ErrorReply:
        verdict = decide(candidate_text(body))
        if isinstance(verdict, bool) or not isinstance(verdict, int | float):
            return as_reply(verdict)
        if body.get("tools"):
            arguments = {"score": float(verdict), "explanation": explanation}
            return Reply(tool_calls=(ToolCall(name=_tool_name(body), arguments=arguments),))
        return judge_verdict(float(verdict), explanation)

    return respond


_GROUND_TRUTH = re.compile(r"<<<BEGIN_GROUND_TRUTH>>>\n(.*?)\n<<<END_GROUND_TRUTH>>>", re.DOTALL)


def reference_text(body: Mapping[str, Any]) -> str:
    """The reference answer inside a judge request (empty when there is none)."""
    return _last_user_match(body, _GROUND_TRUTH)


def _last_user_match(body: Mapping[str, Any], pattern: re.Pattern[str]) -> str:
    """``pattern``'s first group in the last user message of ``body`` that it matches, or ``""``."""
    messages = body.get("messages")
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            match = pattern.search(message_text(message))
            if match:
                return match.group(1)
    return ""


def reference_judge(body: Mapping[str, Any]) -> Reply | ErrorReply:
    """Built-in policy ``"judge"``: 1.0 when the reference answer appears in the graded output.

    Case-insensitive substring match; 0.0 otherwise, and 0.0 when there is no reference. Used
    offline as a stand-in judge (``python -m osmosis_ai.testing.policy_server --policy judge``).
    """
    reference = reference_text(body).strip().lower()
    answer = candidate_text(body).lower()
    score = 1.0 if reference and reference in answer else 0.0
    return scripted_judge(lambda _: score, explanation="reference answer match")(body)


def _tool_name(body: Mapping[str, Any]) -> str:
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return function["name"]
    return "submit_score"


__all__ = [
    "candidate_text",
    "judge_verdict",
    "malformed_verdict",
    "reference_judge",
    "reference_text",
    "scripted_judge",
]
