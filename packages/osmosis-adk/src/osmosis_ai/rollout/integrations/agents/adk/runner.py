"""Running an ADK agent inside a rollout: :func:`run_agent` and :func:`tool_error_reply`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.adk.agents.run_config import (  # StreamingMode: the path ADK documents
    RunConfig,
    StreamingMode,  # pyright: ignore[reportPrivateImportUsage]
)
from google.adk.runners import InMemoryRunner
from google.genai import types

from osmosis_ai.rollout.integrations.spi import record_tool_error

from .sample import AdkSampleSource

if TYPE_CHECKING:
    from google.adk.agents import BaseAgent
    from google.adk.events import Event
    from google.adk.tools import BaseTool

_APP = "osmosis"
_USER = "osmosis"


async def run_agent(
    agent: BaseAgent,
    prompt: str | Sequence[Mapping[str, Any]] | types.Content,
    *,
    streaming: bool = False,
    state: Mapping[str, Any] | None = None,
    run_config: RunConfig | None = None,
) -> list[Event]:
    """Run ``agent`` on ``prompt`` in a fresh in-memory session and return the session's
    events; inside a rollout they become the sample's ``messages`` (for graders).

    ``prompt`` is the user's text, a chat prompt (``ctx.prompt``: its last user message is
    sent) or a genai ``Content``. ``streaming=True`` runs ADK in SSE streaming mode (the model
    then streams from the policy); ``run_config`` is ADK's own (``max_llm_calls``, ...) and
    ``state`` the session's initial state (an instruction provider can read it). A tool that
    raises ends the run with that error unless the agent has
    ``on_tool_error_callback=tool_error_reply``.
    """
    runner = InMemoryRunner(agent=agent, app_name=_APP)
    session = await runner.session_service.create_session(
        app_name=_APP, user_id=_USER, state=dict(state or {})
    )
    config = run_config.model_copy() if run_config is not None else RunConfig()
    if streaming:
        config.streaming_mode = StreamingMode.SSE
    async for _ in runner.run_async(
        user_id=_USER, session_id=session.id, new_message=_user_content(prompt), run_config=config
    ):
        pass
    done = await runner.session_service.get_session(
        app_name=_APP, user_id=_USER, session_id=session.id
    )
    events = list(done.events) if done is not None else []
    source = AdkSampleSource.for_rollout()  # None outside a rollout
    if source is not None:
        source.record_events(events)
    return events


def _user_content(prompt: str | Sequence[Mapping[str, Any]] | types.Content) -> types.Content:
    if isinstance(prompt, types.Content):
        return prompt
    if not isinstance(prompt, str):
        users = [m for m in prompt if m.get("role") == "user"]
        if not users:
            raise ValueError(
                "run_agent(prompt=...) got chat messages without a user message; pass the "
                "user's text, a list with a {'role': 'user', 'content': ...} message, or a "
                "google.genai types.Content"
            )
        prompt = str(users[-1].get("content") or "")
    return types.Content(role="user", parts=[types.Part.from_text(text=prompt)])


def tool_error_reply(
    tool: BaseTool, args: dict[str, Any], tool_context: Any, error: Exception
) -> dict[str, Any]:
    """An ``on_tool_error_callback`` for ``LlmAgent``: records the tool error as a fact of the
    rollout (counted per row, never graded as an answer) and lets the model read
    ``{"error": "<Type>: <message>"}`` instead of ending the run."""
    call_id = getattr(tool_context, "function_call_id", None)
    return {"error": record_tool_error(tool.name, error, call_id=call_id)}
