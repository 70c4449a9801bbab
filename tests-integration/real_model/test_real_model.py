"""Every integration, the judge and the server against a real model on a real inference server.

SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible server (``--model local``), offline. The
model answers in prose and rarely solves anything: rewards may be anything. What is tested is
that nothing breaks: no row fails because of what osmosis sent or did, and what a real server
does differently from the scripted policy (strict request schemas, unsupported
``response_format``, no token ids, streams it cannot finish) is handled.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from eval_support import OSMOSIS, Cli, read_jsonl
from real_model_support import ARTIFACTS, TEMPLATES

from osmosis_ai.testing.pytest_plugin import built_once

ROWS = "8"
#: A 135M model can ramble until its context is full; 96 tokens keep each call under a second.
SHORT = ("--model-arg", "max_tokens=96")


def _eval(cli: Cli, workspace: Path, config: str, *args: str, timeout: float = 600) -> Any:
    """The run's ``--json`` resource; exit 0 (all rows succeeded) or 1 (some failed)."""
    result = cli.run("eval", "run", config, *args, "--json", cwd=workspace, timeout=timeout)
    assert result.code in (0, 1), result.stderr[-4000:]
    return result.json()["resource"]


#: Strands raises MaxTokensReachedException when a reply stops at finish_reason "length": the
#: framework's own rule for a model that hit its token cap (a rambling 135M model does), not
#: something osmosis sent or did.
STRANDS_LENGTH_STOP = "Model stopped generating due to maximum token limit"


def _own_failures(run: Path) -> list[dict[str, Any]]:
    """Failed rows (of the run folder ``run``) whose failure is not the model's own length stop
    under Strands."""
    rows = read_jsonl(run / "index.jsonl")
    return [
        r
        for r in rows
        if r["status"] == "failed"
        and not (r["error_type"] == "agent_error" and STRANDS_LENGTH_STOP in r["error_message"])
    ]


def _template_run(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, template: str
) -> tuple[Path, dict[str, Any]]:
    """``(run folder, --json resource)`` of the template's 8-row run on the real model, made
    once per pytest run in a workspace of its own: the template test checks it and the report
    test opens its report (with ``-n 2`` the other worker waits for it instead of a second run)."""

    def build(folder: Path) -> Path:
        root = folder / "ws"
        assert cli.run("init", str(root), cwd=folder).code == 0
        applied = cli.run("template", "apply", template, cwd=root)
        assert applied.code == 0, applied.stderr
        resource = _eval(
            cli, root, f"configs/eval/{template}.toml",
            "--model", "local", "--limit", ROWS, "--name", template, "--require-append-only",
            *SHORT,
        )  # fmt: skip
        run = root / ".osmosis" / "evals" / template
        (run / "test-resource.json").write_text(json.dumps(resource), encoding="utf-8")
        return run

    run = built_once(tmp_path_factory, f"real-model-run-{template}", build)
    return run, json.loads((run / "test-resource.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_template_runs_on_the_real_model_with_no_failure(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory, template: str
) -> None:
    """8 rows each: no http_error, no internal_error, no failure at all but Strands' own
    length stop, every transcript append-only (``--require-append-only`` would fail the run
    otherwise), and what the policy was offered (its tools) is on record."""
    run, resource = _template_run(cli, tmp_path_factory, template)
    assert resource["total_work_items"] == 8
    assert _own_failures(run) == []
    assert resource["succeeded"] + resource["failed"] == 8
    if template != "multiply-local-strands":
        assert resource["failed"] == 0, resource["metrics"].get("failures_by_type")
    assert resource["stop_code"] is None  # the append-only gate did not stop the run
    safety = resource["metrics"]["training_safety"]
    assert safety["rollouts"] == 8
    assert safety["append_only"] == 8
    calls = read_jsonl(run / "llm_calls.jsonl")
    first_calls = {c["rollout_id"]: c for c in reversed(calls)}  # each rollout's first call
    assert len(first_calls) == 8
    for call in first_calls.values():
        assert call["status_code"] == 200
        assert [t["function"]["name"] for t in call["tools"]] == ["multiply"]
    assert "llama" in (run / "local_model.log").read_text(errors="replace")


def test_the_rubric_template_with_the_real_model_also_as_judge(cli: Cli, workspace: Path) -> None:
    """The grader's ``Judge("local/judge")`` reaches the run's own local model. llama.cpp's
    server refuses ``response_format: json_schema`` with HTTP 500; the judge falls back to
    ``json_object``, says so once, and no row is a judge_error."""
    source = (workspace / "configs/eval/rubric-judge-local.toml").read_text()
    config = workspace / "configs/eval/rubric-real-judge.toml"
    config.write_text(
        source.replace(
            'OSMOSIS_JUDGE_MODEL = "openai/gpt-5-mini"', 'OSMOSIS_JUDGE_MODEL = "local/judge"'
        )
    )
    assert 'OSMOSIS_JUDGE_MODEL = "local/judge"' in config.read_text()
    resource = _eval(
        cli, workspace, str(config), "--model", "local", "--limit", ROWS, "--name", "judge", *SHORT
    )
    assert resource["failed"] == 0, resource["metrics"].get("failures_by_type")  # no judge_error
    assert resource["metrics"]["judge"]["calls"] == 8
    assert resource["metrics"]["judge"]["failed_calls"] == 0
    log = (workspace / ".osmosis/evals/judge/rollout_server.log").read_text()
    assert log.count("refused output_mode 'json_schema'") == 1  # once, not once per call
    assert "asking with 'json_object' from now on" in log


def test_token_ids_asked_of_a_server_that_returns_none_say_so(cli: Cli, workspace: Path) -> None:
    result = cli.run(
        "--plain", "eval", "run", "configs/eval/multiply-local-plain.toml", "--model", "local",
        "--limit", "2", "--name", "ids", "--token-ids", *SHORT,
        cwd=workspace, timeout=300,
    )  # fmt: skip
    assert result.code == 0, result.stderr[-4000:]
    assert "token ids: 0/2 rows (requested with --token-ids, but the upstream returned none" in (
        result.stdout
    )
    assert "enable with --token-ids" not in result.stdout


def test_a_stream_the_server_breaks_off_fails_the_row_instead_of_grading_it(
    cli: Cli, workspace: Path, tool_calling_model: Any
) -> None:
    """Under ``chatml-function-calling`` llama.cpp's server cannot stream a tool choice: when the
    model picks the tool it sends the role chunk and ``[DONE]`` with no finish_reason. Strands
    streams, and ``--model-arg tool_choice=auto`` asks for a tool choice, so such a call breaks
    off. Passed on as it came, the row was graded on an empty
    reply as reward 0; it must fail as http_error, and identical failures are one group. At
    temperature 0 the model's pick depends on the prompt only: most of these rows break."""
    result = cli.run(
        "--plain", "eval", "run", "configs/eval/multiply-local-strands.toml",
        "--model", "smollm2", "--base-url", tool_calling_model.base_url, "--limit", "4",
        "--name", "broken-stream", "--model-arg", "temperature=0",
        "--model-arg", "tool_choice=auto", *SHORT,
        cwd=workspace, timeout=300,
    )  # fmt: skip
    run = workspace / ".osmosis/evals/broken-stream"
    rows = read_jsonl(run / "index.jsonl")
    calls = read_jsonl(run / "llm_calls.jsonl")
    broken = {c["rollout_id"] for c in calls if "no finish_reason" in (c.get("error") or "")}
    failed = [r for r in rows if r["status"] == "failed"]
    assert broken, "no call broke off: the test checked nothing"
    assert {r["rollout_id"] for r in failed} == broken  # every broken row failed, no other did
    assert {r["error_type"] for r in failed} == {"http_error"}
    assert result.code == 1, result.stderr[-4000:]  # failed rows: exit 1
    groups = [line for line in result.stdout.splitlines() if " \N{MULTIPLICATION SIGN} " in line]
    assert len(groups) == 1, result.stdout
    assert groups[0].strip().startswith(f"{len(failed)} \N{MULTIPLICATION SIGN} ")
    assert "stream broke off" in groups[0]
    assert groups[0].endswith("(http_error)")


@pytest.mark.parametrize("framework", ["openai-agents", "strands"])
def test_real_tool_calls_keep_the_transcript_append_only(
    framework: str, tool_calling_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``tool_choice: auto`` (non-streaming) the real model calls the tool for real; the
    history each framework sends back must extend, byte for byte, what the policy said."""
    import real_tool_workflows as workflows

    from osmosis_ai.eval import check_append_only
    from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
    from osmosis_ai.eval._impl.proxy.upstream import Upstream
    from osmosis_ai.testing import run_rollout

    monkeypatch.setenv("OSMOSIS_HOME", str(tmp_path))
    workflow = workflows.WORKFLOWS[framework]
    questions = ["What is 12 multiplied by 7?", "What is -5 multiplied by 9?", "What is 3 times 4?"]

    async def run_all() -> list[list[Any]]:
        upstream = Upstream(model="smollm2", base_url=tool_calling_model.base_url)
        recorded = []
        async with PolicyProxy(upstream) as proxy:
            for index, question in enumerate(questions):
                rollout_id = f"{framework}-{index}"
                url, token = proxy.register(rollout_id)
                result = await run_rollout(
                    workflow,
                    prompt=[{"role": "system", "content": workflows.SYSTEM},
                            {"role": "user", "content": question}],
                    policy=url, api_key=token, rollout_id=rollout_id, grade=False,
                )  # fmt: skip
                assert result.status == "success", (result.err_category, result.err_message)
                recorded.append(proxy.unregister(rollout_id))
        return recorded

    tool_calls = 0
    for calls in asyncio.run(run_all()):
        assert calls, "no policy call was recorded"
        assert all(c.status_code == 200 and c.error is None for c in calls)
        tool_calls += sum(bool((c.response or {}).get("tool_calls")) for c in calls)
        verdict = check_append_only(calls)
        assert verdict.append_only, verdict.to_json()
    assert tool_calls >= 1, "the real model never called the tool: nothing was checked"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_rollout_serve_with_two_workers_driven_by_rollout_client(
    cli: Cli, workspace: Path, tmp_path: Path
) -> None:
    """The rollout server as training runs it: ``osmosis rollout serve --workers 2``, driven by
    ``RolloutClient`` with the real model as the policy (8 rollouts at once)."""
    from osmosis_ai.rollout.client import RolloutClient
    from osmosis_ai.testing import LocalModelServer

    port = _free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [OSMOSIS, "rollout", "serve", "rollouts/multiply-local-plain/main.py",
         "--workers", "2", "--port", str(port)],
        cwd=workspace, env=cli.env({"OSMOSIS_HOME": str(tmp_path / "home")}),
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        # A small context bounds each reply (the template asks for up to 4096 tokens): the
        # server ends it at finish_reason "length", a success.
        with LocalModelServer(n_ctx=768, log_path=ARTIFACTS / "serve-model.log") as model:
            deadline = time.monotonic() + 60
            while True:
                assert server.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                time.sleep(0.1)

            async def drive() -> list[Any]:
                async with RolloutClient(url=url) as client:
                    return await asyncio.gather(
                        *(
                            client.run_rollout(
                                [{"role": "user", "content": f"What is {i} multiplied by 3?"}],
                                model.base_url,
                                f"serve-{i}",
                                label=str(3 * i),
                            )
                            for i in range(8)
                        )
                    )

            results = asyncio.run(drive())
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        log.close()
    assert [r.status for r in results] == ["success"] * 8, [
        (r.status, r.err_category, r.err_message) for r in results
    ]
    for result in results:
        assert result.sample is not None
        assert result.sample.reward is not None  # graded: prose answers earn 0, not a failure


def test_the_report_of_a_real_model_run_opens_in_chromium(
    cli: Cli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``eval report`` of a real-model run (the Strands template's: multi-turn transcripts, and
    failed rows where the model hit its token cap), in real headless Chromium from ``file://``."""
    from playwright.sync_api import sync_playwright

    template = "multiply-local-strands"
    run, _ = _template_run(cli, tmp_path_factory, template)
    report = cli.run("eval", "report", str(run), cwd=run.parents[2])
    assert report.code == 0, report.stderr
    page_path = run / "report.html"
    assert page_path.exists()
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.fail(f"{chromium} is missing: apt-get install -y chromium (.ci/run installs it)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium),
            args=["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith("file:") else route.abort()
            ),
        )
        page.goto(page_path.resolve().as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=15_000)
        page.screenshot(path=str(ARTIFACTS / "real-model-report.png"), full_page=False)
        text = page.inner_text("body")
        browser.close()
    assert not errors, errors
    assert template in text  # the run's name
    assert "local" in text  # the model
