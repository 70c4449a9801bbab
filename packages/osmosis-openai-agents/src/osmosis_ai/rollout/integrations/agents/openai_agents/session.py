"""``OsmosisMemorySession``: the rollout's conversation memory and its sample source.

Pass one to ``Runner.run(..., session=OsmosisMemorySession())`` inside ``AgentWorkflow.run``.
The SDK persists every item of the run into it as it goes (user input, tool calls, tool results,
final message), so the session holds the whole conversation even when the run raises halfway;
the rollout then takes its sample from the session, and ``run`` can simply return ``None``.
"""

from __future__ import annotations

import copy
import uuid
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import (
    OsmosisError,
    RolloutContext,
    SampleSource,
    get_rollout_context,
)

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import Session, SessionSettings

    from osmosis_ai.rollout.integrations.spi import PolicyCall, RolloutSample


# osmosis-ai 0.3.8's message, kept verbatim for code and tests that match on it.
_NOT_REGISTERED = (
    "OsmosisMemorySession was used inside a RolloutContext it was not registered with. "
    "Construct the session inside the workflow run while the rollout context is active."
)


class SessionNotRegisteredError(OsmosisError, RuntimeError):
    """A session was used in a rollout it is not the sample source of (0.3.8: a ``RuntimeError``).

    Raised when an ``OsmosisMemorySession`` created outside any rollout, or inside another
    rollout, is used inside a rollout, and when ``OsmosisRolloutModel`` is called in a rollout
    that has no session recording the conversation.
    """


class OsmosisMemorySession(SampleSource):
    """An in-memory ``agents`` Session that registers itself as the rollout's sample source.

    Created inside a rollout, it becomes that rollout's one sample source; outside any rollout
    it is a plain in-memory session. One session serves one rollout: using it inside a rollout
    it was not created in raises :class:`SessionNotRegisteredError` (as 0.3.8 does), because
    its conversation would never become that rollout's sample, and two rollouts writing one
    history would cross-contaminate both samples. It implements the SDK's ``Session`` protocol
    (``session_id``, ``session_settings``, ``get_items``/``add_items``/``pop_item``/
    ``clear_session``) and stores items exactly as the SDK hands them over (Responses-API
    shape).
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str | None = None) -> None:
        self._items: list[TResponseInputItem] = []
        self._calls: list[PolicyCall] = []
        self._context = get_rollout_context()
        if self._context is not None:
            self._context.set_sample_source(self)
        if session_id is None:
            rollout_id = self._context.rollout_id if self._context is not None else ""
            session_id = rollout_id or f"osmosis-{uuid.uuid4().hex}"
        self.session_id = session_id

    # -- rollout binding ---------------------------------------------------------------------

    @property
    def rollout_context(self) -> RolloutContext | None:
        """The rollout this session was created in and belongs to (``None``: created outside)."""
        return self._context

    def _check_registered(self) -> None:
        """Refuse use inside a rollout this session is not the sample source of."""
        ctx = get_rollout_context()
        bound = self._context
        if ctx is None or ctx is bound:
            return
        if bound is not None and bound.rollout_id and ctx.rollout_id == bound.rollout_id:
            return
        where = (
            f"it belongs to rollout {bound.rollout_id!r}"
            if bound is not None
            else "it was created outside any rollout"
        )
        raise SessionNotRegisteredError(
            f"{_NOT_REGISTERED} ({where}; this is rollout {ctx.rollout_id!r}: create one "
            "OsmosisMemorySession() per rollout instead of sharing one)"
        )

    def record_call(self, call: PolicyCall) -> None:
        """Remember one policy call (``OsmosisRolloutModel`` reports each one here)."""
        self._calls.append(call)

    @property
    def item_count(self) -> int:
        """How many items the session holds (where the next policy call's output will go)."""
        return len(self._items)

    @property
    def policy_calls(self) -> list[PolicyCall]:
        """The policy calls recorded so far, in order."""
        return list(self._calls)

    # -- Session protocol ---------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        self._check_registered()
        if limit is None:
            return list(self._items)
        if limit <= 0:
            return []
        return self._items[-limit:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        self._check_registered()
        self._items.extend(items)

    async def pop_item(self) -> TResponseInputItem | None:
        return self._items.pop() if self._items else None

    async def clear_session(self) -> None:
        self._items.clear()
        self._calls.clear()

    # -- SampleSource ------------------------------------------------------------------------

    async def get_sample(self) -> RolloutSample:
        """The conversation as a sample: native items (plus instructions) and a chat trajectory."""
        from osmosis_ai.rollout.integrations.spi import RolloutSample

        from .trajectory import (
            chat_messages,
            with_instructions,
        )

        messages = with_instructions(self._items, self._calls)
        return RolloutSample(
            messages=messages, trajectory_messages=chat_messages(messages, self._calls)
        )

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        from osmosis_ai.rollout.integrations.spi import RolloutSample

        recent = self._items[-max_messages:] if max_messages > 0 else []
        return RolloutSample(
            messages=[copy.deepcopy(dict(item)) for item in recent], trajectory_messages=None
        )

    def __repr__(self) -> str:
        return f"OsmosisMemorySession(session_id={self.session_id!r}, items={len(self._items)})"


class SessionSampleSource(SampleSource):
    """A sample source over any ``agents`` Session (for example ``SQLiteSession``).

    ``OsmosisMemorySession`` is its own sample source and also records per-call usage and the
    system instructions; use this only to take the sample from another Session implementation:
    ``get_rollout_context().set_sample_source(SessionSampleSource(my_session))``.
    """

    def __init__(self, session: Session | OsmosisMemorySession) -> None:
        self.session = session

    async def get_sample(self) -> RolloutSample:
        if isinstance(self.session, OsmosisMemorySession):
            return await self.session.get_sample()
        from osmosis_ai.rollout.integrations.spi import RolloutSample

        from .trajectory import chat_messages

        items: list[Any] = [copy.deepcopy(dict(item)) for item in await self.session.get_items()]
        return RolloutSample(messages=items, trajectory_messages=chat_messages(items, ()))


# 0.3 defined the public classes in the package module itself; report that path.
for _cls in (OsmosisMemorySession, SessionSampleSource, SessionNotRegisteredError):
    _cls.__module__ = "osmosis_ai.rollout.integrations.agents.openai_agents"
