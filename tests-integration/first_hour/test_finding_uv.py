"""Item 5: ``uv`` is found without being on PATH (the ``uv`` package, a venv's ``bin/``, pyenv),
the Harbor template's rollouts run that way, the preflight checks uv for Harbor rollouts with a
clear message, and ``osmosis doctor`` runs ``uv --version`` and shows its answer or failure."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest
from eval_support import Cli

from osmosis_ai.testing import ScriptedPolicyServer, multiply_solver

#: A PATH without uv on it, and no pyenv (the situation of a venv's `osmosis` run without
#: activating the venv).
_NO_UV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYENV_ROOT": "/nonexistent-pyenv"}
_HARBOR = {"OSMOSIS_HARBOR_ENV": "local", **_NO_UV}


def _harbor_workspace(cli: Cli, root: Path) -> Path:
    root.mkdir()
    assert cli.run("init", str(root), cwd=root.parent).code == 0
    applied = cli.run("template", "apply", "multiply-harbor-strands", cwd=root)
    assert applied.code == 0, applied.stderr
    return root / "configs" / "eval" / "multiply-harbor-strands.toml"


def _checks(result: object) -> dict[str, dict[str, object]]:
    envelope = result.json()  # type: ignore[attr-defined]
    return {check["name"]: check for check in envelope["resource"]["checks"]}


def test_doctor_runs_uv_found_off_path(tmp_path: Path, cli: Cli) -> None:
    assert all(not (Path(d) / "uv").exists() for d in _NO_UV["PATH"].split(os.pathsep))
    assert cli.run("init", str(tmp_path / "ws"), cwd=tmp_path).code == 0
    result = cli.run("--json", "doctor", cwd=tmp_path / "ws", env=_NO_UV)
    uv = _checks(result)["uv"]
    assert uv["status"] == "ok", uv
    message = str(uv["message"])
    assert message.startswith("uv ")  # what `uv --version` answered ...
    assert f"({Path(sys.executable).parent}" in message  # ... by the venv's uv, not PATH's


def test_doctor_shows_a_uv_that_fails(tmp_path: Path, cli: Cli) -> None:
    broken = tmp_path / "uv"
    broken.write_text("#!/bin/sh\necho 'uv: cannot load libfoo' >&2\nexit 3\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    assert cli.run("init", str(tmp_path / "ws"), cwd=tmp_path).code == 0
    result = cli.run("--json", "doctor", cwd=tmp_path / "ws", env={"OSMOSIS_UV": str(broken)})
    assert result.code == 1  # a uv that does not run is a problem, not a path to print
    uv = {check["name"]: check for check in result.error()["details"]["checks"]}["uv"]
    assert uv["status"] == "error"
    assert uv["message"] == f"`{broken} --version` exited with code 3: uv: cannot load libfoo"


@pytest.mark.skipif(importlib.util.find_spec("harbor") is None, reason="harbor not installed")
def test_harbor_preflight_names_a_missing_uv(tmp_path: Path, cli: Cli) -> None:
    config = _harbor_workspace(cli, tmp_path / "ws")
    ok = cli.run("--json", "rollout", "validate", str(config), cwd=tmp_path, env=_HARBOR)
    assert ok.code == 0, ok.stderr
    assert _checks(ok)["uv"]["status"] == "ok"
    missing = tmp_path / "no-such-uv"
    refused = cli.run(
        "--json", "rollout", "validate", str(config), cwd=tmp_path,
        env={**_HARBOR, "OSMOSIS_UV": str(missing)},
    )  # fmt: skip
    assert refused.code == 1
    assert f"OSMOSIS_UV={missing} is not an executable file" in refused.stderr
    assert "the Harbor backend builds the rollout bundle with uv" in refused.stderr


@pytest.mark.skipif(importlib.util.find_spec("harbor") is None, reason="harbor not installed")
def test_harbor_template_runs_without_uv_on_path(tmp_path: Path, cli: Cli) -> None:
    config = _harbor_workspace(cli, tmp_path / "ws")
    with ScriptedPolicyServer(multiply_solver) as policy:
        result = cli.run(
            "--json", "eval", "run", str(config), "--limit", "2", "--model", "m",
            "--base-url", policy.url, cwd=tmp_path / "ws", env=_HARBOR, timeout=300,
        )  # fmt: skip
    assert result.code == 0, result.stderr
    run = result.json()["resource"]
    assert (run["succeeded"], run["failed"]) == (2, 0)
