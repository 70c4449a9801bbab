"""The agent. `run` gets the prompt and must produce the conversation to be graded.

Fill in `run`: call the policy through an integration (Strands: `OsmosisStrandsAgent` with
`OsmosisRolloutModel`; OpenAI Agents: `OsmosisAgent` + `OsmosisMemorySession`), or call the
policy yourself with `ctx.policy.client()` (an `openai.AsyncOpenAI`) and return the messages
(the `multiply-local-plain` template). See `osmosis template list` for complete examples.
"""

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, AgentWorkflowContext


class MyAgentWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict]:
        # ctx.prompt: the initial messages, e.g. [{"role": "user", "content": "..."}]
        # ctx.metadata: the dataset row's metadata; ctx.artifacts_dir: where to write files.
        raise NotImplementedError("write the agent of calc in calc/workflow.py")
