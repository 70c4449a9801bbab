"""Helpers shared by the osmosis-cli tests (imported by test modules; see conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def envelope(self) -> dict[str, Any]:
        """The single JSON envelope on stdout (fails if there is anything else; with none, the
        failure shows the exit code and stderr)."""
        assert self.stdout.strip(), f"no JSON on stdout (exit code {self.code}):\n{self.stderr}"
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        """The JSON error envelope: the last line of stderr."""
        return json.loads(self.stderr.strip().splitlines()[-1])

    def warnings(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stderr.splitlines() if '"warning"' in line]


RunCli = Callable[..., Result]


def write_rollout(
    workspace: Path,
    name: str,
    main_py: str,
    *,
    dependencies: list[str] | None = None,
    extra_files: dict[str, str] | None = None,
) -> Path:
    """A minimal rollout folder plus an eval config pointing at it."""
    folder = workspace / "rollouts" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text(main_py, encoding="utf-8")
    deps = ", ".join(f'"{d}"' for d in (dependencies or []))
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0"\ndependencies = [{deps}]\n', encoding="utf-8"
    )
    for rel, text in (extra_files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for sub in ("configs/eval", "configs/training", "data"):
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    (workspace / "configs" / "eval" / f"{name}.toml").write_text(
        f"""[experiment]
rollout = "{name}"
entrypoint = "main.py"
model_path = "openai/gpt-5-mini"
dataset = "{name}"

[secrets]
required = []
""",
        encoding="utf-8",
    )
    return folder


#: The tiny core-only rollout the evaluation library's own tests use (osmosis-core/tests/eval).
TINY_ROLLOUT = (
    Path(__file__).resolve().parents[2] / "osmosis-core" / "tests" / "eval" / "tiny_rollout.py"
)


def load_tiny_rollout() -> Any:
    """The tiny rollout module (``write_workspace(...)`` writes a workspace around it)."""
    import importlib.util
    import sys

    name = "osmosis_cli_tests_tiny_rollout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TINY_ROLLOUT)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
