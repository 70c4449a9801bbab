"""Contexts handed to rollout code, and the ambient :class:`RolloutContext`.

The ambient context is how code deep inside an agent framework (a model placeholder built at
import time, a session object) finds the rollout it is serving: its policy endpoint, its key and
its sample source. It lives in a :class:`contextvars.ContextVar`, so concurrent rollouts in one
event loop each see their own, and entering a context restores the previous one on exit.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

from osmosis_ai.rollout.types.enums import RolloutStatus

if TYPE_CHECKING:
    from osmosis_ai.rollout.policy_endpoint import PolicyEndpoint
    from osmosis_ai.rollout.types.execution import ExecutionRequest
    from osmosis_ai.rollout.types.sample import RolloutSample

logger = logging.getLogger(__name__)

ENV_CHAT_COMPLETIONS_URL = "OSMOSIS_CHAT_COMPLETIONS_URL"
ENV_API_KEY = "OSMOSIS_API_KEY"
ENV_ROLLOUT_ID = "OSMOSIS_ROLLOUT_ID"
# osmosis-ai 0.3.8's names for the same three variables.
CHAT_COMPLETIONS_URL_ENV = ENV_CHAT_COMPLETIONS_URL
API_KEY_ENV = ENV_API_KEY
ROLLOUT_ID_ENV = ENV_ROLLOUT_ID

rollout_contextvar: contextvars.ContextVar[RolloutContext | None] = contextvars.ContextVar(
    "osmosis_rollout_context", default=None
)


@dataclass
class AgentWorkflowContext[TConfig]:
    """What ``AgentWorkflow.run`` receives.

    ``prompt`` is the dataset row's messages, unchanged. :attr:`policy` is the policy endpoint
    (base URL, key, ready ``openai`` clients) for agent loops written without a framework. The
    rollout id is ``ctx.policy.rollout_id`` (or ``get_rollout_context().rollout_id``); the label
    is deliberately not here (only graders see it).
    """

    prompt: list[dict[str, Any]]
    config: TConfig | None = None
    metadata: dict[str, Any] | None = None
    artifacts_dir: Path | None = None

    @property
    def policy(self) -> PolicyEndpoint:
        """The running rollout's policy: ``base_url``, ``api_key``, ``model``, ``client()``.

        Read when accessed from the ambient :class:`RolloutContext`; outside a rollout it raises
        :class:`~osmosis_ai.errors.NoActiveRolloutError` saying how to run the code in one.
        See :class:`osmosis_ai.rollout.policy_endpoint.PolicyEndpoint`.
        """
        from osmosis_ai.rollout.policy_endpoint import PolicyEndpoint

        return PolicyEndpoint.current()


@dataclass
class GraderContext:
    """What ``Grader.grade`` receives; call :meth:`set_reward` exactly once with a finite number."""

    label: str | None = None
    sample: RolloutSample | None = None
    project_path: str | None = None
    metadata: dict[str, Any] | None = None
    artifacts_dir: Path | None = None

    def set_reward(self, reward: float) -> None:
        from osmosis_ai.rollout.types.sample import RolloutSample

        sample = self.sample
        if sample is None:
            raise ValueError("GraderContext has no sample to reward")
        if type(reward) is float and math.isfinite(reward) and type(sample) is RolloutSample:
            # Already what assignment validation would store (a finite float, unchanged; no
            # model validator of RolloutSample reads the reward): skip pydantic's round trip.
            object.__setattr__(sample, "reward", reward)
            sample.__pydantic_fields_set__.add("reward")
            return
        sample.reward = reward  # validated: int coerced, NaN/inf/strings rejected


class SampleSource(ABC):
    """Something that can produce the rollout's sample after ``run`` returns.

    Integrations register one (the agent's history, a memory session) so a workflow can simply
    return ``None``.
    """

    @classmethod
    def for_rollout(cls, ctx: RolloutContext | None = None) -> Self | None:
        """``ctx``'s source of this class (default: the active rollout's), registered now when
        the rollout has none; ``None`` outside a rollout or when the rollout takes its sample
        from elsewhere (``run`` returns messages, another source). For a source class built
        without arguments (every integration's own: LangGraph, Pydantic AI, ADK)."""
        ctx = ctx if ctx is not None else rollout_contextvar.get()
        if ctx is None:
            return None
        current = ctx.sample_source
        if isinstance(current, cls):
            return current
        if current is not None:
            return None
        source = cls()
        ctx.set_sample_source(source)
        return source

    @abstractmethod
    async def get_sample(self) -> RolloutSample: ...

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        """A snapshot of the last ``max_messages`` messages for live previews (optional)."""
        return None


class ConversationSampleSource[M](SampleSource):
    """A rollout's sample kept from its policy calls, for frameworks that hand the model the
    whole conversation on every call (LangChain/LangGraph, Pydantic AI).

    The last call of the rollout's main conversation plus its answer *is* that conversation:
    :meth:`record` keeps it. The main conversation is the one the first recorded call started;
    a call whose first message differs (a sub-agent called from a tool) is not part of the
    sample, though it still reached the rollout's policy. Subclasses say how messages of type
    ``M`` look as JSON (:meth:`native`, the sample's ``messages``) and on the wire
    (:meth:`wire`, its ``trajectory_messages``); :attr:`answers` are the answers the policy
    produced, in call order, to attribute each call's model and usage.
    """

    def __init__(self) -> None:
        self._history: list[M] = []
        self._answers: list[M] = []
        #: The last call's answer when it was given to :meth:`record_later` (not yet built).
        self._pending: _Later[M] | None = None

    @property
    def history(self) -> list[M]:
        """The main conversation: its last call's messages, then that call's answer."""
        pending = [self._pending.get()] if self._pending is not None else []
        return [*self._history, *pending]

    @property
    def answers(self) -> list[M]:
        """The main conversation's answers in call order (of those given to
        :meth:`record_later`, only the last call's)."""
        pending = [self._pending.get()] if self._pending is not None else []
        return [*self._answers, *pending]

    def record(self, messages: Sequence[M], answer: M) -> bool:
        """One completed policy call: ``messages`` went in, ``answer`` came back. ``False`` when
        it is not the main conversation's (or had no messages) and was left out."""
        if not self._continues(messages):
            return False
        self._history, self._pending = [*messages, answer], None
        self._answers.append(answer)
        return True

    def record_later(self, messages: Sequence[M], build: Callable[[], M]) -> bool:
        """:meth:`record` for an answer that costs work to build (a streamed answer merged from
        its chunks, which the framework merges again for itself): ``build()`` runs once, when
        :attr:`history` or :attr:`answers` is read, so a call that a later call continues (its
        messages carry the framework's own copy of the answer) never builds it, and is dropped."""
        if not self._continues(messages):
            return False
        self._history, self._pending = list(messages), _Later(build)
        return True

    def _continues(self, messages: Sequence[M]) -> bool:
        if not messages:
            return False
        first = self._history[0] if self._history else None
        return first is None or messages[0] is first or messages[0] == first

    @abstractmethod
    def native(self, messages: Sequence[M]) -> list[dict[str, Any]]:
        """``messages`` as JSON-ready dicts in the framework's own form."""

    @abstractmethod
    def wire(self) -> list[dict[str, Any]] | None:
        """:attr:`history` as chat-completions messages, ``model``/``usage`` on the answers."""

    async def get_sample(self) -> RolloutSample:
        from osmosis_ai.rollout.types.sample import RolloutSample

        return RolloutSample(messages=self.native(self.history), trajectory_messages=self.wire())

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        from osmosis_ai.rollout.types.sample import RolloutSample

        tail = self.history[-max_messages:] if max_messages > 0 else []
        return RolloutSample(messages=self.native(tail), trajectory_messages=None)


class _Later[M]:
    """An answer built on first use (:meth:`ConversationSampleSource.record_later`)."""

    __slots__ = ("_build", "_value")

    def __init__(self, build: Callable[[], M]) -> None:
        self._build: Callable[[], M] | None = build
        self._value: M | None = None

    def get(self) -> M:
        if self._build is not None:
            self._value, self._build = self._build(), None
        return cast("M", self._value)


@dataclass
class RolloutProgress:
    """The lifecycle status of one rollout, observable by the server's long polls."""

    status: RolloutStatus = RolloutStatus.QUEUED
    on_status: Callable[[RolloutStatus], Awaitable[None] | None] | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    async def set_status(self, status: RolloutStatus) -> None:
        """Move to ``status``; repeats and anything after a terminal status are ignored."""
        if status == self.status or self.status.is_terminal:
            return
        self.status = status
        # Wake every waiter, then arm a fresh event for the next change.
        event, self.changed = self.changed, asyncio.Event()
        event.set()
        if self.on_status is not None:
            # An observer is told, never in charge: one that raises is logged and the rollout
            # goes on (as in osmosis-ai 0.3.8).
            try:
                maybe = self.on_status(status)
                if maybe is not None:
                    await maybe
            except Exception:
                logger.warning("rollout status observer failed on %s", status, exc_info=True)

    async def wait_for_status_change(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - the timeout is the API
    ) -> RolloutStatus:
        """Wait until the status changes (or ``timeout`` passes); return the current status."""
        if self.status.is_terminal:
            return self.status
        event = self.changed
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            pass
        return self.status


@dataclass
class RolloutContext:
    """The ambient identity of the rollout being executed.

    Empty fields are filled from ``OSMOSIS_CHAT_COMPLETIONS_URL``, ``OSMOSIS_API_KEY`` and
    ``OSMOSIS_ROLLOUT_ID``, which is how code running inside a sandbox finds its rollout.
    """

    chat_completions_url: str = ""
    api_key: str | None = field(default=None, repr=False)
    rollout_id: str = ""
    sample_source: SampleSource | None = None
    progress: RolloutProgress | None = None
    process_id: str | None = None
    preview_path: Path | None = None
    preview_enabled: bool = True
    _tokens: list[contextvars.Token[RolloutContext | None]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )
    #: Exceptions the rollout's tools raised (:func:`record_tool_error`), in order: each
    #: ``{"tool", "message", "call_id"?}``. The engine copies them into the sample's
    #: ``extra_fields["tool_errors"]``, so a tool bug is counted instead of passing for a bad
    #: answer.
    tool_errors: list[dict[str, str]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self.chat_completions_url:
            self.chat_completions_url = os.environ.get(ENV_CHAT_COMPLETIONS_URL, "")
        if self.api_key is None:
            self.api_key = os.environ.get(ENV_API_KEY) or None
        if not self.rollout_id:
            self.rollout_id = os.environ.get(ENV_ROLLOUT_ID, "")

    def __enter__(self) -> RolloutContext:
        self._tokens.append(rollout_contextvar.set(self))
        return self

    def __exit__(self, *exc_info: object) -> None:
        token = self._tokens.pop()
        try:
            rollout_contextvar.reset(token)
        except ValueError:
            # Exited in another context than it was entered in: restore what was there before.
            rollout_contextvar.set(
                token.old_value if token.old_value is not token.MISSING else None
            )

    async def __aenter__(self) -> RolloutContext:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__(*exc_info)

    def set_sample_source(self, source: SampleSource) -> None:
        """Register the rollout's one sample source; a second registration is a bug."""
        if self.sample_source is not None and self.sample_source is not source:
            raise ValueError(
                "RolloutContext already has a sample source registered; a rollout produces one "
                "sample, so create one agent history or one memory session per rollout"
            )
        self.sample_source = source

    async def get_sample(self) -> RolloutSample | None:
        if self.sample_source is None:
            return None
        return await self.sample_source.get_sample()

    async def set_status(self, status: RolloutStatus) -> None:
        if self.progress is not None:
            await self.progress.set_status(status)


def rollout_context_for(
    request: ExecutionRequest, progress: RolloutProgress | None = None
) -> RolloutContext:
    """The :class:`RolloutContext` a backend enters around one rollout's user code.

    Built from the request (policy endpoint, key, rollout id, server process id) and the
    server's ``progress``. A request without a policy endpoint takes the endpoint and key of the
    caller's active context (code written for 0.3 entered one around ``execute``), then the
    ``OSMOSIS_*`` environment.
    """
    url = request.chat_completions_url
    api_key = request.api_key
    if not url:
        outer = rollout_contextvar.get()
        if outer is not None:
            url = outer.chat_completions_url
            api_key = api_key or outer.api_key
    return RolloutContext(
        chat_completions_url=url,
        api_key=api_key,
        rollout_id=request.id,
        progress=progress,
        process_id=request.process_id,
    )


#: At most this many tool errors are kept per rollout (the first ones).
MAX_TOOL_ERRORS = 50
_TOOL_ERROR_CHARS = 500


def record_tool_error(tool: str, error: BaseException | str, *, call_id: str | None = None) -> str:
    """Record that ``tool`` raised ``error`` in the rollout being executed (a no-op outside
    one). Framework integrations call it for every tool call that raised (the framework then
    usually shows the model an error message and goes on); a workflow may call it too.
    Returns the error as text, ``"<Type>: <message>"``, for an integration to show the model."""
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        text = str(error)
    ctx = rollout_contextvar.get()
    if ctx is None:
        return text
    entry = {"tool": str(tool), "message": text[:_TOOL_ERROR_CHARS]}
    if call_id:
        entry["call_id"] = str(call_id)
    if len(ctx.tool_errors) < MAX_TOOL_ERRORS:
        ctx.tool_errors.append(entry)
    return text


def get_rollout_context() -> RolloutContext | None:
    """The rollout being executed in this task, or ``None`` outside a rollout."""
    return rollout_contextvar.get()
