"""Errors of a local evaluation that are not about one input file (those live beside their parser)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.errors import EvalError

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.results.run import EvalRun

#: What to install for ``osmosis_ai.eval`` (it serves HTTP: uvicorn; FastAPI for the rollout server).
EVAL_EXTRA_HINT = (
    "pip install 'osmosis-ai[eval]' (osmosis-core alone: pip install 'osmosis-core[eval]'; "
    "the command line alone: pip install 'osmosis-cli[eval]')"
)


class EvalExtraMissingError(EvalError):
    """A dependency of the ``eval`` extra is not installed; the message names the pip command."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(
            f"local evaluation needs {', '.join(missing)}, which is not installed; "
            f"run: {EVAL_EXTRA_HINT}"
        )


class UpstreamRejected(EvalError):
    """The model endpoint refused the preflight request (bad key, unknown model...)."""

    def __init__(self, message: str, status_code: int) -> None:
        self.status_code = status_code
        super().__init__(message)


class EvalRunFailed(EvalError):
    """The session could not run at all (e.g. the rollout server would not start).

    ``result`` is the run as it stands (every work item still pending), when there is one.
    """

    def __init__(self, message: str, result: EvalRun | None = None) -> None:
        self.result = result
        super().__init__(message)


#: ``errno`` values that mean the disk (or the user's quota) is full.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


class EvalDiskFullError(EvalError):
    """A file of the run could not be written because the disk (or quota) is full.

    The run stopped there and is resumable: every result counted so far is in the fsync'd
    journal, so running it again under the same name (after freeing space) runs only the work
    items that are still pending. ``path`` is the file that could not be written (the run
    folder when the operating system did not say).
    """

    def __init__(self, path: Path, run_name: str, run_dir: Path) -> None:
        self.path = path
        self.run_name = run_name
        self.run_dir = run_dir
        super().__init__(
            f"no space left on the device while writing {path}; the run {run_name!r} stopped "
            f"and is resumable: free some space, then run it again with the same name; the "
            f"results already in {run_dir} are kept and finished work items are not run again"
        )

    def details(self) -> dict[str, Any]:
        """What a caller reports besides the message (the CLI's error envelope)."""
        return {
            "run_name": self.run_name,
            "path": str(self.path),
            "output_path": str(self.run_dir),
            "resumable": True,
        }


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is an ``OSError`` saying the disk or quota is full."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


def require_eval_extra() -> None:
    """Raise :class:`EvalExtraMissingError` unless uvicorn and FastAPI are importable."""
    import importlib.util

    missing = [m for m in ("uvicorn", "fastapi") if importlib.util.find_spec(m) is None]
    if missing:
        raise EvalExtraMissingError(missing)
