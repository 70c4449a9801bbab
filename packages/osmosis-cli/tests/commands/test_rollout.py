"""``osmosis rollout init | validate | serve``."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

RolloutFactory = Callable[..., Path]

LOCAL_ROLLOUT = """
from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend
from osmosis_ai.rollout.server import create_rollout_server, serve


class Echo(AgentWorkflow):
    async def run(self, ctx):
        return list(ctx.prompt)


class Zero(Grader):
    async def grade(self, ctx):
        ctx.set_reward(0.0)


app = create_rollout_server(backend=LocalBackend(workflow=Echo, grader=Zero))

if __name__ == "__main__":
    raise SystemExit("the preflight must never run this block")
"""


# -- init ------------------------------------------------------------------------------------
def test_init_writes_the_scaffold(run_cli: RunCli, git_repo: Path) -> None:
    result = run_cli("--json", "rollout", "init", "my-agent", cwd=git_repo)
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert envelope["operation"] == "rollout.init"
    resource = envelope["resource"]
    assert resource["rollout_dir"] == "rollouts/my-agent"
    assert resource["configs"] == {
        "eval": "configs/eval/my-agent.toml",
        "training": "configs/training/my-agent.toml",
    }
    workflow = git_repo / "rollouts" / "my-agent" / "my_agent" / "workflow.py"
    assert "raise NotImplementedError" in workflow.read_text(encoding="utf-8")
    main = (git_repo / "rollouts" / "my-agent" / "main.py").read_text(encoding="utf-8")
    assert "from my_agent.workflow import MyAgentWorkflow" in main
    assert "{{" not in main
    config = (git_repo / "configs" / "eval" / "my-agent.toml").read_text(encoding="utf-8")
    assert 'rollout = "my-agent"' in config


def test_init_twice_conflicts_and_force_replaces(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("rollout", "init", "calc", cwd=git_repo).code == 0
    edited = git_repo / "rollouts" / "calc" / "main.py"
    edited.write_text("# mine\n", encoding="utf-8")
    again = run_cli("--json", "rollout", "init", "calc", cwd=git_repo)
    assert again.code == 1
    assert again.error()["error"]["code"] == "CONFLICT"
    assert again.error()["error"]["details"]["conflicts"] == ["rollouts/calc"]
    assert edited.read_text(encoding="utf-8") == "# mine\n"
    assert run_cli("rollout", "init", "calc", "--force", cwd=git_repo).code == 0
    assert "create_rollout_server" in edited.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["Bad_Name", "1st", "a/b", "default", "-x"])
def test_init_rejects_bad_names(run_cli: RunCli, git_repo: Path, name: str) -> None:
    result = run_cli("--json", "rollout", "init", "--", name, cwd=git_repo)
    assert result.code == 1
    assert result.error()["error"]["code"] == "VALIDATION"
    assert not (git_repo / "rollouts").exists()


def test_init_outside_a_workspace(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("--json", "rollout", "init", "calc", cwd=tmp_path)
    assert result.error()["error"]["code"] == "WORKSPACE_REQUIRED"


# -- validate --------------------------------------------------------------------------------
def test_validate_a_template_offline(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("template", "apply", "multiply-local-strands", cwd=git_repo).code == 0
    # Make the outcome independent of which frameworks this environment has: the template's
    # real import (Strands) is exercised by tests-integration/cli.
    pyproject = git_repo / "rollouts" / "multiply-local-strands" / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace('"osmosis-ai[', '"not-installed-umbrella['), encoding="utf-8")
    result = run_cli(
        "--json", "rollout", "validate", "configs/eval/multiply-local-strands.toml", cwd=git_repo
    )
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert envelope["operation"] == "rollout.validate"
    checks = {c["name"]: c["status"] for c in envelope["resource"]["checks"]}
    assert checks == {
        "config": "ok",
        "dataset": "ok",
        "paths": "ok",
        "dependencies": "warning",
        "import": "skipped",
    }
    (warning,) = result.warnings()
    assert warning["schema_version"] == 1
    assert warning["warning"]["code"] == "PREFLIGHT_WARNING"


def test_validate_imports_the_entrypoint(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(git_repo, "echo", LOCAL_ROLLOUT, dependencies=["osmosis-core"])
    result = run_cli("--json", "rollout", "validate", "configs/eval/echo.toml", cwd=git_repo)
    assert result.code == 0, result.stderr
    checks = {c["name"]: c for c in result.envelope()["resource"]["checks"]}
    assert checks["import"]["status"] == "ok"
    attributes = checks["import"]["details"]["attributes"]
    assert attributes["app"]  # the ASGI app object (its class is the server's business)
    assert attributes["backend"] is None  # the example builds it inline
    assert checks["dependencies"]["status"] == "ok"


def test_validate_reports_file_line_and_message(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(
        git_repo,
        "broken",
        "from broken_pkg import helper\n",
        extra_files={
            "broken_pkg/__init__.py": "",
            "broken_pkg/helper.py": "x = 1\nraise ValueError('bad setting')\n",
        },
    )
    result = run_cli("--json", "rollout", "validate", "rollouts/broken", cwd=git_repo)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert "rollouts/broken/broken_pkg/helper.py:2: ValueError: bad setting" in error["message"]
    assert error["details"]["line"] == 2
    assert error["details"]["error_type"] == "ValueError"


def test_validate_syntax_error_and_exit_at_import(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(git_repo, "syntax", "x = 1\ndef broken(:\n")
    syntax = run_cli("--json", "rollout", "validate", "rollouts/syntax/main.py", cwd=git_repo)
    assert syntax.code == 1
    assert "main.py:2: SyntaxError" in syntax.error()["error"]["message"]
    rollout_factory(git_repo, "exits", "import sys\nsys.exit(3)\n")
    exits = run_cli("--json", "rollout", "validate", "rollouts/exits", cwd=git_repo)
    assert exits.code == 1
    assert "SystemExit: 3" in exits.error()["error"]["message"]


def test_missing_module_fails_validate_and_names_it(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    # validate runs the rollout here, so a missing module is an error (submit only warns).
    rollout_factory(git_repo, "needs", "import not_installed_pkg_xyz\napp = 1\n")
    result = run_cli("--json", "rollout", "validate", "configs/eval/needs.toml", cwd=git_repo)
    assert result.code == 1
    error = result.error()["error"]
    assert error["details"]["missing_module"] == "not_installed_pkg_xyz"
    assert "module 'not_installed_pkg_xyz' is not installed" in error["message"]


def test_unsatisfied_declared_dependencies_skip_the_import(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(
        git_repo, "deps", "raise RuntimeError('must not be imported')\n",
        dependencies=["surely-not-installed-dist>=1", "osmosis-core>=99"],
    )  # fmt: skip
    result = run_cli("--json", "rollout", "validate", "rollouts/deps", cwd=git_repo)
    assert result.code == 0, result.stderr
    checks = {c["name"]: c for c in result.envelope()["resource"]["checks"]}
    assert checks["import"]["status"] == "skipped"
    unsatisfied = checks["dependencies"]["details"]["unsatisfied"]
    assert any("surely-not-installed-dist is not installed" in u for u in unsatisfied)
    assert any("osmosis-core" in u and ">=99" in u for u in unsatisfied)


def test_import_timeout_fails(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    # Blocks at import time the way a server started at module level would.
    rollout_factory(git_repo, "hangs", "import threading\nthreading.Event().wait()\n")
    result = run_cli(
        "--json", "rollout", "validate", "rollouts/hangs", "--timeout", "1", cwd=git_repo
    )
    assert result.code == 1
    assert "did not finish within 1s" in result.error()["error"]["message"]


def test_containment_and_config_problems(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory, tmp_path: Path
) -> None:
    rollout_factory(git_repo, "calc", "app = 1\n")
    config = git_repo / "configs" / "eval" / "calc.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace('entrypoint = "main.py"', 'entrypoint = "../../escape.py"\nfoo = 1').replace(
            "required = []", 'required = ["bad name"]'
        ),
        encoding="utf-8",
    )
    result = run_cli("--json", "rollout", "validate", "configs/eval/calc.toml", cwd=git_repo)
    assert result.code == 1
    issues = {i["key"]: i["message"] for i in result.error()["error"]["details"]["issues"]}
    assert set(issues) == {"experiment.entrypoint", "experiment.foo", "secrets.required[0]"}

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "main.py").write_text("app = 1\n", encoding="utf-8")
    (git_repo / "rollouts" / "linked").symlink_to(outside, target_is_directory=True)
    config.write_text(text.replace('rollout = "calc"', 'rollout = "linked"'), encoding="utf-8")
    linked = run_cli("--json", "rollout", "validate", "configs/eval/calc.toml", cwd=git_repo)
    assert linked.code == 1
    assert "outside" in linked.error()["error"]["message"]

    missing = run_cli("--json", "rollout", "validate", "rollouts/nope", cwd=git_repo)
    assert missing.error()["error"]["code"] == "NOT_FOUND"


# -- serve -----------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_runs_the_app_on_loopback(git_repo: Path, rollout_factory: RolloutFactory) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "echo", LOCAL_ROLLOUT, dependencies=["osmosis-core"])
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "osmosis_cli", "--plain", "rollout", "serve",
         "rollouts/echo/main.py", "--port", str(port)],
        cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen = []
        for line in process.stdout:  # wait for uvicorn's own "ready" line, no polling
            seen.append(line)
            if "Uvicorn running on" in line or "Application startup complete" in line:
                break
        assert any(f"http://127.0.0.1:{port}" in line for line in seen), seen
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_serve_on_port_zero_never_shows_port_zero_and_logs_the_port_it_got(
    git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "echo", LOCAL_ROLLOUT, dependencies=["osmosis-core"])
    process = subprocess.Popen(
        [sys.executable, "-m", "osmosis_cli", "--plain", "rollout", "serve",
         "rollouts/echo/main.py", "--port", "0"],
        cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            if "Uvicorn running on" in line:
                break
        bound = re.search(r"http://127\.0\.0\.1:(\d+)", seen[-1])
        assert bound is not None, seen
        port = int(bound.group(1))
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert port > 0
    assert health.status_code == 200
    assert "on 127.0.0.1, on a free port" in seen[0], seen
    assert not any("127.0.0.1:0" in line for line in seen), seen


def test_serve_with_workers_runs_rollouts_in_worker_processes(
    git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "echo", LOCAL_ROLLOUT, dependencies=["osmosis-core"])
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "osmosis_cli", "--plain", "rollout", "serve",
         "rollouts/echo/main.py", "--port", str(port), "--workers", "2"],
        cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        for line in process.stdout:  # the app starts once its workers are ready
            if "Application startup complete" in line:
                break
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert health["backend"] == "workers"
    assert len({w["pid"] for w in health["workers"] if w["ready"]}) == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "2", "--reload"], "--workers cannot be combined with --reload"),
        (["--workers", "0"], "workers must be a positive integer"),
        (["--workers", "many"], "workers='many' is not a number"),
    ],
)
def test_serve_rejects_bad_workers(
    run_cli: RunCli,
    git_repo: Path,
    rollout_factory: RolloutFactory,
    flags: list[str],
    message: str,
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "echo", LOCAL_ROLLOUT, dependencies=["osmosis-core"])
    result = run_cli("--json", "rollout", "serve", "rollouts/echo/main.py", *flags, cwd=git_repo)
    assert result.code == 1
    assert message in result.error()["error"]["message"]


def test_serve_reports_a_missing_app(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "noapp", "value = 1\n")
    result = run_cli(
        "--json", "rollout", "serve", "rollouts/noapp/main.py:application", cwd=git_repo
    )
    assert result.code == 1
    assert "has no `application`" in result.error()["error"]["message"]


def test_serve_reports_an_import_error_of_the_rollout(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "fails", "x = 1\nraise RuntimeError('pick an environment')\n")
    result = run_cli("--json", "rollout", "serve", "rollouts/fails", cwd=git_repo)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert "main.py:2: RuntimeError: pick an environment" in error["message"]


# -- one loader: validate and serve agree ----------------------------------------------------
RELATIVE_IMPORT_ROLLOUT = LOCAL_ROLLOUT.replace(
    "from osmosis_ai.rollout import",
    "from .tools import GREETING  # noqa: F401\nfrom osmosis_ai.rollout import",
)


def test_validate_and_serve_load_a_relative_import_the_same_way(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    from osmosis_cli.serving import _load_app

    folder = rollout_factory(
        git_repo,
        "relative",
        RELATIVE_IMPORT_ROLLOUT,
        dependencies=["osmosis-core"],
        extra_files={"tools.py": "GREETING = 'hi'\n"},
    )
    validated = run_cli("--json", "rollout", "validate", "rollouts/relative", cwd=git_repo)
    assert validated.code == 0, validated.stderr
    checks = {c["name"]: c for c in validated.envelope()["resource"]["checks"]}
    assert checks["import"]["status"] == "ok", checks["import"]
    app = _load_app(folder, folder / "main.py", "app")
    assert callable(app)


def test_validate_and_serve_report_the_same_import_failure(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    from osmosis_cli.errors import CLIError
    from osmosis_cli.serving import _load_app

    folder = rollout_factory(git_repo, "broken", "x = 1\nraise KeyError('contnet')\n")
    validated = run_cli("--json", "rollout", "validate", "rollouts/broken", cwd=git_repo)
    assert validated.code == 1
    error = validated.error()["error"]
    assert "main.py:2: KeyError: 'contnet'" in error["message"]
    assert error["details"]["line"] == 2
    with pytest.raises(CLIError) as info:
        _load_app(folder, folder / "main.py", "app")
    assert "main.py:2: KeyError: 'contnet'" in str(info.value)


# -- script mode (0.3.x scaffolds: main() builds the app and calls uvicorn.run) ---------------

SCRIPT_ROLLOUT = """
import os

import uvicorn

from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend
from osmosis_ai.rollout.server import create_rollout_server


class Echo(AgentWorkflow):
    async def run(self, ctx):
        return list(ctx.prompt)


class Zero(Grader):
    async def grade(self, ctx):
        ctx.set_reward(0.0)


def main():
    app = create_rollout_server(backend=LocalBackend(workflow=Echo, grader=Zero))
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", 8000)))


if __name__ == "__main__":
    main()
"""


def test_validate_says_which_mode_it_found(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "module", LOCAL_ROLLOUT, dependencies=["osmosis-core"])
    rollout_factory(git_repo, "script", SCRIPT_ROLLOUT, dependencies=["osmosis-core"])
    module = run_cli("--json", "rollout", "validate", "rollouts/module", cwd=git_repo)
    script = run_cli("--json", "rollout", "validate", "rollouts/script", cwd=git_repo)
    assert module.code == 0, module.stderr
    assert script.code == 0, script.stderr
    module_import = {c["name"]: c for c in module.envelope()["resource"]["checks"]}["import"]
    script_import = {c["name"]: c for c in script.envelope()["resource"]["checks"]}["import"]
    assert module_import["details"]["mode"] == "app"
    assert "(module mode)" in module_import["message"]
    assert script_import["status"] == "ok"
    assert script_import["details"]["mode"] == "script"
    assert script_import["details"]["script"]["via"] == "main()"
    assert script_import["details"]["attributes"]["app"]
    assert "script mode" in script_import["message"]
    assert "binds 0.0.0.0" in script_import["message"]


def test_serve_runs_a_script_mode_rollout_on_loopback(
    git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    pytest.importorskip("uvicorn")
    rollout_factory(git_repo, "script", SCRIPT_ROLLOUT, dependencies=["osmosis-core"])
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "osmosis_cli", "--plain", "rollout", "serve",
         "rollouts/script", "--port", str(port)],
        cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            if "Uvicorn running on" in line or "Application startup complete" in line:
                break
        assert any(f"http://127.0.0.1:{port}" in line for line in seen), seen
        assert not any("0.0.0.0" in line for line in seen), seen
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=15)
