"""Errors a user can cause, with stable machine-readable codes.

Every command raises :class:`CLIError` for expected failures; :mod:`osmosis_cli.main` turns it
into ``Error: <message>`` (humans) or an error envelope on stderr (``--json``) and exit code 1.
The codes are part of the CLI contract: scripts and agents branch on them, so never rename one.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class CLIErrorCode(StrEnum):
    VALIDATION = "VALIDATION"
    AUTH_REQUIRED = "AUTH_REQUIRED"
    #: The platform answered 403: the login is fine, the account or workspace may not do this.
    PERMISSION_DENIED = "PERMISSION_DENIED"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    UPGRADE_REQUIRED = "UPGRADE_REQUIRED"
    RATE_LIMITED = "RATE_LIMITED"
    PLATFORM_ERROR = "PLATFORM_ERROR"
    INTERNAL = "INTERNAL"
    INTERACTIVE_REQUIRED = "INTERACTIVE_REQUIRED"
    WORKSPACE_REQUIRED = "WORKSPACE_REQUIRED"
    NETWORK = "NETWORK"
    SUBSCRIPTION_REQUIRED = "SUBSCRIPTION_REQUIRED"
    BILLING_REQUIRED = "BILLING_REQUIRED"
    KEYRING_UNAVAILABLE = "KEYRING_UNAVAILABLE"
    CREDENTIALS_UNAVAILABLE = "CREDENTIALS_UNAVAILABLE"
    CREDENTIALS_PARSE_FAILED = "CREDENTIALS_PARSE_FAILED"
    CREDENTIALS_VERSION_CHANGED = "CREDENTIALS_VERSION_CHANGED"
    ENV_TOKEN_PLATFORM_REQUIRED = "ENV_TOKEN_PLATFORM_REQUIRED"
    ENV_TOKEN_PLATFORM_MISMATCH = "ENV_TOKEN_PLATFORM_MISMATCH"
    TOKEN_NOT_FOUND = "TOKEN_NOT_FOUND"
    KEYRING_CLEANUP_FAILED = "KEYRING_CLEANUP_FAILED"
    TOKEN_REVOKE_FAILED = "TOKEN_REVOKE_FAILED"
    #: The model endpoint of a local eval refused the API key (HTTP 401/403), not the platform.
    MODEL_AUTH = "MODEL_AUTH"
    #: A local eval could not write a file (disk or quota full); the run is resumable.
    DISK_FULL = "DISK_FULL"


class CLIError(Exception):
    """An expected failure: ``message`` says what is wrong and how to fix it."""

    def __init__(
        self,
        code: CLIErrorCode,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        exit_code: int = 1,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.exit_code = exit_code


def validation(message: str, **details: Any) -> CLIError:
    return CLIError(CLIErrorCode.VALIDATION, message, details=details)


def not_found(message: str, **details: Any) -> CLIError:
    return CLIError(CLIErrorCode.NOT_FOUND, message, details=details)


def conflict(message: str, **details: Any) -> CLIError:
    return CLIError(CLIErrorCode.CONFLICT, message, details=details)
