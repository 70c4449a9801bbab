"""``osmosis benchmark run``: two agents x three Harbor tasks, each attempt a real Harbor trial in
the local (Docker-free) sandbox, then the leaderboard checked by hand.

The agents are one rollout (an ``AgentWorkflow`` that asks the policy once and writes the
reply to ``/app/answer.txt``) with two models of one scripted policy: ``strong`` always gives
the task's word; ``weak`` gives it once, on its first attempt of the second task, and a wrong
word everywhere else. Each task's own ``tests/test.sh`` decides the reward.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from eval_support import Cli

from osmosis_ai.testing import Reply, ScriptedPolicyServer

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("harbor") is None or shutil.which("unshare") is None,
    reason="needs harbor and util-linux (the local sandbox)",
)
WORDS = {"t1-alpha": "alpha", "t2-bravo": "bravo", "t3-charlie": "charlie"}

MAIN = """\
from pathlib import Path

from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, environment_config_from_env
from osmosis_ai.rollout.server import create_rollout_server

backend = HarborBackend(
    orchestrator=TrialQueue(n_concurrent=6, retry_config=RetryConfig(max_retries=0)),
    tasks_dir=Path(__file__).parent / "task",
    agent="answer_agent:AnswerWorkflow",
    environment_config=environment_config_from_env(),
)
app = create_rollout_server(backend=backend)
"""
AGENT = '''\
"""Ask the policy once; its reply is the answer the task's verifier checks."""

import json
import urllib.request
from pathlib import Path

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext
from osmosis_ai.rollout.context import get_rollout_context


class AnswerWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> list:
        rollout = get_rollout_context()
        messages = [dict(m) for m in ctx.prompt]
        request = urllib.request.Request(
            f"{rollout.chat_completions_url}/chat/completions",
            data=json.dumps({"model": "policy", "messages": messages}).encode(),
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {rollout.api_key or ''}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            reply = json.loads(response.read())["choices"][0]["message"]
        Path("/app/answer.txt").write_text((reply.get("content") or "").strip() + "\\n")
        return [*messages, reply]
'''


def _task(root: Path, name: str, word: str) -> None:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
    (root / "task.toml").write_text(
        f'schema_version = "1.3"\n\n[task]\nname = "bench/{name}"\n\n[metadata]\n'
        'category = "words"\n\n[environment]\nworkdir = "/app"\n\n[agent]\ntimeout_sec = 120\n\n'
        "[verifier]\ntimeout_sec = 60\n"
    )
    (root / "instruction.md").write_text(f"Reply with exactly one word: {word}\n")
    test = root / "tests" / "test.sh"
    test.parent.mkdir()
    test.write_text(
        f"#!/bin/bash\nif grep -qx {word} /app/answer.txt 2>/dev/null; then echo 1 > "
        "/logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    test.chmod(0o755)


def _workspace(root: Path, policy_url: str) -> Path:
    rollout = root / "rollouts" / "answer"
    rollout.mkdir(parents=True)
    (rollout / "main.py").write_text(MAIN)
    (rollout / "answer_agent.py").write_text(AGENT)
    _task(rollout / "task", "template", "unused")
    for name, word in WORDS.items():
        _task(root / "tasks" / name, name, word)
    config = root / "configs" / "benchmark" / "words.toml"
    config.parent.mkdir(parents=True)
    agents = "".join(
        f'\n[[agents]]\nname = "{model}"\nrollout = "answer"\n\n[agents.model]\n'
        f'type = "endpoint"\nbase_url = "{policy_url}"\nmodel = "{model}"\n'
        for model in ("weak", "strong")
    )
    config.write_text(
        '[experiment]\nbenchmark = "words"\n\n[tasks]\ntask_set = "../../tasks"\n\n'
        "[execution]\nattempts_per_task = 2\nmax_concurrent_attempts = 6\n" + agents
    )
    return config


@pytest.fixture
def word_policy() -> Iterator[ScriptedPolicyServer]:
    calls: Counter[tuple[str, str]] = Counter()

    def respond(body: Mapping[str, Any]) -> Reply:
        text = str((body.get("messages") or [{}])[-1].get("content") or "")
        found = re.search(r"one word: (\w+)", text)
        if found is None:  # the controller's preflight probe
            return Reply(content="ok")
        word, model = found.group(1), str(body.get("model"))
        calls[(model, word)] += 1
        right = model == "strong" or (word == "bravo" and calls[(model, word)] == 1)
        return Reply(content=word if right else "wrong")

    with ScriptedPolicyServer(respond) as server:
        yield server


def test_two_agents_three_harbor_tasks_leaderboard_and_tie_rule(
    cli: Cli, tmp_path: Path, word_policy: ScriptedPolicyServer
) -> None:
    ws = tmp_path / "ws"
    config = _workspace(ws, word_policy.url)
    sandbox_tmp = tmp_path / "sandbox-tmp"
    sandbox_tmp.mkdir()
    env = {"OSMOSIS_HARBOR_ENV": "local", "TMPDIR": str(sandbox_tmp)}
    result = cli.run("--json", "benchmark", "run", str(config), "--name", "words", cwd=ws,
                     env=env, timeout=900)  # fmt: skip
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert resource["tasks"] == ["bench/t1-alpha", "bench/t2-bravo", "bench/t3-charlie"]
    board = {entry["agent"]: entry for entry in resource["leaderboard"]}
    strong, weak = board["strong"], board["weak"]
    assert [e["agent"] for e in resource["leaderboard"]] == ["strong", "weak"]
    # strong: 6 of 6 attempts passed.
    assert (strong["passed"], strong["attempts"]) == (6, 6)
    assert strong["pass_at_1"]["value"] == 1.0
    assert [p["value"] for p in strong["pass_at_k"]] == [1.0, 1.0]
    # weak: t2 passed once of 2, t1 and t3 never: pass@1 = mean(0, 1/2, 0) = 1/6;
    # pass@2 of t2 = 1 - C(1,2)/C(2,2) = 1, so pass@2 = mean(0, 1, 0) = 1/3.
    assert [(t["task"], t["passed"]) for t in weak["tasks"]] == [
        ("bench/t1-alpha", 0), ("bench/t2-bravo", 1), ("bench/t3-charlie", 0)]  # fmt: skip
    assert weak["pass_at_1"]["value"] == pytest.approx(1 / 6)
    assert weak["pass_at_k"][1]["value"] == pytest.approx(1 / 3)
    # Wilson 95 %, n = 6, z = 1.959964: strong [0.6097, 1], weak [0.0301, 0.5635]
    z2, n = 1.959963984540054**2, 6
    strong_low = (1 + z2 / (2 * n) - 1.959963984540054 * (z2 / (4 * n * n)) ** 0.5) / (1 + z2 / n)
    assert strong["pass_at_1"]["ci_low"] == pytest.approx(strong_low)
    assert strong["pass_at_1"]["ci_low"] == pytest.approx(0.6097, abs=1e-4)
    assert weak["pass_at_1"]["ci_high"] == pytest.approx(0.5635, abs=1e-4)
    # the tie rule: weak's upper bound (0.5635) is below strong's lower bound (0.6097): no
    # overlap, so weak is ranked on its own (1 + one agent with a higher pass@1 = #2).
    assert (strong["rank"], strong["tied"], weak["rank"], weak["tied"]) == (1, False, 2, False)
    assert "#1    strong  pass@1 100.0% (61.0%-100.0%)  pass@2 100.0%" in _plain(resource)
    page = Path(resource["html"]).read_text()
    assert '<table class="grid" id="leaderboard">' in page
    assert "16.7%" in page  # weak's pass@1
    saved = json.loads((Path(resource["run_dir"]) / "benchmark.json").read_text())
    assert saved["leaderboard"] == resource["leaderboard"]
    assert list(sandbox_tmp.glob("osmosis-localns-*")) == []  # every sandbox torn down
    calls = len(word_policy_calls(word_policy))
    assert calls == 12  # 2 agents x 3 tasks x 2 attempts, one policy call each
    # the same name again: each agent's eval run is finished, so nothing runs; --plain prints
    # the leaderboard lines
    again = cli.run("--plain", "benchmark", "run", str(config), "--name", "words", cwd=ws,
                    env=env, timeout=300)  # fmt: skip
    assert again.code == 0, again.stderr
    assert "#2    weak  pass@1 16.7% (3.0%-56.4%)  pass@2 33.3%" in again.stdout
    assert len(word_policy_calls(word_policy)) == calls


def word_policy_calls(policy: ScriptedPolicyServer) -> list[Any]:
    """The word requests the policy answered (not the controller's probes)."""
    return [r for r in policy.requests if "one word:" in json.dumps(r.body)]


def _plain(resource: dict[str, Any]) -> str:
    from osmosis_cli.platform.benchmarks import leaderboard_lines

    return "\n".join(leaderboard_lines(resource["leaderboard"]))


def test_a_harness_only_agent_is_refused_locally_with_the_fix(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config = _workspace(ws, "http://127.0.0.1:9")
    text = config.read_text().replace('rollout = "answer"\n', 'harness = "codex"\n', 1)
    config.write_text(text)
    result = cli.run("--json", "benchmark", "run", str(config), cwd=ws)
    assert result.code == 1
    error = result.error()
    assert error["code"] == "VALIDATION"
    assert 'add rollout = "<folder under rollouts/>"' in error["message"]
    assert not (ws / ".osmosis").exists()  # nothing ran
