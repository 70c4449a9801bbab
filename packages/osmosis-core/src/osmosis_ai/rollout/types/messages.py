"""Message aliases: chat messages travel as plain dicts in the OpenAI chat-completions shape."""

from __future__ import annotations

from typing import Any

MessageDict = dict[str, Any]
Messages = list[dict[str, Any]]
