"""The agent. `run` gets the prompt and must produce the conversation to be graded.

Fill in `run`: call the policy through an integration (Strands: `OsmosisStrandsAgent` with
`OsmosisRolloutModel`; OpenAI Agents: `OsmosisAgent` + `OsmosisMemorySession`), or call
`ctx`'s chat-completions endpoint yourself and return the messages. See
`osmosis template list` for complete examples.
"""

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, AgentWorkflowContext


class MyAgentWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict]:
        # ctx.prompt: the initial messages, e.g. [{"role": "user", "content": "..."}]
        # ctx.metadata: the dataset row's metadata; ctx.artifacts_dir: where to write files.
        raise NotImplementedError("write the agent of {{name}} in {{package}}/workflow.py")
