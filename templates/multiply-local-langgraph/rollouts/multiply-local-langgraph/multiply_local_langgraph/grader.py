"""Reward 1.0 when the final answer `#### <n>` matches the ground truth."""

import re
from typing import Any

from osmosis_ai.rollout import Grader, GraderContext

ANSWER = re.compile(r"####\s*([-+]?\d*\.?\d+)")
TOLERANCE = 1e-2


def last_text(items: list[Any]) -> str:
    """Text of the last assistant message.

    LangGraph samples are LangChain messages as dicts (`message.model_dump()`): the answer is
    the last `{"type": "ai", ...}` message; its `content` is a string or a list of parts.
    """
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("type") != "ai":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        texts = [p["text"] for p in content or [] if isinstance(p, dict) and "text" in p]
        if texts:
            return "\n".join(texts)
    return ""


def final_answer(text: str) -> float | None:
    matches = ANSWER.findall(text.replace(",", ""))
    return float(matches[-1]) if matches else None


class MultiplyGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        if ctx.sample is None:  # the workflow produced nothing to grade
            return
        answer = final_answer(last_text(ctx.sample.messages))
        try:
            expected = float(ctx.label or "")
        except ValueError:
            expected = None
        correct = answer is not None and expected is not None and abs(answer - expected) < TOLERANCE
        ctx.set_reward(1.0 if correct else 0.0)
