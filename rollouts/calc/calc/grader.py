"""The grader: turn the sample (the conversation) into one reward."""

from osmosis_ai.rollout import Grader, GraderContext


class MyGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        if ctx.sample is None:  # the workflow produced nothing to grade
            return
        # ctx.label: the dataset row's ground truth; ctx.sample.messages: the conversation.
        # Compare them and set a finite reward, e.g. 1.0 for correct and 0.0 otherwise.
        ctx.set_reward(0.0)
