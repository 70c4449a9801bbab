"""Read a score out of a judge's reply, tolerating models without structured output.

Accepted, in order: a JSON object (possibly inside a Markdown fence, after a ``<think>`` block,
or surrounded by prose) with a numeric ``score``; failing that, a ``score: 0.8`` /
``"score" = 4`` phrase. Anything else is a :class:`MalformedReplyError` (retried by the judge,
then reported as a ``ProviderRequestError``). A score that is not finite is malformed too.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from osmosis_ai._util.json_bounded import TooDeepError, json_objects

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_SCORE_PHRASE = re.compile(
    r"""["']?score["']?\s*[:=]\s*["']?(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)""", re.IGNORECASE
)


class MalformedReplyError(ValueError):
    """The judge answered, but no usable score could be read from the answer."""


def parse_reply(text: str | None) -> tuple[float, str]:
    """``(score, explanation)`` from a reply's text; the explanation may be empty."""
    if text is None or not text.strip():
        raise MalformedReplyError("the judge's reply was empty")
    cleaned = _THINK.sub("", text).strip()
    try:
        candidates = json_objects(cleaned)
    except TooDeepError as exc:
        raise MalformedReplyError(f"the judge's reply is not a usable verdict: {exc}") from None
    for candidate in candidates:
        if "score" in candidate:
            return _from_mapping(candidate)
    match = _SCORE_PHRASE.search(cleaned)
    if match:
        score = _finite(float(match.group(1)))
        return score, cleaned[:2000]
    excerpt = cleaned[:200].replace("\n", " ")
    raise MalformedReplyError(f"no score in the judge's reply: {excerpt!r}")


def parse_arguments(arguments: str | None) -> tuple[float, str]:
    """``(score, explanation)`` from a tool call's JSON arguments."""
    return parse_reply(arguments)


def _from_mapping(data: dict[str, Any]) -> tuple[float, str]:
    raw = data.get("score")
    if isinstance(raw, bool):
        raise MalformedReplyError("the judge's 'score' is a boolean, not a number")
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            raise MalformedReplyError(f"the judge's 'score' is not a number: {raw!r}") from None
    if not isinstance(raw, int | float):
        raise MalformedReplyError(f"the judge's 'score' is not a number: {raw!r}")
    explanation = data.get("explanation", "")
    if not isinstance(explanation, str):
        explanation = json.dumps(explanation, ensure_ascii=False, default=str)
    return _finite(float(raw)), explanation.strip()


def _finite(score: float) -> float:
    if not math.isfinite(score):
        raise MalformedReplyError(f"the judge's score is not finite ({score})")
    return score
