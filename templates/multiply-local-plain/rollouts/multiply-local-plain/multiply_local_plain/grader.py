"""Reward 1.0 when the last assistant message ends with `#### <n>` and n matches the ground truth."""

import re
from typing import Any

from osmosis_ai.rollout import Grader, GraderContext

ANSWER = re.compile(r"####\s*([-+]?\d*\.?\d+)")
TOLERANCE = 1e-2


def last_text(messages: list[dict[str, Any]]) -> str:
    """Text of the last assistant message (chat-completions messages hold a string)."""
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            return message["content"]
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
