"""The shared platform HTTP helper: status mapping, scrubbing, Retry-After, retries (real HTTP)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.http_errors import error_from_response, retry_after_seconds, scrub


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 50 < (retry_after_seconds(later) or 0) <= 60


def test_scrub_replaces_longest_secrets_first() -> None:
    assert scrub("key sk-abc and sk-abcdef", ["sk-abc", "sk-abcdef", ""]) == "key *** and ***"


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, CLIErrorCode.VALIDATION),
        (401, CLIErrorCode.AUTH_REQUIRED),
        (403, CLIErrorCode.PERMISSION_DENIED),
        (404, CLIErrorCode.NOT_FOUND),
        (409, CLIErrorCode.CONFLICT),
        (426, CLIErrorCode.UPGRADE_REQUIRED),
        (429, CLIErrorCode.RATE_LIMITED),
        (500, CLIErrorCode.PLATFORM_ERROR),
        (503, CLIErrorCode.PLATFORM_ERROR),
    ],
)
def test_status_mapping_keeps_the_platform_details(status: int, code: CLIErrorCode) -> None:
    raw = json.dumps({"error": {"code": "x", "message": "bad sk-1", "field": "f"}}).encode()
    error = error_from_response(status, raw, ["sk-1"])
    assert error.code is code
    assert error.details == {"status_code": status, "platform_code": "x", "field": "f"}
    assert "sk-1" not in error.message


class _Scripted(BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers) of the server's script."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        server = self.server
        server.seen.append(self.command)  # type: ignore[attr-defined]
        status, headers = server.script.pop(0) if server.script else (200, {})  # type: ignore[attr-defined]
        body = json.dumps({"ok": True} if status < 400 else {"error": {"code": "e"}}).encode()
        self.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.script = []  # type: ignore[attr-defined]
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _client(server: ThreadingHTTPServer, waits: list[float]) -> PlatformClient:
    return PlatformClient(f"http://127.0.0.1:{server.server_port}", "tok", sleep=waits.append)


def test_get_is_retried_with_the_waits_asked(scripted: ThreadingHTTPServer) -> None:
    scripted.script = [(503, {"Retry-After": "2"}), (429, {}), (200, {})]  # type: ignore[attr-defined]
    waits: list[float] = []
    assert _client(scripted, waits).request("GET", "/x") == {"ok": True}
    assert waits == [2.0, 1.0]  # Retry-After, then the default backoff for attempt 2


def test_post_is_retried_only_on_429(scripted: ThreadingHTTPServer) -> None:
    scripted.script = [(429, {"Retry-After": "0"}), (503, {})]  # type: ignore[attr-defined]
    waits: list[float] = []
    with pytest.raises(CLIError) as info:
        _client(scripted, waits).request("POST", "/x", json={})
    assert info.value.code is CLIErrorCode.PLATFORM_ERROR
    assert scripted.seen == ["POST", "POST"]  # type: ignore[attr-defined]


def test_gives_up_after_four_attempts_or_a_long_retry_after(
    scripted: ThreadingHTTPServer,
) -> None:
    scripted.script = [(502, {})] * 5  # type: ignore[attr-defined]
    waits: list[float] = []
    with pytest.raises(CLIError):
        _client(scripted, waits).request("GET", "/x")
    assert (len(scripted.seen), waits) == (4, [0.5, 1.0, 2.0])  # type: ignore[attr-defined]
    scripted.script = [(429, {"Retry-After": "600"})]  # type: ignore[attr-defined]
    with pytest.raises(CLIError) as info:
        _client(scripted, []).request("GET", "/x")
    assert info.value.details["retry_after"] == "600"


def test_connection_refused_is_retried_once_then_a_network_error() -> None:
    waits: list[float] = []
    client = PlatformClient("http://127.0.0.1:9", "tok", sleep=waits.append)
    with pytest.raises(CLIError) as info:
        client.request("GET", "/x")
    assert info.value.code is CLIErrorCode.NETWORK
    assert waits == [0.5]
    assert "tok" not in info.value.message
