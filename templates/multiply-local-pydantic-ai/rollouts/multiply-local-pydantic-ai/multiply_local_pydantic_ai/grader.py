"""Reward 1.0 when the final answer `#### <n>` matches the ground truth."""

import re
from typing import Any

from osmosis_ai.rollout import Grader, GraderContext

ANSWER = re.compile(r"####\s*([-+]?\d*\.?\d+)")
TOLERANCE = 1e-2


def last_text(messages: list[Any]) -> str:
    """Text of the last model response.

    Pydantic AI samples are its own message history as JSON: `{"kind": "request" | "response",
    "parts": [...]}`; the answer is in the `text` parts of the last response.
    """
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("kind") != "response":
            continue
        texts = [
            p["content"]
            for p in message.get("parts") or []
            if isinstance(p, dict) and p.get("part_kind") == "text"
        ]
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
