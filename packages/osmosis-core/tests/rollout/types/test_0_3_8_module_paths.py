"""Names osmosis-ai 0.3.8 defined in modules whose contents moved (issue 38's public-surface
audit): a fresh interpreter imports them from 0.3.8's paths and gets this SDK's objects."""

from __future__ import annotations

import subprocess
import sys

CODE = """
from osmosis_ai.rollout.types.sample import (
    ExecutionOutcome, ExecutionRequest, ExecutionResult, MessageDict, RolloutErrorCategory,
    RolloutStatus, SampleMessage,
)
from osmosis_ai.rollout.types.output import AgentWorkflowOutput, Messages, coerce_output
from osmosis_ai.rollout.context import API_KEY_ENV, CHAT_COMPLETIONS_URL_ENV, ROLLOUT_ID_ENV
import osmosis_ai.rollout.agent_workflow as workflow
import osmosis_ai.rollout.types as types
import osmosis_ai.rollout.types.sample as sample

assert (ExecutionOutcome, ExecutionRequest, ExecutionResult) == (
    types.ExecutionOutcome, types.ExecutionRequest, types.ExecutionResult)
assert (RolloutStatus, RolloutErrorCategory) == (types.RolloutStatus, types.RolloutErrorCategory)
assert RolloutStatus("grading") is RolloutStatus.GRADING
assert MessageDict == types.MessageDict
assert coerce_output is workflow.coerce_output
assert coerce_output([{"role": "user", "content": "hi"}]) == AgentWorkflowOutput(
    messages=[{"role": "user", "content": "hi"}])
assert coerce_output(None) is None
assert Messages == types.Messages and SampleMessage is not None
assert (CHAT_COMPLETIONS_URL_ENV, API_KEY_ENV, ROLLOUT_ID_ENV) == (
    "OSMOSIS_CHAT_COMPLETIONS_URL", "OSMOSIS_API_KEY", "OSMOSIS_ROLLOUT_ID")
try:
    sample.NoSuchName
except AttributeError as exc:
    assert "has no attribute 'NoSuchName'" in str(exc)
else:
    raise AssertionError("an unknown name resolved")
print("ok")
"""


def test_0_3_8_module_paths_resolve_in_a_fresh_interpreter() -> None:
    # Fresh: the re-exports are lazy to avoid import cycles, so the first import must work
    # without anything imported before it.
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr
