"""The one tool: its JSON schema (sent to the policy) and its implementation."""

import json
from collections.abc import Callable
from typing import Any


def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product."""
    return a * b


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "Multiply two numbers and return the product.",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": "The first factor."},
                    "b": {"type": "number", "description": "The second factor."},
                },
                "required": ["a", "b"],
            },
        },
    }
]

FUNCTIONS: dict[str, Callable[..., Any]] = {"multiply": multiply}


def call_tool(name: str, arguments: str) -> str:
    """Run one tool call; a bad call becomes an error message the model can read and fix."""
    function = FUNCTIONS.get(name)
    if function is None:
        return f"error: unknown tool {name!r}; available: {', '.join(FUNCTIONS)}"
    try:
        return str(function(**json.loads(arguments or "{}")))
    except (TypeError, ValueError) as exc:
        return f"error: {exc}"
