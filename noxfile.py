"""The test matrix. ``nox`` runs every default session; ``.ci/run`` and the README call it.

Each session builds its own uv-backed venv with exactly the distributions it tests, so a
package is proven to work without its siblings (the workspace venv would hide missing
dependencies). Framework versions are tested at the declared floor and at the latest release.

Run a subset with ``nox -s core``, ``nox -t strands`` or ``nox -p 3.12 -s core``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
nox.options.reuse_existing_virtualenvs = False

ROOT = Path(__file__).parent
PACKAGES = ROOT / "packages"
PYTHONS = ["3.12", "3.13"]
TEST_DEPS = ["pytest>=8.3", "pytest-asyncio>=0.25", "hypothesis>=6.120"]
CORE = ["-e", f"{PACKAGES / 'osmosis-core'}[server]"]

# integration distribution -> (framework distribution, [floor, latest])
FRAMEWORKS: dict[str, tuple[str, list[str]]] = {
    "osmosis-strands": ("strands-agents", ["1.23.0", "1.62.0"]),
    "osmosis-openai-agents": ("openai-agents", ["0.18.3", "0.24.0"]),
    "osmosis-harbor": ("harbor", ["0.20.0", "0.26.0"]),
}


def _pytest(session: nox.Session, *paths: Path) -> None:
    existing = [str(p) for p in paths if p.exists()]
    if not existing:
        session.skip(f"no tests yet under {', '.join(str(p) for p in paths)}")
    args = session.posargs or ["-q", "-p", "no:cacheprovider"]
    session.run("pytest", *args, *existing, env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"})


@nox.session(python="3.12", tags=["lint"])
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and pyright over the whole workspace."""
    session.run_install(
        "uv",
        "sync",
        "--all-packages",
        "--all-extras",
        "--frozen",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("pyright")


@nox.session(python=PYTHONS, tags=["core"])
def core(session: nox.Session) -> None:
    """osmosis-core alone (with its server extra): the contract, LocalBackend, server, testing kit."""
    session.install(*TEST_DEPS, *CORE)
    _pytest(session, PACKAGES / "osmosis-core" / "tests")


def _integration(session: nox.Session, dist: str, version: str) -> None:
    package = PACKAGES / dist
    if not package.exists():
        session.skip(f"{dist} does not exist yet")
    framework, _ = FRAMEWORKS[dist]
    # One resolution: the pin is installed together with the member so that an out-of-range
    # pin fails loudly instead of being silently replaced.
    session.install(*TEST_DEPS, *CORE, "-e", str(package), f"{framework}=={version}")
    _pytest(session, package / "tests")


@nox.session(python=PYTHONS, tags=["strands"])
@nox.parametrize("version", FRAMEWORKS["osmosis-strands"][1])
def strands(session: nox.Session, version: str) -> None:
    """osmosis-strands at the strands-agents floor and latest."""
    _integration(session, "osmosis-strands", version)


@nox.session(name="openai-agents", python=PYTHONS, tags=["openai-agents"])
@nox.parametrize("version", FRAMEWORKS["osmosis-openai-agents"][1])
def openai_agents(session: nox.Session, version: str) -> None:
    """osmosis-openai-agents at the openai-agents floor and latest."""
    _integration(session, "osmosis-openai-agents", version)


@nox.session(python=PYTHONS, tags=["harbor"])
@nox.parametrize("version", FRAMEWORKS["osmosis-harbor"][1])
def harbor(session: nox.Session, version: str) -> None:
    """osmosis-harbor on real Harbor trials at the harbor floor and latest."""
    _integration(session, "osmosis-harbor", version)


@nox.session(python=PYTHONS, tags=["cli"])
def cli(session: nox.Session) -> None:
    """osmosis-cli with core only (no framework installed)."""
    package = PACKAGES / "osmosis-cli"
    if not package.exists():
        session.skip("osmosis-cli does not exist yet")
    session.install(*TEST_DEPS, *CORE, "-e", str(package))
    _pytest(session, package / "tests")


@nox.session(python="3.12", tags=["e2e"])
def e2e(session: nox.Session) -> None:
    """Cross-package end-to-end tests: real servers, real frameworks, real Harbor trials."""
    session.run_install(
        "uv",
        "sync",
        "--all-packages",
        "--all-extras",
        "--frozen",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )
    _pytest(session, ROOT / "tests-integration")


@nox.session(python="3.12", default=False)
def demo(session: nox.Session) -> None:
    """The main job: apply a template in a scratch workspace and evaluate it end to end.

    Offline by default (``--model mock``, the scripted policy of ``osmosis_ai.testing``); pass a real
    model after ``--``, e.g. ``nox -s demo -- --model openai/gpt-4o-mini``.
    """
    session.run_install(
        "uv",
        "sync",
        "--all-packages",
        "--all-extras",
        "--frozen",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )
    workspace = ROOT / "build" / "demo"
    if workspace.exists():
        shutil.rmtree(workspace)
    session.run("osmosis", "init", str(workspace))
    session.chdir(workspace)
    session.run("osmosis", "template", "apply", "multiply-local-strands")
    model_args = session.posargs or ["--model", "mock"]
    session.run(
        "osmosis", "eval", "run", "configs/eval/multiply-local-strands.toml", *model_args
    )
