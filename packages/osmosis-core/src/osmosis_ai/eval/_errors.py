"""Errors of a local evaluation that are not about one input file (those live beside their parser)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.errors import EvalError

if TYPE_CHECKING:
    from osmosis_ai.eval._run import EvalRun

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


def require_eval_extra() -> None:
    """Raise :class:`EvalExtraMissingError` unless uvicorn and FastAPI are importable."""
    import importlib.util

    missing = [m for m in ("uvicorn", "fastapi") if importlib.util.find_spec(m) is None]
    if missing:
        raise EvalExtraMissingError(missing)
