"""Every exception osmosis raises, in one tree under :class:`OsmosisError`.

Catch ``OsmosisError`` to catch anything this SDK raises on purpose. Each class also keeps the
standard-library base it had in osmosis-ai 0.3 (``RuntimeError``, ``TimeoutError``, ``ValueError``),
so ``except TimeoutError`` and similar code written for 0.3 keeps working.

::

    OsmosisError
    ├── ConfigurationError (ValueError)        an argument or config value is wrong: fix it and retry
    ├── PolicyError                            the current policy (chat_completions_url) could not be used
    │   ├── PolicyHTTPError (RuntimeError)     HTTP error status or no response from the policy
    │   │   └── PolicyTimeoutError (TimeoutError)
    │   └── NoActiveRolloutError (RuntimeError)  a policy-bound model was used outside a rollout
    ├── RolloutClientError                     controller side (``RolloutClient``)
    │   ├── RolloutProtocolError (RuntimeError)
    │   └── RolloutAdmissionTimeoutError (TimeoutError)
    ├── BackendError (RuntimeError)            an execution backend could not run a rollout
    ├── RolloutServerError (RuntimeError)      ``serve()`` could not keep serving
    ├── EvalError (RuntimeError)               local evaluation (``osmosis_ai.eval``)
    └── JudgeError (RuntimeError)              an LLM judge call (``osmosis_ai.eval.rubric``)

Modules that define a more specific exception subclass one of these; this module imports nothing
but the standard library, so any package (including the stdlib-only Harbor sandbox runner) may use it.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "ConfigurationError",
    "EvalError",
    "JudgeError",
    "NoActiveRolloutError",
    "OsmosisError",
    "PolicyError",
    "PolicyHTTPError",
    "PolicyTimeoutError",
    "RolloutAdmissionTimeoutError",
    "RolloutClientError",
    "RolloutProtocolError",
    "RolloutServerError",
]


class OsmosisError(Exception):
    """Base of every exception osmosis raises on purpose."""


class ConfigurationError(OsmosisError, ValueError):
    """An argument, config file value or environment variable is wrong; the message says how to fix it."""


class PolicyError(OsmosisError):
    """The current policy (the rollout's ``chat_completions_url``) could not be used."""


class PolicyHTTPError(PolicyError, RuntimeError):
    """The policy endpoint answered with an HTTP error or not at all.

    Integrations raise it so that a failing policy server is reported as ``http_error`` (an
    infrastructure failure, never reward 0) with the status code and an excerpt of the body.
    """

    def __init__(self, status_code: int | None, body_excerpt: str, url: str = "") -> None:
        self.status_code = status_code
        self.body_excerpt = body_excerpt[:500]
        self.url = url
        status = f"HTTP {status_code}" if status_code is not None else "no response"
        where = f" from {url}" if url else ""
        super().__init__(f"policy call failed: {status}{where}: {self.body_excerpt}")


class PolicyTimeoutError(PolicyHTTPError, TimeoutError):
    """A policy call did not answer in time (reported as ``timeout``)."""


class NoActiveRolloutError(PolicyError, RuntimeError):
    """A policy-bound model (``OsmosisRolloutModel``) was called outside a running rollout."""


class RolloutClientError(OsmosisError):
    """Base of the controller-side errors raised by ``RolloutClient``."""


class RolloutProtocolError(RolloutClientError, RuntimeError):
    """The rollout server answered something the protocol does not allow (0.3.8: ``.status_code``, 0 when none)."""

    def __init__(self, message: str, *, status_code: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code


class RolloutAdmissionTimeoutError(RolloutClientError, TimeoutError):
    """The server kept answering 429 until the admission deadline passed."""


class BackendError(OsmosisError, RuntimeError):
    """An execution backend could not set up or run a rollout (not the user's workflow failing)."""


class RolloutServerError(OsmosisError, RuntimeError):
    """``serve()`` could not keep serving (its protocol process died); the message says how."""


class EvalError(OsmosisError, RuntimeError):
    """A local evaluation could not start or continue; the message says what to do."""


class JudgeError(OsmosisError, RuntimeError):
    """An LLM judge call failed after its retries (reported as ``judge_error``, never a reward)."""
