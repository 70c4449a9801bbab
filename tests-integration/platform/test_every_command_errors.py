"""Every platform command turns the platform's 401, 403, 404 and 5xx into the documented error
envelope and exit code 1 (the happy paths and transfers are tested per command elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Fault  # pyright: ignore[reportMissingImports]

COMMANDS = [
    ("auth", "whoami"),
    ("rollout", "list"),
    ("dataset", "list"),
    ("dataset", "info", "d"),
    ("dataset", "preview", "d"),
    ("dataset", "download", "d"),
    ("dataset", "logs", "d"),
    ("dataset", "delete", "d", "-y"),
    ("model", "list"),
    ("model", "info", "m"),
    ("model", "deploy", "m"),
    ("model", "undeploy", "m"),
    ("eval", "list", "--remote"),
    ("eval", "info", "r"),
    ("eval", "logs", "r"),
    ("eval", "stop", "r", "-y"),
    ("eval", "download", "r"),
    ("eval", "retry", "r", "-y"),
    ("train", "list"),
    ("train", "info", "r"),
    ("train", "logs", "r"),
    ("train", "stop", "r", "-y"),
    ("secret", "list"),
    ("secret", "delete", "S", "-y"),
    ("benchmark", "list"),
    ("benchmark", "info", "k"),
    ("benchmark", "runs", "list"),
    ("benchmark", "runs", "info", "r"),
    ("benchmark", "runs", "logs", "r"),
    ("benchmark", "runs", "stop", "r", "-y"),
    ("benchmark", "runs", "download", "r"),
]
STATUSES = [
    (401, "AUTH_REQUIRED"),
    (403, "PERMISSION_DENIED"),
    (404, "NOT_FOUND"),
    (500, "PLATFORM_ERROR"),
]


@pytest.mark.parametrize(("status", "code"), STATUSES, ids=[str(s) for s, _ in STATUSES])
def test_every_platform_command_reports_platform_errors(
    cli: Cli, platform: Platform, tmp_path: Path, status: int, code: str
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    for method in ("GET", "POST", "PUT", "DELETE"):
        platform.state.faults.append(Fault(method, "/api/cli/", status, times=-1))
    wrong: list[str] = []
    # One child process runs the 31 commands in turn (the CLI's start-up is tested elsewhere;
    # here 31 start-ups per status were most of the test's time).
    results = cli.sequence([("--json", *command) for command in COMMANDS], cwd=tmp_path)
    for command, result in zip(COMMANDS, results, strict=True):
        try:
            got = result.error()["error"]
        except (ValueError, IndexError):
            wrong.append(f"{' '.join(command)}: exit {result.code}, no error envelope")
            continue
        # a command may rephrase a 404 in its own words (model info: "no LoRA or base model")
        seen = got["details"].get("status_code", status if code == "NOT_FOUND" else None)
        if result.code != 1 or got["code"] != code or seen != status:
            wrong.append(
                f"{' '.join(command)}: exit {result.code}, {got['code']}, {got['details']}"
            )
    assert wrong == []
