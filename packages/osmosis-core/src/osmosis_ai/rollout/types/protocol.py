"""Wire models of the rollout protocol, both generations.

* 0.3.8 (current): ``POST /rollout`` answers 202 with a polling lease; the controller long-polls
  ``GET /rollout/{id}/result`` with the ``X-Osmosis-Rollout-Lease`` header.
* 0.3.0 (callbacks): the request carries ``completion_callback_url`` (and optionally
  ``grader_callback_url``); the server POSTs :class:`RolloutCompleteRequest` and then
  :class:`GraderCompleteRequest` to them.

One request model accepts both, so one server speaks both.
"""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from osmosis_ai.rollout.identifiers import validate_rollout_id
from osmosis_ai.rollout.types.enums import GraderStatus, RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.messages import MessageDict
from osmosis_ai.rollout.types.sample import RolloutSample

POLLING_LEASE_HEADER = "X-Osmosis-Rollout-Lease"


def _finite_timeout(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError("timeout must be finite; omit it to run unbounded")
    return value


TimeoutSec = Annotated[float | None, AfterValidator(_finite_timeout)]
"""A phase timeout in seconds (``agent_timeout_sec``, ``grader_timeout_sec``): finite, or
``None`` for unbounded. Shared by the wire request and :class:`ExecutionRequest`."""


class RolloutInitRequest(BaseModel):
    """``POST /rollout`` body.

    ``rollout_id`` is required in the poll protocol and optional in the callback protocol (the
    server mints one). Unknown keys are ignored, as in the public SDK.
    """

    initial_messages: list[MessageDict]
    label: str | None = None
    metadata: dict[str, Any] | None = None
    rollout_id: str | None = None
    chat_completions_url: str
    llm_api_key: str | None = None
    grade: bool = True
    agent_timeout_sec: TimeoutSec = None
    grader_timeout_sec: TimeoutSec = None
    extra_fields: dict[str, Any] | None = None
    # 0.3.0 callback protocol.
    controller_api_key: str | None = None
    completion_callback_url: str | None = None
    grader_callback_url: str | None = None

    @field_validator("rollout_id")
    @classmethod
    def _check_rollout_id(cls, value: str | None) -> str | None:
        return None if value is None else validate_rollout_id(value)

    @field_validator("llm_api_key")
    @classmethod
    def _check_llm_api_key(cls, value: str | None) -> str | None:
        if value is not None and value == "":
            raise ValueError("llm_api_key must be omitted or a non-empty string")
        return value

    @field_validator("completion_callback_url", "grader_callback_url")
    @classmethod
    def _check_callback_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        problem = callback_url_problem(value)
        if problem is not None:
            raise ValueError(
                f"{info.field_name} must be an absolute http:// or https:// URL of the "
                f"controller's callback endpoint ({problem}); omit it to use the polling protocol"
            )
        return value

    @model_validator(mode="after")
    def _require_rollout_id_when_polling(self) -> RolloutInitRequest:
        if self.rollout_id is None and self.completion_callback_url is None:
            raise ValueError(
                "rollout_id is required (it may be omitted only with completion_callback_url, "
                "in the 0.3.0 callback protocol)"
            )
        return self

    @property
    def uses_callbacks(self) -> bool:
        return self.completion_callback_url is not None


class RolloutInitResponse(BaseModel):
    """``POST /rollout`` 202 body: the lease that authorizes polling for the result."""

    rollout_id: str
    status: RolloutStatus = RolloutStatus.QUEUED
    polling_lease_token: str = Field(min_length=1)
    result_wait_timeout_sec: float
    polling_lease_timeout_sec: float

    @model_validator(mode="after")
    def _check_timeouts(self) -> RolloutInitResponse:
        wait, lease = self.result_wait_timeout_sec, self.polling_lease_timeout_sec
        if not (math.isfinite(wait) and wait > 0):
            raise ValueError("result_wait_timeout_sec must be finite and greater than zero")
        if not (math.isfinite(lease) and lease > wait):
            raise ValueError(
                "polling_lease_timeout_sec must be finite and exceed result_wait_timeout_sec"
            )
        return self


class RolloutResultResponse(BaseModel):
    """``GET /rollout/{id}/result`` body; only ``rollout_id`` and ``status`` while in progress."""

    rollout_id: str
    status: RolloutStatus
    sample: RolloutSample | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None


class CancelRolloutsRequest(BaseModel):
    """Exactly one selector: explicit ``ids``, an id ``prefix``, or ``all``."""

    ids: list[str] | None = None
    prefix: str | None = None
    all: bool = False

    @model_validator(mode="after")
    def _one_selector(self) -> CancelRolloutsRequest:
        chosen = (self.ids is not None) + (self.prefix is not None) + bool(self.all)
        if chosen != 1:
            raise ValueError("pass exactly one selector: ids, prefix, or all")
        return self


class CancelRolloutsResponse(BaseModel):
    """Per id: ``cancelled_queued``, ``cancelled_running`` or ``not_found`` (idempotent)."""

    dispositions: dict[str, str]


class RolloutLifecycle(BaseModel):
    """The ``lifecycle`` part of ``GET /health``."""

    accepting_rollouts: bool
    active_rollouts: int = Field(ge=0)


class RolloutStatusResponse(BaseModel):
    """``GET /rollout/{id}/status`` body (an operator endpoint; removed upstream in 0.3.8)."""

    rollout_id: str
    status: RolloutStatus
    reward: float | None = None
    err_message: str | None = None


# ---- 0.3.0 callback protocol -------------------------------------------------------------


class RolloutCompleteRequest(BaseModel):
    """Body of the completion callback, POSTed right after the workflow phase."""

    status: RolloutStatus
    rollout_id: str | None = None
    extra_fields: dict[str, Any] | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None


class GraderCompleteRequest(BaseModel):
    """Body of the grader callback, POSTed after grading (or at once when grading cannot run)."""

    model_config = ConfigDict(use_enum_values=False)

    status: GraderStatus
    rollout_id: str | None = None
    sample: RolloutSample | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None


class GraderInitRequest(BaseModel):
    """Body of a POST to a remote grader endpoint (0.3.0; kept for import compatibility)."""

    sample: RolloutSample
    rollout_id: str | None = None
    completion_callback_url: str
    extra_fields: dict[str, Any] | None = None
    controller_api_key: str | None = None


class GraderInitResponse(BaseModel):
    """Empty acknowledgement of a :class:`GraderInitRequest`."""


def callback_url_problem(url: str) -> str | None:
    """What is wrong with a callback URL, or ``None`` (the URL itself is never echoed: it may
    carry credentials).

    Only the scheme and the authority decide (besides whitespace and control characters), and a
    controller sends every callback to one or two authorities, usually with the rollout id in
    the path: so an ``http://`` or ``https://`` URL is judged by its origin
    (:func:`url_origin`), parsed once per origin (cached), not once per rollout."""
    if " " in url or not url.isprintable():
        # isprintable() is false for every whitespace character but the ASCII space.
        return "it contains whitespace or control characters" if url.strip() else _EMPTY
    return _origin_problem(url_origin(url))


_EMPTY = "got an empty string"


def url_origin(url: str) -> str:
    """``scheme://authority`` of a lower-case ``http://`` or ``https://`` URL: the prefix
    ``urlsplit`` reads the scheme, host and port from (the authority ends at the first ``/``,
    ``?`` or ``#``); any other URL is returned whole."""
    if url.startswith("http://"):
        start = 7
    elif url.startswith("https://"):
        start = 8
    else:
        return url
    end = len(url)
    for delimiter in "/?#":
        index = url.find(delimiter, start, end)
        if index >= 0:
            end = index
    return url[:end]


@functools.lru_cache(maxsize=256)
def _origin_problem(url: str) -> str | None:
    if not url.strip():
        return _EMPTY
    try:
        parts = urlsplit(url)
        port = parts.port
        port_ok = port is None or port > 0
    except ValueError:
        return "it is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return f"got scheme {parts.scheme!r}" if parts.scheme else "it has no scheme"
    if not parts.hostname:
        return "it has no host"
    if not port_ok:
        return "its port is not valid"
    return None
