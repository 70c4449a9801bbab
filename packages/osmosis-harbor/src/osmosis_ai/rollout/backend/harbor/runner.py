"""The in-sandbox runner: runs the rollout's ``AgentWorkflow`` (``agent``) or SDK ``Grader``
(``grade``) inside the task environment, through core's one execution engine
(:mod:`osmosis_ai.rollout._execution`), so a workflow and grader give the same outcome here as
in ``LocalBackend``.

This file is copied verbatim into every bundle wheel (as ``<bundle package>/runner.py``, next to
``_sandbox_paths.py``) and is started as ``python -m <bundle package> agent|grade``. It
therefore imports nothing but the standard library and its sibling ``_sandbox_paths`` at module
level, and ``osmosis_ai`` core inside functions: the sandbox needs ``osmosis-core`` and the
rollout's own dependencies, never Harbor.

File contract (paths in :mod:`._sandbox_paths`):

- ``AGENT_INPUT``: ``{rollout_id, prompt, metadata}``, written by the harness agent. No label
  (the agent must not see the ground truth) and no key.
- ``OSMOSIS_CHAT_COMPLETIONS_URL``, ``OSMOSIS_API_KEY``, ``OSMOSIS_ROLLOUT_ID``: the policy
  endpoint, read by ``RolloutContext`` (environment variables, never files, so the key is not
  written anywhere).
- ``AGENT_RESULT``: the workflow phase, ``{status, sample?, err_message?, err_category?}``.
- ``GRADER_INPUT``: ``{rollout_id, prompt, label, metadata}``, uploaded by Harbor with the
  tests only after the agent has finished.
- ``GRADER_RESULT``: the grader phase in the same shape, and on success ``REWARD_JSON``
  (``{"reward": x}``, Harbor's reward contract; ``0.0`` stands in for a removed sample's
  missing reward, the backend reads the grader result, not this file).
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

from ._sandbox_paths import (
    AGENT_INPUT,
    AGENT_RESULT,
    AGENT_TRAJECTORY,
    ARTIFACTS_DIR,
    GRADER_INPUT,
    GRADER_RESULT,
    REWARD_JSON,
)

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
    from osmosis_ai.rollout.integrations.spi import write_atomic  # core, inside the function

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(payload, ensure_ascii=False, allow_nan=False))


def _result_payload(result: Any) -> dict[str, Any]:
    """An ``ExecutionResult`` as the JSON the backend reads back (``_outcome``)."""
    payload: dict[str, Any] = {"status": str(result.status), "sample": None}
    if result.sample is not None:
        payload["sample"] = result.sample.json_safe_copy().model_dump(mode="json")
    if result.err_message is not None:
        payload["err_message"] = result.err_message
    if result.err_category is not None:
        payload["err_category"] = str(result.err_category)
    if result.extra_fields:
        payload["extra_fields"] = result.extra_fields
    return payload


def _artifacts_dir() -> Path | None:
    artifacts = _path("OSMOSIS_ARTIFACTS_DIR", ARTIFACTS_DIR)
    return artifacts if artifacts.is_dir() else None


def _builder(spec: dict[str, Any], role: str) -> Any:
    """A zero-argument factory; import errors surface inside the engine's guard."""

    def build() -> Any:
        return _import(spec[role])(_load_config(spec.get(f"{role}_config")))

    return build


async def run_agent(spec: dict[str, Any]) -> int:
    from osmosis_ai.rollout.context import RolloutContext
    from osmosis_ai.rollout.integrations.spi import run_workflow_phase

    payload = json.loads(_path("OSMOSIS_AGENT_INPUT", AGENT_INPUT).read_text())
    with RolloutContext(rollout_id=payload.get("rollout_id") or "") as rollout:
        result = await run_workflow_phase(
            _builder(spec, "workflow"),
            prompt=payload["prompt"],
            metadata=payload.get("metadata"),
            label=None,  # the label reaches the sandbox only with the tests
            artifacts_dir=_artifacts_dir(),
            rollout=rollout,
        )
    _write_json(_path("OSMOSIS_AGENT_RESULT", AGENT_RESULT), _result_payload(result))
    return 0


def sample_from_atif(path: Path, prompt: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
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


def _workflow_sample(prompt: list[dict[str, Any]]) -> tuple[bool, Any]:
    """``(workflow succeeded, its sample)``: the runner's result, or a native agent's ATIF."""
    from osmosis_ai.rollout.types.sample import RolloutSample

    result_path = _path("OSMOSIS_AGENT_RESULT", AGENT_RESULT)
    if result_path.is_file():
        agent_result = json.loads(result_path.read_text())
        sample = agent_result.get("sample")
        ok = agent_result.get("status") == "success"
        return ok, RolloutSample.model_validate(sample) if sample is not None else None
    messages = sample_from_atif(_path("OSMOSIS_AGENT_TRAJECTORY", AGENT_TRAJECTORY), prompt)
    return True, RolloutSample(messages=messages if messages is not None else prompt)


async def run_grader(spec: dict[str, Any]) -> int:
    from osmosis_ai.rollout.integrations.spi import failure, run_grader_phase
    from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus

    payload = json.loads(_path("OSMOSIS_GRADER_INPUT", GRADER_INPUT).read_text())
    label = payload.get("label")
    ok, sample = _workflow_sample(payload.get("prompt") or [])
    if not ok:
        result = failure(RolloutErrorCategory.AGENT_ERROR, "the workflow failed; not graded")
    else:
        if sample is not None:
            sample.label = label
        result = await run_grader_phase(
            _builder(spec, "grader"),
            workflow_sample=sample,
            label=label,
            metadata=payload.get("metadata"),
            artifacts_dir=_artifacts_dir(),
        )
    _write_json(_path("OSMOSIS_GRADER_RESULT", GRADER_RESULT), _result_payload(result))
    if result.status != RolloutStatus.SUCCESS:
        return 1  # no reward file: Harbor records a verifier failure, never a reward
    reward = result.sample.reward if result.sample is not None else None
    _write_json(
        _path("OSMOSIS_REWARD_FILE", REWARD_JSON),
        {"reward": float(reward) if reward is not None else 0.0},
    )
    return 0


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
