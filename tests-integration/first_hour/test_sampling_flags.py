"""Item 12: sampling flags reach every model call, override the rollout's own values, and are
recorded in the manifest (so a resume by name keeps them)."""

from __future__ import annotations

import json
from pathlib import Path

from eval_support import Cli, write_tiny_workspace

from osmosis_ai.testing import ScriptedPolicyServer

EXPECTED = {
    "temperature": 0.2,  # the tiny rollout itself asks for 0.5
    "top_p": 0.9,
    "max_tokens": 256,
    "seed": 7,
    "frequency_penalty": 0.5,
    "user": "alice",
}


def test_sampling_flags_reach_the_model_and_the_manifest(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=2)
    with ScriptedPolicyServer("multiply") as policy:
        result = cli.run(
            "--json", "eval", "run", str(config), "--model", "m", "--base-url", policy.url,
            "--temperature", "0.2", "--top-p", "0.9", "--max-tokens", "256", "--seed", "7",
            "--model-arg", "frequency_penalty=0.5", "--model-arg", "user=alice",
            "--name", "s", cwd=tmp_path,
        )  # fmt: skip
        assert result.code == 0, result.stderr
        calls = [r.body for r in policy.requests if "tools" in r.body]  # not the preflight
        again = cli.run(
            "--json", "eval", "run", str(config), "--name", "s", cwd=tmp_path
        )  # fmt: skip
    assert len(calls) == 4  # 2 rows x (tool call + answer)
    for body in calls:
        assert {key: body.get(key) for key in EXPECTED} == EXPECTED
    manifest = json.loads((tmp_path / ".osmosis/evals/s/manifest.json").read_text())
    assert manifest["inputs"]["model"]["sampling"] == dict(sorted(EXPECTED.items()))
    assert again.code == 0, again.stderr  # resumed by name: same model and sampling, nothing new
    assert again.json()["resource"]["dispatched"] == 0


def test_model_arg_must_be_key_value(tmp_path: Path, cli: Cli) -> None:
    config = write_tiny_workspace(tmp_path, n_rows=1, mode="noop")
    result = cli.run(
        "--json", "eval", "run", str(config), "--model", "mock", "--model-arg", "oops",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert result.error()["message"] == (
        "--model-arg 'oops' is not KEY=VALUE (e.g. frequency_penalty=0.5)"
    )
