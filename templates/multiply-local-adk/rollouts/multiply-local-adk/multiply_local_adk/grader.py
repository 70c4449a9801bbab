"""Reward 1.0 when the final answer `#### <n>` matches the ground truth."""

import re
from typing import Any

from osmosis_ai.rollout import Grader, GraderContext

ANSWER = re.compile(r"####\s*([-+]?\d*\.?\d+)")
TOLERANCE = 1e-2


def last_text(events: list[Any]) -> str:
    """Text of the agent's last answer.

    ADK samples are the session's events as JSON: `{"author": ..., "content": {"role",
    "parts": [...]}, ...}`; the answer is in the `text` parts (not thoughts) of the last event
    the agent wrote.
    """
    for event in reversed(events):
        if not isinstance(event, dict) or event.get("author") == "user":
            continue
        parts = (event.get("content") or {}).get("parts") or []
        texts = [
            p["text"]
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
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
