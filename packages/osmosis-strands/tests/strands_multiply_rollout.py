"""A multiply rollout written exactly like the public SDK's Strands template.

Module-level config holding ``OsmosisRolloutModel(params=...)`` and the tools, a workflow that
builds ``OsmosisStrandsAgent(name=..., model=config.model, tools=config.tools,
messages=ctx.prompt, callback_handler=None)`` and loops ``invoke_async()``, and a grader reading
``ctx.sample.messages[-1]``. The tests import it unchanged, as a rollout project would be.
"""

from __future__ import annotations

import re
from typing import Any

from strands import tool
from strands.agent.agent_result import AgentResult
from strands.models.model import Model

from osmosis_ai.rollout.agent_workflow import AgentWorkflow
from osmosis_ai.rollout.context import AgentWorkflowContext, GraderContext
from osmosis_ai.rollout.grader import Grader
from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel
from osmosis_ai.rollout.integrations.agents.strands import OsmosisStrandsAgent as StrandsAgent
from osmosis_ai.rollout.types import AgentWorkflowConfig, GraderConfig

_SOLUTION = re.compile(r"####\s*([-+]?\d*\.?\d+)")


def extract_solution(text: str) -> str | None:
    match = _SOLUTION.search(text)
    return match.group(1) if match else None


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers and return the product."""
    return a * b


class MultiplyAgentWorkflowConfig(AgentWorkflowConfig):
    name: str = "MultiplyAgentWorkflow"
    description: str | None = "Multiply two numbers using Strands"
    model: Model
    tools: Any


multiply_workflow_config = MultiplyAgentWorkflowConfig(
    model=OsmosisRolloutModel(params={"temperature": 1.0, "top_p": 1.0, "max_tokens": 512}),
    tools=[multiply],
)


class MultiplyWorkflow(AgentWorkflow):
    async def check_done(self, result: AgentResult) -> bool:
        content = result.message.get("content", [])
        if not any("toolUse" in block for block in content):
            return True
        text = next((block for block in content if block.get("text")), None)
        return text is not None and extract_solution(text.get("text", "")) is not None

    async def run(self, ctx: AgentWorkflowContext) -> None:
        config = ctx.config
        if config is None:
            raise ValueError("MultiplyWorkflow requires a workflow config")
        agent = StrandsAgent(
            name="multiply",
            model=config.model,
            tools=config.tools,
            messages=ctx.prompt,
            callback_handler=None,
        )
        for _ in range(8):
            result = await agent.invoke_async()
            if await self.check_done(result):
                break


class MultiplyGraderConfig(GraderConfig):
    name: str = "MultiplyGrader"


class MultiplyGrader(Grader):
    def compute_reward(self, solution: str, ground_truth: str) -> float:
        extracted = extract_solution(solution)
        if extracted is None:
            return 0.0
        try:
            return 1.0 if abs(float(extracted) - float(ground_truth)) < 1e-2 else 0.0
        except ValueError:
            return 0.0

    async def grade(self, ctx: GraderContext) -> None:
        sample = ctx.sample
        if sample is None:
            raise ValueError("No rollout sample to grade")
        content = sample.messages[-1].get("content", "") if sample.messages else ""
        if isinstance(content, list):
            content = next((block["text"] for block in content if "text" in block), "")
        ctx.set_reward(self.compute_reward(content, ctx.label or ""))


SYSTEM_PROMPT = "You are a calculator. Use the multiply tool, then answer with #### <product>."


def multiply_prompt(a: int, b: int) -> list[dict[str, Any]]:
    """A dataset row's prompt: a system message and a string-content user message."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"What is {a} times {b}?"},
    ]
