"""Rollout ownership telemetry: which server owns which rollout, as OTLP log records.

A training platform running many rollout servers learns which one holds a rollout, and what
state it is in, from the log records this sends to an OpenTelemetry collector. The events and
fields are osmosis-ai 0.3.8's, so a platform reading 0.3.8 servers reads this one unchanged:

* Off unless ``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` is set (the collector's base URL; records go to
  ``{endpoint}/v1/logs`` as OTLP/HTTP protobuf). Unset, nothing here is imported and admission
  pays one attribute check.
* One record per status a rollout enters: ``queued`` when it is admitted, each change the
  backend reports (``running``, ``grading``), and its terminal status (``success``, ``failure``,
  ``cancelled``) however it ends (its result, a cancel, an expired lease, a crash, the drain).
* Body ``Rollout ownership``, severity text ``INFO``; attributes ``event``
  (``rollout.ownership``), ``rollout_id``, ``server_id``, ``server_name``, ``namespace``,
  ``run_id``, ``run_name``, ``status`` and ``event_sequence`` (1, 2, ... per server process).
  Resource ``service.name = osmosis-rollout-server``.
* Only identifiers are exported, never a prompt, label, key or result: each text field must be
  non-blank, printable and at most 512 characters, or it is left out; a rollout whose id (or a
  server whose id) fails that rule is not recorded at all, since a truncated id would merge two
  owners.
* Sending happens on the OpenTelemetry SDK's batch thread: a collector that is down, slow or
  answering 500 never delays or fails a rollout; a record that cannot be made is logged and
  dropped.

The OpenTelemetry SDK and its OTLP HTTP exporter are the ``otlp`` extra. With the variable set
and the extra missing the server does not start (0.3.8 did not start either: its exporter import
failed); the error names the ``pip install`` that fixes it.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.types.enums import RolloutStatus

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider

logger = logging.getLogger("osmosis_ai.rollout.server")

ENV_ENDPOINT = "OSMOSIS_ROLLOUT_OTLP_ENDPOINT"
ENV_SERVER_ID = "OSMOSIS_ROLLOUT_SERVER_ID"
ENV_INSTANCE_ID = "_OSMOSIS_ROLLOUT_INSTANCE_ID"
ENV_SERVER_NAME = "_OSMOSIS_ROLLOUT_NAME"
ENV_NAMESPACE = "OSMOSIS_ROLLOUT_NAMESPACE"
#: The request ``metadata`` key whose ``run_id`` and ``run_name`` are exported.
METADATA_KEY = "osmosis_observability"
EVENT = "rollout.ownership"
BODY = "Rollout ownership"
SERVICE_NAME = "osmosis-rollout-server"
#: The instrumentation scope 0.3.8's records carry (its module's name).
SCOPE = "osmosis_ai.rollout.server.observability"
MAX_TEXT = 512
#: Exporter and batch settings (0.3.8's): a 2 s request timeout, batches of up to 128 records
#: every second from a queue of 1,024 (records beyond it are dropped), 3 s per export and for the
#: final flush at shutdown.
EXPORT_TIMEOUT_SEC = 2
MAX_QUEUE_SIZE = 1024
MAX_EXPORT_BATCH_SIZE = 128
SCHEDULE_DELAY_MS = 1000
EXPORT_DEADLINE_MS = 3000
FLUSH_TIMEOUT_MS = 3000

INSTALL_HINT = (
    f"{ENV_ENDPOINT} is set, so the rollout server exports ownership events to an OpenTelemetry "
    "collector, but the OpenTelemetry SDK is not installed. Run: pip install 'osmosis-ai[otlp]' "
    f"(osmosis-core alone: pip install 'osmosis-core[otlp]'), or unset {ENV_ENDPOINT}."
)


class OtlpExtraMissing(RuntimeError):
    """``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` is set without the ``otlp`` extra installed."""


def clean_text(value: object) -> str | None:
    """``value`` if it is text fit to export (non-blank, printable, at most 512 characters)."""
    if isinstance(value, str) and len(value) <= MAX_TEXT and value.strip() and value.isprintable():
        return value
    return None


def owner_fields(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's own fields: ``server_id`` (``OSMOSIS_ROLLOUT_SERVER_ID``, else the instance id
    ``osmosis eval run`` gives its server, else the host name), ``server_name`` and ``namespace``;
    each only when it is exportable text."""
    candidates = {
        "server_id": environ.get(ENV_SERVER_ID)
        or environ.get(ENV_INSTANCE_ID)
        or socket.gethostname(),
        "server_name": environ.get(ENV_SERVER_NAME, ""),
        "namespace": environ.get(ENV_NAMESPACE, ""),
    }
    return {key: value for key, value in candidates.items() if clean_text(value) is not None}


class OwnershipTelemetry:
    """Emits one ownership record per status of each admitted rollout (event-loop thread)."""

    def __init__(self, provider: LoggerProvider, owner: dict[str, str]) -> None:
        self._provider = provider
        self._log = provider.get_logger(SCOPE)
        self.owner = owner
        self._sequence = itertools.count(1)

    def observe(
        self, rollout_id: str, metadata: Mapping[str, Any] | None
    ) -> Callable[[RolloutStatus], None] | None:
        """The status observer of one admitted rollout (``None``: it cannot be exported)."""
        if clean_text(rollout_id) is None or "server_id" not in self.owner:
            return None
        fields: dict[str, str | int] = {"event": EVENT, "rollout_id": rollout_id, **self.owner}
        supplied = metadata.get(METADATA_KEY) if metadata else None
        if isinstance(supplied, Mapping):
            for key in ("run_id", "run_name"):
                value = clean_text(supplied.get(key))
                if value is not None:
                    fields[key] = value

        def record(status: RolloutStatus) -> None:
            self.record(fields, status)

        return record

    def record(self, fields: Mapping[str, str | int], status: RolloutStatus) -> None:
        """Queue one record for the batch thread; a failure is logged and the rollout goes on."""
        try:
            self._log.emit(
                timestamp=time.time_ns(),
                severity_text="INFO",
                body=BODY,
                attributes={
                    **fields,
                    "status": RolloutStatus(status).value,
                    "event_sequence": next(self._sequence),
                },
            )
        except Exception as exc:
            logger.warning("could not record the ownership of a rollout: %s", type(exc).__name__)

    def close(self) -> None:
        """Send what is queued (at most 3 s), then stop the batch thread (blocking)."""
        try:
            self._provider.force_flush(timeout_millis=FLUSH_TIMEOUT_MS)
            self._provider.shutdown()
        except Exception as exc:
            logger.warning("ownership telemetry did not shut down cleanly: %s", type(exc).__name__)


def enabled(environ: Mapping[str, str]) -> bool:
    """Whether ``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` turns the telemetry on."""
    return bool(environ.get(ENV_ENDPOINT, "").strip().rstrip("/"))


def telemetry_from_env(environ: Mapping[str, str] | None = None) -> OwnershipTelemetry | None:
    """The server's ownership telemetry, or ``None`` when ``OSMOSIS_ROLLOUT_OTLP_ENDPOINT`` is
    unset or empty. Raises :class:`OtlpExtraMissing` when it is set and the extra is absent."""
    env = os.environ if environ is None else environ
    if not enabled(env):
        return None
    endpoint = env[ENV_ENDPOINT].strip().rstrip("/")
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise OtlpExtraMissing(INSTALL_HINT) from exc
    from osmosis_ai._util.redaction import mask_url

    # A provider of our own: an application's global OpenTelemetry provider is left alone.
    provider = LoggerProvider(resource=Resource({"service.name": SERVICE_NAME}))
    exporter = OTLPLogExporter(endpoint=f"{endpoint}/v1/logs", timeout=EXPORT_TIMEOUT_SEC)
    provider.add_log_record_processor(
        BatchLogRecordProcessor(
            exporter,
            max_queue_size=MAX_QUEUE_SIZE,
            max_export_batch_size=MAX_EXPORT_BATCH_SIZE,
            schedule_delay_millis=SCHEDULE_DELAY_MS,
            export_timeout_millis=EXPORT_DEADLINE_MS,
        )
    )
    owner = owner_fields(env)
    logger.info(
        "exporting rollout ownership events to %s/v1/logs (server_id %s)",
        mask_url(endpoint),
        owner.get("server_id", "<not exportable: no events>"),
    )
    return OwnershipTelemetry(provider, owner)
