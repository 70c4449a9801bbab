"""An OpenTelemetry collector stand-in: a real HTTP server on 127.0.0.1 that takes OTLP/HTTP log
exports (``POST /v1/logs``, an ``ExportLogsServiceRequest`` protobuf body) and decodes them with
``opentelemetry-proto``, the package that defines the wire format.

``mode`` scripts its answers: ``ok`` (200 with an ``ExportLogsServiceResponse``), ``error``
(500 on every export) or ``hang`` (no answer until the test ends, longer than the exporter waits).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from osmosis_ai.testing import serve_app

Mode = Literal["ok", "error", "hang"]
PROTOBUF = "application/x-protobuf"


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


@dataclass
class LogRecord:
    """One exported log record, decoded."""

    resource: dict[str, Any]
    scope: str
    body: Any
    severity_text: str
    severity_number: int
    time_unix_nano: int
    attributes: dict[str, Any]


@dataclass
class OtlpCollector:
    mode: Mode = "ok"
    url: str = ""
    records: list[LogRecord] = field(default_factory=list)
    #: Every export request seen: (path, content type), whatever the answer was.
    requests: list[tuple[str, str]] = field(default_factory=list)
    _release: asyncio.Event = field(default_factory=asyncio.Event)

    def for_rollout(self, rollout_id: str) -> list[LogRecord]:
        return [r for r in self.records if r.attributes.get("rollout_id") == rollout_id]

    def statuses(self, rollout_id: str) -> list[str]:
        ordered = sorted(self.for_rollout(rollout_id), key=lambda r: r.attributes["event_sequence"])
        return [r.attributes["status"] for r in ordered]

    async def _export(self, request: Request) -> Response:
        self.requests.append((request.url.path, request.headers.get("content-type", "")))
        payload = ExportLogsServiceRequest.FromString(await request.body())
        if self.mode == "hang":
            await self._release.wait()  # the exporter gave up long ago: nothing is kept
        if self.mode != "ok":
            return Response(b"collector failure", status_code=500)
        for resource_logs in payload.resource_logs:
            resource = {a.key: _value(a.value) for a in resource_logs.resource.attributes}
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    self.records.append(
                        LogRecord(
                            resource=resource,
                            scope=scope_logs.scope.name,
                            body=_value(record.body),
                            severity_text=record.severity_text,
                            severity_number=record.severity_number,
                            time_unix_nano=record.time_unix_nano,
                            attributes={a.key: _value(a.value) for a in record.attributes},
                        )
                    )
        return Response(
            ExportLogsServiceResponse().SerializeToString(), media_type=PROTOBUF, status_code=200
        )

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[OtlpCollector]:
        app = Starlette(routes=[Route("/v1/logs", self._export, methods=["POST"])])
        async with serve_app(app, lifespan="off") as url:
            self.url = url
            try:
                yield self
            finally:
                self._release.set()


def closed_port_url() -> str:
    """A loopback URL nothing listens on (a collector that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
