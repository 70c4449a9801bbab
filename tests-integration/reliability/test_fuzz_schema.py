"""Property tests of the rollout server over real HTTP: no request gets a 5xx (#20 acceptance).

The server runs as a child process (``server_main.py``: the production ``serve()`` stack), once
for the module. Two generators:

* schemathesis reads the server's own ``/openapi.json`` (request bodies, the lease header, every
  documented status code) and generates requests for every operation from it, checking that no
  answer is a 5xx and that each status code and body is one the document declares;
* hypothesis sends raw requests to every route: arbitrary methods, percent-encoded paths with
  control characters, lease headers and bodies, and checks that the answer is never a 5xx and
  always strict JSON.

After both, the server must still be healthy and must have logged no traceback. 2,000 cases
in total (8 x 150 from the schema, 2 x 400 raw), under a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import LEASE, SERVER_MAIN, body, free_port
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

SCHEMA_EXAMPLES = 150  # per operation (5) and mode (valid and invalid requests)
RAW_EXAMPLES = 400  # per raw-route property (2 properties)
_SUPPRESS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
CHECKS = (status_code_conformance, content_type_conformance, response_schema_conformance)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    outbox: Path = tmp_path_factory.mktemp("fuzz") / "outbox"
    url = f"http://127.0.0.1:{port}"
    log = outbox.with_name("server.log").open("wb")  # uvicorn warns of every malformed request
    process = subprocess.Popen(
        [sys.executable, str(SERVER_MAIN), str(port), str(outbox), "0.5"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stderr=log,
    )
    try:
        with httpx.Client(base_url=url) as client:
            deadline = time.monotonic() + 30  # readiness: the child imports, then listens
            while True:
                assert process.poll() is None, "the server exited during start-up"
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        yield url
        # after all the fuzzing: still alive, still serving
        assert process.poll() is None, "the server died while being fuzzed"
        assert httpx.get(f"{url}/health").status_code == 200
    finally:
        process.kill()
        process.wait(10)
        log.close()
        tracebacks = outbox.with_name("server.log").read_text(errors="replace")
        assert "Traceback" not in tracebacks, tracebacks[-3000:]


@pytest.fixture(scope="module")
def api_schema(server: str) -> Any:
    return schemathesis.openapi.from_url(f"{server}/openapi.json")


OPERATIONS = [
    ("POST", "/rollout"),
    ("GET", "/rollout/{rollout_id}/result"),
    ("POST", "/rollout/cancel"),
    ("GET", "/rollout/{rollout_id}/status"),
    ("GET", "/health"),
]


@pytest.mark.parametrize(
    ("method", "path", "mode"),
    [(method, path, GenerationMode.POSITIVE) for method, path in OPERATIONS]
    # invalid requests: the three operations that take a body or a required header (a path
    # string or no input at all cannot be invalid)
    + [(method, path, GenerationMode.NEGATIVE) for method, path in OPERATIONS[:3]],
)
def test_every_operation_never_5xx(
    api_schema: Any, method: str, path: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]

    @settings(max_examples=SCHEMA_EXAMPLES, deadline=None, suppress_health_check=_SUPPRESS)
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: Any) -> None:
        response = case.call(timeout=10)
        assert response.status_code < 500, (case.method, case.path, response.text[:500])
        case.validate_response(response, checks=CHECKS)

    check()


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=10) as http:
        yield http


def _strict_json(response: httpx.Response) -> None:
    """Not a 5xx, and the body strict JSON (no bare NaN/Infinity) unless the request never
    reached the app: uvicorn answers a request it cannot parse with a plain-text 400."""
    assert response.status_code < 500, (response.request.url, response.text[:500])
    if response.headers.get("content-type", "").startswith("text/plain"):
        assert (response.status_code, response.text) == (400, "Invalid HTTP request received.")
    elif response.content:
        json.loads(response.content, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise AssertionError(f"non-standard JSON constant {name} in a response body")


segments = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=12
)
methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])


@st.composite
def raw_paths(draw: st.DrawFn) -> str:
    from urllib.parse import quote

    rollout_id = quote(draw(segments), safe="")
    return draw(
        st.sampled_from(
            [
                "/rollout",
                "/rollout/cancel",
                "/health",
                f"/rollout/{rollout_id}/result",
                f"/rollout/{rollout_id}/status",
                f"/rollout/{rollout_id}",
                f"/{rollout_id}",
            ]
        )
    )


@settings(max_examples=RAW_EXAMPLES, deadline=None, suppress_health_check=_SUPPRESS)
@given(
    method=methods,
    path=raw_paths(),
    lease=st.none()
    | st.text(alphabet=st.characters(codec="latin-1", exclude_categories=["Cc"]), max_size=40),
    content=st.binary(max_size=2048) | st.builds(lambda v: json.dumps(v).encode(), st.integers()),
    content_type=st.sampled_from(["application/json", "text/plain", "", "application/x-www"]),
)
def test_raw_routes_never_5xx(
    client: httpx.Client,
    method: str,
    path: str,
    lease: str | None,
    content: bytes,
    content_type: str,
) -> None:
    headers = {b"content-type": content_type.encode()}
    if lease is not None:  # raw latin-1 bytes on the wire (what a header may carry)
        headers[LEASE.encode()] = lease.strip(" \t").encode("latin-1")
    response = client.request(method, path, content=content, headers=headers)
    if method != "HEAD":
        _strict_json(response)
    else:
        assert response.status_code < 500


@settings(max_examples=RAW_EXAMPLES, deadline=None, suppress_health_check=_SUPPRESS)
@given(
    rollout_id=segments,
    cancel=st.fixed_dictionaries(
        {},
        optional={
            "ids": st.lists(segments, max_size=3) | st.integers() | st.none(),
            "prefix": segments | st.none() | st.booleans(),
            "all": st.booleans() | segments,
        },
    ),
    poll_with=st.sampled_from(["lease", "wrong", "missing"]),
)
def test_admission_poll_cancel_sequences_never_5xx(
    client: httpx.Client, rollout_id: str, cancel: dict[str, Any], poll_with: str
) -> None:
    admitted = client.post("/rollout", json=body(rollout_id))
    _strict_json(admitted)
    from urllib.parse import quote

    path = f"/rollout/{quote(rollout_id, safe='')}"
    headers: dict[str, str] = {}
    if admitted.status_code == 202 and poll_with != "missing":
        token = admitted.json()["polling_lease_token"]
        headers[LEASE] = token if poll_with == "lease" else token[::-1] + "x"
    _strict_json(client.get(f"{path}/result", headers=headers))
    _strict_json(client.post("/rollout/cancel", json=cancel))
    _strict_json(client.get(f"{path}/status"))
