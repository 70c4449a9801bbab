"""Workflows that offer the real model a tool with ``tool_choice: "auto"``, non-streaming:
llama-cpp-python's ``chatml-function-calling`` format then lets the model call it for real."""

from __future__ import annotations

from typing import Any

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext

SYSTEM = "You are a calculator. Always call the `multiply` tool to multiply numbers."


def _multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class OpenAIAgentsToolWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        from agents import ModelSettings, Runner, function_tool

        from osmosis_ai.rollout.integrations.agents.openai_agents import (
            OsmosisAgent,
            OsmosisMemorySession,
            OsmosisRolloutModel,
        )

        agent = OsmosisAgent(
            name="calculator",
            instructions=SYSTEM,
            model=OsmosisRolloutModel(),
            tools=[function_tool(_multiply, name_override="multiply")],
            model_settings=ModelSettings(tool_choice="auto", max_tokens=96, temperature=0.0),
        )
        await Runner.run(
            agent, ctx.prompt[-1]["content"], session=OsmosisMemorySession(), max_turns=4
        )


class StrandsToolWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
        from strands import tool

        from osmosis_ai.rollout.integrations.agents.strands import (
            OsmosisRolloutModel,
            OsmosisStrandsAgent,
        )

        params = {"max_tokens": 96, "temperature": 0, "tool_choice": "auto"}
        model = OsmosisRolloutModel(stream=False, params=params)

        @tool(name="multiply")
        def multiply(a: int, b: int) -> int:
            """Multiply two integers."""
            # Strands has no turn limit, and at temperature 0 with tool_choice "auto" this
            # model calls the tool forever: after the first call, let it answer.
            model.update_config(params={k: v for k, v in params.items() if k != "tool_choice"})
            return _multiply(a, b)

        agent = OsmosisStrandsAgent(
            model=model, tools=[multiply], system_prompt=SYSTEM, callback_handler=None
        )
        await agent.invoke_async(ctx.prompt[-1]["content"])


WORKFLOWS: dict[str, type[AgentWorkflow]] = {
    "openai-agents": OpenAIAgentsToolWorkflow,
    "strands": StrandsToolWorkflow,
}
