"""Sample capture: one :class:`StrandsSampleSource` per rollout, fed by the agent's hooks.

``sample.messages`` is the agent's Strands-native history (what graders written for the public
SDK read, e.g. ``ctx.sample.messages[-1]["content"][0]["text"]``). ``sample.trajectory_messages``
is the same conversation in chat-completions form, exactly as it went on the wire (tool-call
arguments as the policy wrote them, see :mod:`._raw_arguments`), with
the system prompt first and ``"model"`` and ``"usage"`` on every assistant message that a policy
call produced, so the trajectory writer can attribute tokens per step.

Which rollout a message belongs to is decided by the ambient ``RolloutContext``: the agent
registers its source on the rollout it is constructed in, or (for an agent built at import time)
on the rollout it is first invoked in. An agent reused by a later rollout freezes the earlier
rollout's sample before switching, so each sample holds only its own rollout's view.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from strands.hooks import (
    AfterInvocationEvent,
    AfterToolCallEvent,
    BeforeInvocationEvent,
    HookProvider,
    HookRegistry,
    MessageAddedEvent,
)

from osmosis_ai.rollout.integrations.spi import (
    RolloutContext,
    RolloutSample,
    SampleSource,
    get_rollout_context,
    record_tool_error,
)

from ._raw_arguments import RawToolArguments, raw_arguments_for, restore_in

if TYPE_CHECKING:
    from strands import Agent

    from osmosis_ai.rollout.integrations.spi import PolicyCall

# (message, record): the message is kept so that its id() stays unique while the entry lives.
type CallIndex = dict[int, tuple[Mapping[str, Any], PolicyCall]]


class StrandsSampleSource(SampleSource):
    """The sample of one rollout served by one Strands agent."""

    def __init__(
        self, agent: Agent, capture: SampleCapture, raw_arguments: RawToolArguments | None = None
    ) -> None:
        self._agent = agent
        self._capture = capture
        self._raw_arguments = raw_arguments
        self.calls: CallIndex = {}
        self._frozen: RolloutSample | None = None

    @property
    def agent(self) -> Agent:
        return self._agent

    def freeze(self) -> None:
        """Snapshot the sample now: the agent is about to serve another rollout."""
        if self._frozen is None:
            self._frozen = self._build()

    async def get_sample(self) -> RolloutSample:
        if self._frozen is not None:
            return self._frozen.model_copy(deep=True)
        return self._build()

    async def get_preview(self, max_messages: int) -> RolloutSample | None:
        if self._frozen is not None:
            messages = list(self._frozen.messages)
        else:
            messages = list(self._agent.messages)
        tail = copy.deepcopy(messages[-max_messages:]) if max_messages > 0 else []
        return RolloutSample(messages=tail, trajectory_messages=None)

    def _build(self) -> RolloutSample:
        messages = list(self._agent.messages)
        return RolloutSample(
            messages=copy.deepcopy(messages),
            trajectory_messages=restore_in(
                chat_completions_messages(messages, self._agent.system_prompt, self.calls),
                self._raw_arguments,
            ),
        )


class SampleCapture(HookProvider):
    """Per-agent hooks: register the rollout's sample source and attribute policy calls.

    It is also the model's :class:`~.model.PolicyCaller`: the agent's bound model reports each
    completed call here, and the next assistant message the agent appends is that call's answer.
    """

    def __init__(self) -> None:
        self._agent: Agent | None = None
        self._source: StrandsSampleSource | None = None
        self._pending: PolicyCall | None = None

    def attach(self, agent: Agent) -> None:
        self._agent = agent
        agent.hooks.add_hook(self)

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self._before_invocation)
        registry.add_callback(MessageAddedEvent, self._message_added)
        registry.add_callback(AfterInvocationEvent, self._after_invocation)
        registry.add_callback(AfterToolCallEvent, self._after_tool_call)

    def bind(self, ctx: RolloutContext) -> StrandsSampleSource:
        """Make this agent the sample source of ``ctx`` (idempotent)."""
        assert self._agent is not None, "attach() the capture to its agent first"
        current = ctx.sample_source
        if isinstance(current, StrandsSampleSource) and current.agent is self._agent:
            self._switch_to(current)
            return current
        if current is not None:
            raise ValueError(
                f"rollout {ctx.rollout_id or '(no id)'!r} already has a sample source "
                f"({type(current).__name__}); a rollout produces exactly one sample, so use one "
                "OsmosisStrandsAgent per rollout (other agents, e.g. sub-agents used as tools, can "
                "be plain strands.Agent instances sharing the same OsmosisRolloutModel)"
            )
        source = StrandsSampleSource(self._agent, self, raw_arguments_for(ctx))
        ctx.set_sample_source(source)
        self._switch_to(source)
        return source

    def _switch_to(self, source: StrandsSampleSource) -> None:
        if self._source is not None and self._source is not source:
            self._source.freeze()
        self._source = source

    def record_call(self, record: PolicyCall) -> None:
        self._pending = record

    def _before_invocation(self, event: BeforeInvocationEvent) -> None:
        self._pending = None
        ctx = get_rollout_context()
        if ctx is not None:
            self.bind(ctx)

    def _message_added(self, event: MessageAddedEvent) -> None:
        message = event.message
        if message.get("role") != "assistant" or self._pending is None:
            return
        record, self._pending = self._pending, None
        if self._source is not None:
            self._source.calls[id(message)] = (message, record)

    def _after_invocation(self, event: AfterInvocationEvent) -> None:
        self._pending = None

    def _after_tool_call(self, event: AfterToolCallEvent) -> None:
        """A tool that raised: Strands shows the model an error result and goes on; the
        rollout records it (tool name, message), so the row counts a tool error."""
        tool_use = event.tool_use
        error: BaseException | str | None = event.exception
        if error is None:
            error = _caught_error_text(event.result)
        if error is None:
            return
        record_tool_error(
            str(tool_use.get("name") or "?"), error, call_id=tool_use.get("toolUseId")
        )


def _caught_error_text(result: Mapping[str, Any] | None) -> str | None:
    """The error of a tool whose exception Strands caught itself: before strands-agents 1.2x a
    decorated tool's exception never reaches the hook, only the error result Strands made of it
    (``status: error``, text ``Error: <Type> - <message>``)."""
    if not result or result.get("status") != "error":
        return None
    for block in result.get("content") or ():
        text = block.get("text") if isinstance(block, Mapping) else None
        if isinstance(text, str) and text.startswith("Error: "):
            return text.removeprefix("Error: ")
    return None


def chat_completions_messages(
    messages: Sequence[Mapping[str, Any]],
    system_prompt: str | None,
    calls: CallIndex,
) -> list[dict[str, Any]]:
    """The conversation as Strands sends it to a chat-completions endpoint, plus per-call usage.

    Each native message is formatted on its own (Strands formats messages independently), which
    keeps track of which wire message an assistant turn became.
    """
    from strands.models.openai import OpenAIModel

    out: list[dict[str, Any]] = OpenAIModel.format_request_messages([], system_prompt)
    for message in messages:
        wire_message = {"role": message["role"], "content": message["content"]}
        formatted = OpenAIModel.format_request_messages([wire_message])  # pyright: ignore[reportArgumentType]
        entry = calls.get(id(message))
        if entry is not None and entry[0] is message:
            record = entry[1]
            target: dict[str, Any] | None = next(
                (m for m in formatted if m.get("role") == "assistant"), None
            )
            if target is None:  # an empty answer is dropped by the formatter; keep its usage
                target = {"role": "assistant", "content": ""}
                formatted.insert(0, target)
            record.annotate(target)
        out.extend(formatted)
    return out


# The public SDK 0.3 name of the same class, so code that imported it keeps working.
StrandsAgentSampleSource = StrandsSampleSource
StrandsSampleSource.__module__ = "osmosis_ai.rollout.integrations.agents.strands"
