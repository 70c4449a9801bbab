"""Executable docs: every shell block of every workspace skill runs, in a fresh workspace.

For each skill under ``templates/_workspace/skills/`` (a new one is picked up with no edit
here): ``osmosis init`` makes a workspace, then every runnable shell block of the skill's
``SKILL.md`` and of its ``references/*.md`` runs in order with ``bash -euo pipefail`` at the
workspace root, offline: the stand-in platform (signed in), a scripted OpenAI-compatible server
for the "real provider" examples, a scripted LLM judge, and Harbor's local sandbox. The contract
a skill author writes to is in docs/skills.md ("The executable-docs contract").
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import skill_setup_hooks
from platform_harness import Platform

from osmosis_cli.scaffolding.skill_docs import Block, blocks
from osmosis_cli.scaffolding.skills import skills_source

#: Seconds one block may take (docs/skills.md).
BLOCK_TIMEOUT = 180
#: Lines of output shown when a block fails.
TAIL = 40
FAKE_KEY = "sk-skills-harness"

#: Per-skill setup before the first block, for state a skill cannot reasonably create itself
#: (docs/skills.md, "State a skill needs"). Each hook says what a real user would already have.
SetupHook = Callable[[Path, Platform, dict[str, str]], None]
SETUP_HOOKS: dict[str, SetupHook] = dict(skill_setup_hooks.HOOKS)


def _skill_names() -> list[str]:
    root = skills_source()
    return sorted(p.name for p in root.iterdir() if (p / "SKILL.md").is_file())


def skill_blocks(skill: str) -> list[Block]:
    """The runnable blocks of a skill: SKILL.md first, then references/*.md by file name."""
    folder = skills_source() / skill
    documents = [folder / "SKILL.md"]
    if (folder / "references").is_dir():
        documents += sorted((folder / "references").rglob("*.md"))
    return [block for document in documents for block in blocks(document) if block.runs]


@pytest.fixture(scope="module")
def scripted_endpoints() -> Iterator[tuple[str, str]]:
    """``(policy base URL, judge base URL)``: scripted OpenAI-compatible servers on 127.0.0.1."""
    from osmosis_ai.testing import ScriptedPolicyServer

    with ScriptedPolicyServer("multiply") as policy, ScriptedPolicyServer("judge") as judge:
        yield policy.url, judge.url


def _environment(tmp_path: Path, platform: Platform, endpoints: tuple[str, str]) -> dict[str, str]:
    policy_url, judge_url = endpoints
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "UV_CACHE_DIR", "UV_PYTHON", "SYSTEMROOT")
    # the skills and templates the workspace gets are the ones this test reads
    keep += ("OSMOSIS_TEMPLATES_DIR",)
    env = {k: v for k, v in os.environ.items() if k in keep}
    if "UV_CACHE_DIR" not in env:
        # HOME moves below; uv keeps using the developer's cache (no download, no network)
        env["UV_CACHE_DIR"] = str(Path.home() / ".cache" / "uv")
    home = tmp_path / "home"
    home.mkdir()
    env.update(
        {
            "PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
            "HOME": str(home),
            "OSMOSIS_HOME": str(home / ".osmosis"),
            "OSMOSIS_KEYRING": "0",
            "OSMOSIS_PLATFORM_URL": platform.url,
            "OPENAI_BASE_URL": policy_url,
            "OPENAI_API_KEY": FAKE_KEY,
            "OSMOSIS_JUDGE_BASE_URL": judge_url,
            "OSMOSIS_HARBOR_ENV": "local",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "GIT_AUTHOR_NAME": "Skill Harness",
            "GIT_AUTHOR_EMAIL": "harness@example.com",
            "GIT_COMMITTER_NAME": "Skill Harness",
            "GIT_COMMITTER_EMAIL": "harness@example.com",
            "NO_COLOR": "1",
        }
    )
    return env


def _osmosis(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "osmosis_cli", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, f"osmosis {' '.join(args)}:\n{completed.stderr}"


def run_block(block: Block, workspace: Path, env: dict[str, str], state: Path) -> str | None:
    """Run one block; ``None`` when it behaved as its info string says, else why not."""
    # Assignments are exported and handed to the next block; cwd is always the workspace root.
    script = (
        f"trap 'export -p > \"{state}\"' EXIT\n"
        f'[ -f "{state}" ] && . "{state}"\n'
        'cd "$OSMOSIS_SKILL_WORKSPACE"\n'
        "set -a\n" + block.script() + "\n"
    )
    try:
        completed = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=workspace,
            env={**env, "OSMOSIS_SKILL_WORKSPACE": str(workspace)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BLOCK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode()
        return _failure(block, f"timed out after {BLOCK_TIMEOUT} s", output)
    expect_fail = "expect-fail" in block.modes
    if expect_fail and completed.returncode == 0:
        return _failure(block, "exit code 0 (expect-fail: it must fail)", completed.stdout)
    if not expect_fail and completed.returncode != 0:
        return _failure(block, f"exit code {completed.returncode}", completed.stdout)
    return None


def _failure(block: Block, what: str, output: str) -> str:
    tail = "\n".join(output.splitlines()[-TAIL:])
    command = "\n".join(f"    {line}" for line in block.script().splitlines())
    return (
        f"block at {block.where} ({block.language}"
        f"{' ' + ' '.join(sorted(block.modes)) if block.modes else ''}): {what}\n"
        f"  command:\n{command}\n  output (last {TAIL} lines):\n{tail}"
    )


@pytest.mark.parametrize("skill", _skill_names())
def test_every_shell_block_of_the_skill_runs(
    skill: str,
    tmp_path: Path,
    platform: Platform,
    scripted_endpoints: tuple[str, str],
) -> None:
    env = _environment(tmp_path, platform, scripted_endpoints)
    _osmosis(env, tmp_path, "auth", "login", "--token", "-", stdin=platform.token)
    workspace = tmp_path / "ws"
    _osmosis(env, tmp_path, "init", str(workspace))
    hook = SETUP_HOOKS.get(skill)
    if hook is not None:
        hook(workspace, platform, env)
    runnable = skill_blocks(skill)
    assert runnable, f"skill {skill}: no runnable shell block (docs/skills.md)"
    state = tmp_path / "exported.sh"
    for block in runnable:
        problem = run_block(block, workspace, env, state)
        assert problem is None, f"skill {skill}: {problem}"


def test_a_failing_block_is_reported_with_its_place_command_and_output(tmp_path: Path) -> None:
    document = tmp_path / "SKILL.md"
    document.write_text(
        "```bash\nNAME=calc\n```\n\n"
        '```bash\necho "making $NAME"\nosmosis eval runn x\n```\n\n'
        "```bash expect-fail\ntrue\n```\n",
        encoding="utf-8",
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "OSMOSIS_HOME": str(tmp_path / ".osmosis"),
        "NO_COLOR": "1",
    }
    first, second, third = blocks(document)
    state = tmp_path / "exported.sh"
    assert run_block(first, workspace, env, state) is None
    problem = run_block(second, workspace, env, state)
    assert problem is not None
    assert problem.startswith(f"block at {document}:5 (bash): exit code 2\n")
    assert "    osmosis eval runn x" in problem
    assert "making calc" in problem  # the variable carried over from the first block
    assert "No such command 'runn'" in problem
    inverted = run_block(third, workspace, env, state)
    assert inverted is not None
    assert inverted.startswith(f"block at {document}:10 (bash expect-fail): exit code 0")
