"""Reward 1.0 when the last message ends with `#### <n>` and n matches the ground truth."""

import re
from typing import Any

from osmosis_ai.rollout import Grader, GraderContext

ANSWER = re.compile(r"####\s*([-+]?\d*\.?\d+)")
TOLERANCE = 1e-2


def last_text(messages: list[Any]) -> str:
    """Text of the last message (Strands messages hold a list of content blocks)."""
    if not messages:
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        block["text"] for block in content or [] if isinstance(block, dict) and "text" in block
    )


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
