"""The judge's exceptions (0.3 names and constructor signatures, under :class:`JudgeError`).

A judge failure is never a reward: raised out of ``Grader.grade`` these make the rollout a
grader failure with category ``judge_error``. Each keeps 0.3's ``RuntimeError`` base.
"""

from __future__ import annotations

from osmosis_ai.errors import ConfigurationError, JudgeError


class MissingAPIKeyError(JudgeError, ConfigurationError):
    """No API key for the judge's provider: pass ``api_key=`` or export the variable named."""


class ProviderRequestError(JudgeError):
    """The judge's provider failed (after retries where retrying made sense).

    ``status_code`` is the last HTTP status seen (``None`` for a timeout, a connection failure
    or a reply that could not be parsed); ``attempts`` is how many requests were made.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        detail: str,
        *,
        status_code: int | None = None,
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.model = model
        self.detail: str = (
            detail.strip() if detail else "Provider request failed with no additional detail."
        )
        self.status_code = status_code
        self.attempts = attempts
        super().__init__(f"Provider '{provider}' request for model '{model}' failed. {self.detail}")


class ModelNotFoundError(ProviderRequestError):
    """The provider answered 404: the model name is wrong or your account cannot use it."""


__all__ = ["JudgeError", "MissingAPIKeyError", "ModelNotFoundError", "ProviderRequestError"]
