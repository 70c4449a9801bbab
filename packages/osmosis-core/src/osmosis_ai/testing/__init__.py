"""``osmosis_ai.testing``: test rollouts offline against a scripted policy (extra ``server``).

The tools:

* :class:`ScriptedPolicyServer` (:mod:`osmosis_ai.testing.policy_server`) — a real
  OpenAI-compatible chat-completions server on ``127.0.0.1``: scripted turns (text, tool calls,
  HTTP errors, delays) or a callable deciding each reply, streaming and non-streaming, with a
  log of every request. Built-in policies: ``"multiply"`` (:func:`multiply_solver`),
  ``"echo"``, ``"instant"``.
* :func:`run_rollout` (:mod:`osmosis_ai.testing.run`) — runs one workflow (and grader) end to
  end through :class:`~osmosis_ai.rollout.LocalBackend` against that server and returns a
  :class:`RolloutRunResult` (status, sample, reward, error category and message);
  :func:`run_environment_row` runs one row of a loaded environment (verifiers, Inspect,
  Reasoning Gym) the same way.
* judge helpers (:mod:`osmosis_ai.testing.judge`) — :func:`scripted_judge`,
  :func:`judge_verdict`, :func:`malformed_verdict`: the same server playing an LLM judge.
* reply scripts (:mod:`osmosis_ai.testing.script`) — :func:`load_reply_script` turns a JSONL
  file of replies per dataset row or prompt (or a Python ``respond(body)``) into a policy for
  the server; ``osmosis eval run --model mock --mock-script FILE`` uses the same loader.
* :class:`LocalModelServer` (:mod:`osmosis_ai.testing.local_model`) — a *real* model
  (SmolLM2-135M-Instruct) on llama.cpp's OpenAI-compatible server on ``127.0.0.1``, offline
  (extra ``local-model``): what a strict real server accepts, real tokens, prose answers.
* :func:`serve_app` (:mod:`osmosis_ai.testing.serving`) — serves an ASGI app, such as your
  ``create_rollout_server(...)``, under real uvicorn on ``127.0.0.1`` and yields its base URL.
* multiply-task checks (:mod:`osmosis_ai.testing.multiply`) — :func:`multiply_prompt`,
  :func:`check_multiply_rollout` (one rollout, reward 1), :func:`run_multiply_rollouts` (many
  at once), :func:`tool_call_arguments`, :func:`check_policy_http_error` (a policy's HTTP error
  fails the rollout as ``http_error``), :func:`check_rollouts_in_worker_processes` (a rollout
  project served with worker processes).
* a pytest plugin (:mod:`osmosis_ai.testing.pytest_plugin`, opt in with
  ``pytest_plugins = ["osmosis_ai.testing.pytest_plugin"]`` in a conftest.py) — the fixtures
  ``osmosis_home`` (autouse: a temporary ``OSMOSIS_HOME``), ``multiply_policy`` and
  ``rollout_server``.

A complete offline test::

    from osmosis_ai.testing import ScriptedPolicyServer, run_rollout

    async def test_my_rollout(tmp_path, monkeypatch):
        monkeypatch.setenv("OSMOSIS_HOME", str(tmp_path))
        async with ScriptedPolicyServer("multiply") as policy:
            result = await run_rollout(
                MyWorkflow, MyGrader, prompt=[{"role": "user", "content": "6 * 7?"}],
                label="42", policy=policy,
            )
        assert result.status == "success" and result.reward == 1.0

Requires FastAPI and uvicorn: ``pip install 'osmosis-ai[server]'`` (or
``'osmosis-core[server]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ModuleNotFoundError as _exc:
    raise ModuleNotFoundError(
        f"osmosis_ai.testing requires {_exc.name or 'fastapi/uvicorn'}, which is not installed. "
        'Install the server extra with: pip install "osmosis-ai[server]" '
        '(or "osmosis-core[server]")',
        name=_exc.name,
    ) from _exc

_P = __name__
_EXPORTS = {
    "ScriptedPolicyServer": f"{_P}.policy_server",
    "RecordedRequest": f"{_P}.policy_server",
    "rollout_scope": f"{_P}.policy_server",
    "Reply": f"{_P}.replies",
    "ToolCall": f"{_P}.replies",
    "ErrorReply": f"{_P}.replies",
    "text_reply": f"{_P}.replies",
    "tool_call_reply": f"{_P}.replies",
    "error_reply": f"{_P}.replies",
    "delayed": f"{_P}.replies",
    "reply_from_json": f"{_P}.replies",
    "load_reply_script": f"{_P}.script",
    "ReplyScript": f"{_P}.script",
    "ReplyScriptError": f"{_P}.script",
    "multiply_solver": f"{_P}.responders",
    "echo": f"{_P}.responders",
    "instant": f"{_P}.responders",
    "instant_text": f"{_P}.responders",
    "run_rollout": f"{_P}.run",
    "run_rollout_sync": f"{_P}.run",
    "run_environment_row": f"{_P}.run",
    "RolloutRunResult": f"{_P}.run",
    "serve_app": f"{_P}.serving",
    "judge_verdict": f"{_P}.judge",
    "malformed_verdict": f"{_P}.judge",
    "scripted_judge": f"{_P}.judge",
    "candidate_text": f"{_P}.judge",
    "LocalModelServer": f"{_P}.local_model",
    "LocalModelError": f"{_P}.local_model",
    "LocalModelUnavailable": f"{_P}.local_model",
    "MultiplyPrompt": f"{_P}.multiply",
    "multiply_prompt": f"{_P}.multiply",
    "run_multiply_rollouts": f"{_P}.multiply",
    "tool_call_arguments": f"{_P}.multiply",
    "check_rollouts_in_worker_processes": f"{_P}.multiply",
    "check_multiply_rollout": f"{_P}.multiply",
    "check_policy_http_error": f"{_P}.multiply",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from osmosis_ai.testing.judge import candidate_text as candidate_text
    from osmosis_ai.testing.judge import judge_verdict as judge_verdict
    from osmosis_ai.testing.judge import malformed_verdict as malformed_verdict
    from osmosis_ai.testing.judge import scripted_judge as scripted_judge
    from osmosis_ai.testing.local_model import LocalModelError as LocalModelError
    from osmosis_ai.testing.local_model import LocalModelServer as LocalModelServer
    from osmosis_ai.testing.local_model import LocalModelUnavailable as LocalModelUnavailable
    from osmosis_ai.testing.multiply import MultiplyPrompt as MultiplyPrompt
    from osmosis_ai.testing.multiply import check_multiply_rollout as check_multiply_rollout
    from osmosis_ai.testing.multiply import check_policy_http_error as check_policy_http_error
    from osmosis_ai.testing.multiply import (
        check_rollouts_in_worker_processes as check_rollouts_in_worker_processes,
    )
    from osmosis_ai.testing.multiply import multiply_prompt as multiply_prompt
    from osmosis_ai.testing.multiply import run_multiply_rollouts as run_multiply_rollouts
    from osmosis_ai.testing.multiply import tool_call_arguments as tool_call_arguments
    from osmosis_ai.testing.policy_server import RecordedRequest as RecordedRequest
    from osmosis_ai.testing.policy_server import ScriptedPolicyServer as ScriptedPolicyServer
    from osmosis_ai.testing.policy_server import rollout_scope as rollout_scope
    from osmosis_ai.testing.replies import ErrorReply as ErrorReply
    from osmosis_ai.testing.replies import Reply as Reply
    from osmosis_ai.testing.replies import ToolCall as ToolCall
    from osmosis_ai.testing.replies import delayed as delayed
    from osmosis_ai.testing.replies import error_reply as error_reply
    from osmosis_ai.testing.replies import reply_from_json as reply_from_json
    from osmosis_ai.testing.replies import text_reply as text_reply
    from osmosis_ai.testing.replies import tool_call_reply as tool_call_reply
    from osmosis_ai.testing.responders import echo as echo
    from osmosis_ai.testing.responders import instant as instant
    from osmosis_ai.testing.responders import instant_text as instant_text
    from osmosis_ai.testing.responders import multiply_solver as multiply_solver
    from osmosis_ai.testing.run import RolloutRunResult as RolloutRunResult
    from osmosis_ai.testing.run import run_environment_row as run_environment_row
    from osmosis_ai.testing.run import run_rollout as run_rollout
    from osmosis_ai.testing.run import run_rollout_sync as run_rollout_sync
    from osmosis_ai.testing.script import ReplyScript as ReplyScript
    from osmosis_ai.testing.script import ReplyScriptError as ReplyScriptError
    from osmosis_ai.testing.script import load_reply_script as load_reply_script
    from osmosis_ai.testing.serving import serve_app as serve_app
