"""``ctx.policy``: the running rollout's policy endpoint, for agent loops written without a framework.

A workflow that calls the model itself (no Strands, no OpenAI Agents SDK) reads everything it
needs from the context it is given::

    class MyWorkflow(AgentWorkflow):
        async def run(self, ctx: AgentWorkflowContext) -> list[dict]:
            client = ctx.policy.client()            # openai.AsyncOpenAI, ready to call
            reply = await client.chat.completions.create(
                model=ctx.policy.model, messages=ctx.prompt
            )
            return [*ctx.prompt, {"role": "assistant", "content": reply.choices[0].message.content}]

``base_url`` is an OpenAI **base URL** (the client appends ``/chat/completions``); it is the
rollout's ``chat_completions_url`` of the 0.3 protocol, whose name predates this accessor.
``api_key`` is the key the controller sent (``"EMPTY"`` when it sent none). ``client()`` is the
shared per-event-loop client of :mod:`osmosis_ai.rollout.policy` (header hygiene, no retries),
and ``sync_client()`` a blocking ``openai.OpenAI`` for code that runs in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from osmosis_ai.rollout.policy import (
    NO_API_KEY,
    policy_client,
    require_active_rollout,
    sync_policy_client,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = ["DEFAULT_POLICY_MODEL", "PolicyEndpoint"]

#: The model name a workflow sends: the policy server decides what actually serves the request
#: (the training cluster serves the checkpoint being trained; ``osmosis eval run`` substitutes
#: the model given with ``--model``).
DEFAULT_POLICY_MODEL = "osmosis-rollout"


@dataclass(frozen=True, slots=True)
class PolicyEndpoint:
    """Where the current rollout's policy is served, and clients addressed at it."""

    base_url: str
    api_key: str = field(repr=False)
    rollout_id: str = ""
    model: str = DEFAULT_POLICY_MODEL

    @classmethod
    def current(cls, caller: str = "ctx.policy") -> PolicyEndpoint:
        """The endpoint of the rollout running in this task.

        Raises :class:`~osmosis_ai.errors.NoActiveRolloutError` (saying how to run the code inside
        a rollout) when there is none, or when it has no policy URL.
        """
        ctx = require_active_rollout(caller)
        return cls(
            base_url=ctx.chat_completions_url,
            api_key=ctx.api_key or NO_API_KEY,
            rollout_id=ctx.rollout_id,
        )

    def client(self, *, timeout: float | None = None, max_retries: int = 0) -> AsyncOpenAI:
        """An ``openai.AsyncOpenAI`` bound to this endpoint (call from inside the event loop).

        Cheap to call on every turn: the running loop's connection pool is shared and the bound
        copy is memoised. ``max_retries`` defaults to 0 (a failed call fails the rollout as
        ``http_error``, it is not retried blindly); ``timeout`` is seconds per request.
        """
        return policy_client(self.base_url, self.api_key, timeout=timeout, max_retries=max_retries)

    def sync_client(self, *, timeout: float | None = None, max_retries: int = 0) -> OpenAI:
        """A new blocking ``openai.OpenAI`` bound to this endpoint (for code run in a thread).

        Close it when done (``with ctx.policy.sync_client() as client: ...``).
        """
        return sync_policy_client(
            self.base_url, self.api_key, timeout=timeout, max_retries=max_retries
        )
