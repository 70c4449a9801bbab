"""What :class:`~osmosis_ai.testing.ScriptedPolicyServer` records of each request.

:class:`RecordedRequest` (path, headers, JSON body, rollout scope) and :func:`rollout_scope`,
the rollout id in a rollout-scoped chat-completions path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RecordedRequest", "rollout_scope"]

_SCOPE = re.compile(r"/rollouts/([^/]+)/chat/completions/?$")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str] = field(repr=False)  # may hold a bearer token
    body: dict[str, Any]
    rollout_id: str | None

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def bearer_token(self) -> str | None:
        value = self.headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        return token if scheme.lower() == "bearer" and token else None


def rollout_scope(path: str) -> str | None:
    """The rollout id in ``.../rollouts/<id>/chat/completions``, else ``None``."""
    match = _SCOPE.search(path)
    return match.group(1) if match else None
