"""Item 7: after fixing a bug in the workflow, ``--retry-failed --allow-changed`` reruns only
the failed rows on the new code; the manifest records which rows ran on which code digest.
Without ``--allow-changed`` the refusal names the flag."""

from __future__ import annotations

import json
from pathlib import Path

from eval_support import Cli, write_tiny_workspace

_BUG = (
    "    async def run(self, ctx):\n"
    "        if ' 3 times' in str(ctx.prompt) or ' 5 times' in str(ctx.prompt):\n"
    "            raise RuntimeError('bug in the workflow')\n"
)


def test_retry_failed_rows_on_fixed_code(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=6, mode="noop")
    main_py = tmp_path / "rollouts" / "tiny" / "main.py"
    fixed = main_py.read_text()
    main_py.write_text(fixed.replace("    async def run(self, ctx):\n", _BUG, 1))
    args = ("--json", "eval", "run", str(config), "--model", "mock", "--name", "fix")

    first = cli.run(*args, cwd=tmp_path)
    assert first.code == 1
    assert [r["row_index"] for r in first.json()["resource"]["failed_rows"]] == [1, 3]

    main_py.write_text(fixed)  # the bug is fixed: the rollout's code digest changes
    refused = cli.run(*args, "--retry-failed", cwd=tmp_path)
    assert refused.code == 1
    error = refused.error()
    assert error["code"] == "CONFLICT"
    assert (
        "changed: rollout. The rollout's code changed: add --retry-failed --allow-changed"
        in (error["message"])
    )
    assert error["details"]["flags"] == ["--fresh", "--retry-failed", "--allow-changed"]

    retried = cli.run(*args, "--retry-failed", "--allow-changed", cwd=tmp_path)
    assert retried.code == 0, retried.stderr
    run = retried.json()["resource"]
    assert (run["succeeded"], run["failed"], run["resumed"]) == (6, 0, 4)
    assert '"code": "CODE_CHANGED"' in retried.stderr

    manifest = json.loads((tmp_path / ".osmosis" / "evals" / "fix" / "manifest.json").read_text())
    old, new = manifest["code_revisions"]
    assert old["source_digest"] != new["source_digest"]
    assert manifest["inputs"]["rollout"]["source_digest"] == new["source_digest"]
    assert old["work_items"] == [[0, 0], [2, 0], [4, 0], [5, 0]]  # kept their first results
    assert new["work_items"] == [[1, 0], [3, 0]]  # retried on the fixed code

    # The run is now locked to the fixed code: a plain resume is accepted.
    assert cli.run(*args, cwd=tmp_path).code == 0


def test_allow_changed_needs_retry_failed(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=2, mode="noop")
    result = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--allow-changed", cwd=tmp_path
    )
    assert result.code == 1
    assert result.error()["message"] == (
        "--allow-changed needs --retry-failed: only failed work items may run on changed "
        "rollout code (the others keep their results)"
    )
