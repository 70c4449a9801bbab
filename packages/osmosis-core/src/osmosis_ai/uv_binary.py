"""Finding the ``uv`` executable, the one place that does it.

Why not just ``shutil.which("uv")``: a venv's ``osmosis`` run without activating the venv, or
uv installed under pyenv, leaves ``uv`` off ``PATH`` although it is on the machine, and the
Harbor backend (it builds the rollout bundle with uv) and ``eval run --isolated`` then failed
every row. The search order:

1. ``$OSMOSIS_UV`` when set (the only candidate then: an explicit choice is never second-guessed);
2. the ``uv`` Python package's ``find_uv_bin()`` (``pip install uv``; ``osmosis-harbor``
   depends on it);
3. ``uv`` next to the running interpreter (a venv's ``bin/``);
4. ``PATH``;
5. pyenv: ``$PYENV_ROOT/versions/*/bin/uv`` (any installed Python), then ``$PYENV_ROOT/shims/uv``.

:func:`find_uv` returns a path without running it; :func:`uv_version` runs ``uv --version``
(``osmosis doctor`` and the preflight show its answer or its failure).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from osmosis_ai.errors import ConfigurationError

#: What to tell a user whose machine has no uv.
INSTALL_HINT = "install it with `pip install uv` (or see https://docs.astral.sh/uv/)"


class UvNotFoundError(ConfigurationError, FileNotFoundError):
    """No usable ``uv`` executable; the message says where it was looked for."""


def find_uv() -> str:
    """The path of a ``uv`` executable; raises :class:`UvNotFoundError` with the places tried."""
    explicit = os.environ.get("OSMOSIS_UV")
    if explicit:
        if _executable(Path(explicit)):
            return explicit
        raise UvNotFoundError(
            f"OSMOSIS_UV={explicit} is not an executable file; point it at uv or unset it"
        )
    for candidate in _candidates():
        if _executable(candidate):
            return str(candidate)
    raise UvNotFoundError(
        "uv was not found (looked in: the `uv` Python package, next to "
        f"{sys.executable}, PATH and pyenv); {INSTALL_HINT}"
    )


def uv_version(uv: str, *, timeout_sec: float = 10.0) -> str:
    """Run ``uv --version``: its answer (``uv 0.9.5``); raises ``OSError`` when it fails."""
    try:
        done = subprocess.run(
            [uv, "--version"], capture_output=True, text=True, timeout=timeout_sec, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise OSError(f"`{uv} --version` did not answer within {timeout_sec:.0f}s") from exc
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip().splitlines()
        detail = output[-1] if output else "no output"
        raise OSError(f"`{uv} --version` exited with code {done.returncode}: {detail}")
    return done.stdout.strip()


def _candidates() -> list[Path]:
    found: list[Path] = []
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        found.append(Path(find_uv_bin()))
    except (ImportError, FileNotFoundError):
        pass
    found.append(Path(sys.executable).with_name("uv"))
    on_path = shutil.which("uv")
    if on_path is not None:
        found.append(Path(on_path))
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    versions = sorted((pyenv / "versions").glob("*/bin/uv"), reverse=True)
    found.extend([*versions, pyenv / "shims" / "uv"])
    return found


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
