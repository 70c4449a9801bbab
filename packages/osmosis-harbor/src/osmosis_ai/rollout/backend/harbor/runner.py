"""The in-sandbox runner: runs the rollout's ``AgentWorkflow`` (``agent``) or SDK ``Grader``
(``grade``) inside the task environment.

This file is copied verbatim into every bundle wheel (as ``<bundle package>/runner.py``) and is
started as ``python -m <bundle package> agent|grade``. It therefore imports nothing but the
standard library at module level and ``osmosis_ai`` core inside functions: the sandbox needs
``osmosis-core`` and the rollout's own dependencies, never Harbor.

File contract (sandbox paths):

- ``/logs/agent/osmosis_input.json``: ``{rollout_id, prompt, metadata}``, written by the harness
  agent. No label (the agent must not see the ground truth) and no key.
- ``OSMOSIS_CHAT_COMPLETIONS_URL``, ``OSMOSIS_API_KEY``, ``OSMOSIS_ROLLOUT_ID``: the policy
  endpoint, read by ``RolloutContext`` (environment variables, never files, so the key is not
  written anywhere).
- ``/logs/agent/osmosis_result.json``: ``{status, sample?, err_message?, err_category?}``.
- ``/tests/osmosis/grader_input.json``: ``{rollout_id, prompt, label, metadata}``, uploaded by
  Harbor with the tests only after the agent has finished.
- ``/logs/verifier/reward.json``: ``{"reward": x}`` (Harbor's reward contract), or
  ``/logs/verifier/osmosis_grader_error.json`` when the grader fails.
- ``ctx.artifacts_dir`` is ``/logs/artifacts`` (collected by Harbor into the trial dir).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

AGENT_INPUT = "/logs/agent/osmosis_input.json"
AGENT_RESULT = "/logs/agent/osmosis_result.json"
AGENT_TRAJECTORY = "/logs/agent/trajectory.json"
GRADER_INPUT = "/tests/osmosis/grader_input.json"
REWARD_FILE = "/logs/verifier/reward.json"
GRADER_ERROR = "/logs/verifier/osmosis_grader_error.json"
ARTIFACTS_DIR = "/logs/artifacts"
SPEC_FILE = "spec.json"


def _path(env_name: str, default: str) -> Path:
    # Overridable so the runner can be exercised outside a sandbox.
    return Path(os.environ.get(env_name, default))


def _import(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _load_config(spec: dict[str, Any] | None) -> Any:
    if spec is None:
        return None
    if spec["kind"] == "import":
        return _import(spec["path"])
    cls = _import(spec["class"])
    return cls.model_validate(spec["data"])


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, allow_nan=False))
    tmp.replace(path)


def _sample_payload(sample: Any) -> dict[str, Any]:
    safe = sample.json_safe_copy() if hasattr(sample, "json_safe_copy") else sample
    return safe.model_dump(mode="json")


async def run_agent(spec: dict[str, Any]) -> int:
    from osmosis_ai.rollout.agent_workflow import coerce_output
    from osmosis_ai.rollout.context import AgentWorkflowContext, RolloutContext
    from osmosis_ai.rollout.errors import categorize_exception, describe_exception
    from osmosis_ai.rollout.types.sample import RolloutSample

    result_path = _path("OSMOSIS_AGENT_RESULT", AGENT_RESULT)
    payload = json.loads(_path("OSMOSIS_AGENT_INPUT", AGENT_INPUT).read_text())
    artifacts = _path("OSMOSIS_ARTIFACTS_DIR", ARTIFACTS_DIR)
    try:
        workflow_cls = _import(spec["workflow"])
        config = _load_config(spec.get("workflow_config"))
        workflow = workflow_cls(config)
        with RolloutContext(rollout_id=payload.get("rollout_id") or "") as rollout:
            ctx = AgentWorkflowContext(
                prompt=payload["prompt"],
                config=config,
                metadata=payload.get("metadata"),
                artifacts_dir=artifacts if artifacts.is_dir() else None,
            )
            output = coerce_output(await workflow.run(ctx))
            if output is not None and output.messages is not None:
                sample: Any = RolloutSample(messages=output.messages, metrics=output.metrics)
            else:
                sample = await rollout.get_sample()
        result: dict[str, Any] = {"status": "success", "sample": None}
        if sample is not None:
            result["sample"] = _sample_payload(sample)
    except Exception as exc:
        result = {
            "status": "failure",
            "err_category": str(categorize_exception(exc)),
            "err_message": describe_exception(exc),
        }
    _write_json(result_path, result)
    return 0


def _sample_from_atif(path: Path, prompt: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Chat messages from a native agent's ATIF trajectory (best effort)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    messages = [dict(m) for m in prompt]
    roles = {"agent": "assistant", "user": "user", "system": "system"}
    for step in doc.get("steps") or []:
        text = step.get("message")
        if isinstance(text, list):
            text = "".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
        if text:
            messages.append({"role": roles.get(step.get("source"), "user"), "content": str(text)})
    return messages


async def run_grader(spec: dict[str, Any]) -> int:
    from osmosis_ai.rollout.context import GraderContext
    from osmosis_ai.rollout.errors import categorize_exception, describe_exception
    from osmosis_ai.rollout.types.sample import RolloutSample

    payload = json.loads(_path("OSMOSIS_GRADER_INPUT", GRADER_INPUT).read_text())
    result_path = _path("OSMOSIS_AGENT_RESULT", AGENT_RESULT)
    reward_path = _path("OSMOSIS_REWARD_FILE", REWARD_FILE)
    error_path = _path("OSMOSIS_GRADER_ERROR", GRADER_ERROR)
    artifacts = _path("OSMOSIS_ARTIFACTS_DIR", ARTIFACTS_DIR)
    label = payload.get("label")
    sample: Any = None
    if result_path.is_file():
        agent_result = json.loads(result_path.read_text())
        if agent_result.get("sample") is not None:
            sample = RolloutSample.model_validate(agent_result["sample"])
    else:
        messages = _sample_from_atif(
            _path("OSMOSIS_AGENT_TRAJECTORY", AGENT_TRAJECTORY), payload.get("prompt") or []
        )
        sample = RolloutSample(
            messages=messages if messages is not None else payload.get("prompt") or []
        )
    if sample is None:
        # Nothing to grade: the rollout produced no sample. Reward 0 is the documented outcome.
        _write_json(reward_path, {"reward": 0.0})
        return 0
    sample.label = label
    try:
        grader_cls = _import(spec["grader"])
        config = _load_config(spec.get("grader_config"))
        ctx = GraderContext(
            label=label,
            sample=sample,
            metadata=payload.get("metadata"),
            artifacts_dir=artifacts if artifacts.is_dir() else None,
        )
        await grader_cls(config).grade(ctx)
        if sample.reward is None:
            raise ValueError("the grader returned without calling ctx.set_reward(reward)")
        _write_json(reward_path, {"reward": float(sample.reward)})
        return 0
    except Exception as exc:
        _write_json(
            error_path,
            {
                "err_category": str(categorize_exception(exc)),
                "err_message": describe_exception(exc),
            },
        )
        return 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ("agent", "grade"):
        print("usage: python -m <bundle> agent|grade", file=sys.stderr)
        return 2
    package_dir = Path(__file__).resolve().parent
    spec = json.loads((package_dir / SPEC_FILE).read_text())
    # The rollout project's modules resolve exactly as they do on the host.
    sys.path.insert(0, str(package_dir / "project"))
    if args[0] == "agent":
        return asyncio.run(run_agent(spec))
    return asyncio.run(run_grader(spec))
