"""Traces never leave the machine unless the user opts in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Runner, set_trace_processors, set_tracing_disabled
from agents.tracing import TracingProcessor, get_trace_provider

from osmosis_ai.rollout import RolloutContext
from osmosis_ai.rollout.integrations.agents.openai_agents import OsmosisAgent, OsmosisMemorySession
from osmosis_ai.rollout.integrations.agents.openai_agents.tracing import (
    TRACING_ENV,
    disable_trace_export_unless_opted_in,
)
from osmosis_ai.testing import ScriptedPolicyServer


class Recorder(TracingProcessor):
    """Stands in for the exporter: sees every trace the SDK would upload."""

    def __init__(self) -> None:
        self.traces: list[Any] = []
        self.spans: list[Any] = []

    def on_trace_start(self, trace: Any) -> None:
        self.traces.append(trace)

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        self.spans.append(span)

    def on_span_end(self, span: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """Replace the processors (including OpenAI's exporter) by a recorder; restore afterwards."""
    provider = get_trace_provider()
    processors = getattr(getattr(provider, "_multi_processor", None), "_processors", ())
    disabled = bool(getattr(provider, "_disabled", True))
    recorder = Recorder()
    set_trace_processors([recorder])
    yield recorder
    set_trace_processors(list(processors))
    set_tracing_disabled(disabled)


def test_importing_the_integration_disabled_tracing() -> None:
    # The package was imported by this test module, with whatever OPENAI_API_KEY the
    # environment has: the SDK's global provider must be disabled.
    assert getattr(get_trace_provider(), "_disabled", None) is True


async def test_a_rollout_produces_no_trace_even_with_an_openai_key(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-would-upload")
    monkeypatch.delenv(TRACING_ENV, raising=False)
    assert disable_trace_export_unless_opted_in() is True
    async with ScriptedPolicyServer(["hello"]) as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("r-t"), rollout_id="r-t"
        ):
            result = await Runner.run(OsmosisAgent(name="a"), "hi", session=OsmosisMemorySession())
    assert result.final_output == "hello"
    assert recorder.traces == []
    assert recorder.spans == []


async def test_opting_in_keeps_the_sdks_tracing(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRACING_ENV, "1")
    set_tracing_disabled(False)
    assert disable_trace_export_unless_opted_in() is False
    async with ScriptedPolicyServer(["hello"]) as policy:
        with RolloutContext(
            chat_completions_url=policy.chat_completions_url("r-t2"), rollout_id="r-t2"
        ):
            await Runner.run(OsmosisAgent(name="a"), "hi", session=OsmosisMemorySession())
    assert len(recorder.traces) == 1
    assert recorder.spans
