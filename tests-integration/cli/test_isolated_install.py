"""``pip install osmosis-cli`` alone: no FastAPI, no framework, and the CLI still works.

Builds the osmosis-core and osmosis-cli wheels, installs only them (and their declared
dependencies) into a fresh virtualenv, and runs the commands a new user starts with. This also
proves the templates ship inside the wheel (no repository, no network for templates).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from osmosis_ai.testing.pytest_plugin import built_once

ROOT = Path(__file__).resolve().parents[2]
UV = shutil.which("uv")

pytestmark = pytest.mark.skipif(UV is None, reason="needs uv to build wheels and make a venv")


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two wheel builds and an install: once per run, shared by the xdist workers."""
    return built_once(tmp_path_factory, "isolated-install", _make_venv)


def _make_venv(work: Path) -> Path:
    assert UV is not None
    dist = work / "dist"
    # osmosis-cli goes through its sdist (uv's default), as a release would: the templates must
    # survive the trip from the repository into the sdist and from there into the wheel.
    for package, flags in (("osmosis-core", ["--wheel"]), ("osmosis-cli", [])):
        built = _run(UV, "build", "--package", package, *flags, "-o", str(dist), cwd=ROOT)
        assert built.returncode == 0, built.stderr
    env = work / "venv"
    made = _run(UV, "venv", "-q", "--python", sys.executable, str(env))
    assert made.returncode == 0, made.stderr
    wheels = sorted(str(w) for w in dist.glob("*.whl"))
    installed = _run(UV, "pip", "install", "-q", "--python", str(env / "bin" / "python"), *wheels)
    assert installed.returncode == 0, installed.stderr
    return env


def test_only_core_and_cli_are_installed(venv: Path) -> None:
    probe = (
        "import importlib.util, json; "
        "print(json.dumps({m: importlib.util.find_spec(m) is not None for m in "
        "['osmosis_cli', 'osmosis_ai.rollout', 'fastapi', 'uvicorn', 'strands', 'agents', 'harbor']}))"
    )
    found = json.loads(_run(str(venv / "bin" / "python"), "-c", probe).stdout)
    assert found == {
        "osmosis_cli": True,
        "osmosis_ai.rollout": True,
        "fastapi": False,
        "uvicorn": False,
        "strands": False,
        "agents": False,
        "harbor": False,
    }


def test_help_list_apply_validate(venv: Path, tmp_path: Path) -> None:
    osmosis = str(venv / "bin" / "osmosis")
    helped = _run(osmosis, "--help")
    assert helped.returncode == 0
    assert "template" in helped.stdout

    listed = _run(osmosis, "--json", "template", "list")
    assert listed.returncode == 0, listed.stderr
    shipped = [
        p for p in (ROOT / "templates").iterdir()
        if p.is_dir() and not p.name.startswith(("_", "."))
    ]  # fmt: skip
    assert json.loads(listed.stdout)["total_count"] == len(shipped)  # every template in the wheel

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    applied = _run(osmosis, "template", "apply", "multiply-local-strands", cwd=repo)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "rollouts" / "multiply-local-strands" / "main.py").is_file()

    validated = _run(
        osmosis,
        "--json",
        "rollout",
        "validate",
        "configs/eval/multiply-local-strands.toml",
        cwd=repo,
    )
    assert validated.returncode == 0, validated.stderr
    checks = {c["name"]: c["status"] for c in json.loads(validated.stdout)["resource"]["checks"]}
    # The rollout needs Strands and the server extra, which this environment lacks: the
    # preflight says so and skips the import instead of failing.
    assert checks["dependencies"] == "warning"
    assert checks["import"] == "skipped"
    assert checks["config"] == checks["paths"] == checks["dataset"] == "ok"


def test_init_and_rollout_init_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    osmosis = str(venv / "bin" / "osmosis")
    workspace = tmp_path / "ws"
    made = _run(osmosis, "--json", "init", str(workspace))
    assert made.returncode == 0, made.stderr
    assert (workspace / ".agents" / "skills" / "debug-rollouts" / "SKILL.md").is_file()
    # the wheel ships the skills' references and the Claude files; .claude/skills is a link
    skills = workspace / ".claude" / "skills"
    assert skills.is_symlink()
    assert (skills / "evaluate-rollouts" / "references" / "eval-default.toml").is_file()
    assert (workspace / ".claude" / "settings.json").is_file()
    listed = _run(osmosis, "--json", "skills", "list", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    assert {i["status"] for i in json.loads(listed.stdout)["items"]} == {"current"}
    scaffold = _run(osmosis, "--json", "rollout", "init", "calc", cwd=workspace)
    assert scaffold.returncode == 0, scaffold.stderr
    assert (workspace / "rollouts" / "calc" / "calc" / "workflow.py").is_file()
    doctor = _run(osmosis, "--json", "doctor", cwd=workspace)
    assert doctor.returncode == 0, doctor.stderr
    checks = {c["name"]: c["status"] for c in json.loads(doctor.stdout)["resource"]["checks"]}
    assert checks["server extra"] == "warning"  # no fastapi/uvicorn in this environment
