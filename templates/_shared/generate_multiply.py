"""Regenerate ``data/multiply.jsonl``, the dataset shared by the multiply templates.

Deterministic (fixed seed), so re-running it produces the same file and applying two templates
into one workspace never conflicts on the dataset. Run: ``python templates/_shared/generate_multiply.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROWS = 200
SEED = 20260101
SYSTEM_PROMPT = (
    "You are a careful calculator. Use the `multiply` tool to compute products; never multiply "
    "in your head. When you have the result, end your reply with the final answer on its own "
    "line in the form `#### <number>`."
)


def rows(count: int = ROWS, seed: int = SEED) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        a = rng.randint(-999, 9999)
        b = rng.randint(2, 999)
        out.append(
            {
                "system_prompt": SYSTEM_PROMPT,
                "user_prompt": f"What is {a} multiplied by {b}?",
                "ground_truth": str(a * b),
            }
        )
    return out


def main() -> None:
    target = Path(__file__).parent / "data" / "multiply.jsonl"
    target.write_text("".join(json.dumps(row) + "\n" for row in rows()), encoding="utf-8")
    print(f"wrote {ROWS} rows to {target}")


if __name__ == "__main__":
    main()
