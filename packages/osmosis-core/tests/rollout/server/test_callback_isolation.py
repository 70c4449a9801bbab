"""A callback receiver that never answers must not starve deliveries to the others (#20 item 9).

A raw-socket receiver reads every request and holds it unanswered; a healthy listener beside it
must still get all of its callbacks while the hung requests are all still open (the attempt
timeout is a minute, far beyond the test), and the hung receiver never sees more requests at
once than the per-receiver bound.
"""

from __future__ import annotations

import asyncio
from typing import Any

from osmosis_ai.rollout.server._impl.callbacks import _MAX_IN_FLIGHT_PER_RECEIVER

from .rollout_server_harness import CallbackListener, FakeBackend, body, running, serve_app

HUNG_ROLLOUTS = 40  # more than the whole in-flight budget of the old single semaphore (32)
HEALTHY_ROLLOUTS = 20


class HungReceiver:
    """Reads each HTTP request and answers only once ``release()`` is called."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed_unanswered = 0
        self.received = 0
        # Requests that arrived after one had already failed (closed by the sender unanswered):
        # how many of those were ever open at once.
        self.late_in_flight = 0
        self.late_max_in_flight = 0
        self.answered: list[str] = []
        self._released = asyncio.Event()
        self._changed = asyncio.Event()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def release(self) -> None:
        self._released.set()

    async def wait_until(self, predicate: Any) -> None:
        async with asyncio.timeout(4.0):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                path = head.split(b" ", 2)[1].decode()
                self.in_flight += 1
                self.received += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                late = self.closed_unanswered > 0
                if late:
                    self.late_in_flight += 1
                    self.late_max_in_flight = max(self.late_max_in_flight, self.late_in_flight)
                self._notify()
                released = asyncio.ensure_future(self._released.wait())
                gone = asyncio.ensure_future(reader.read(1))  # b"" when the sender hangs up
                await asyncio.wait({released, gone}, return_when=asyncio.FIRST_COMPLETED)
                self.in_flight -= 1
                self.late_in_flight -= late
                if not released.done():
                    released.cancel()
                    self.closed_unanswered += 1
                    self._notify()
                    return
                gone.cancel()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: 2\r\n\r\n{}"
                )
                await writer.drain()
                self.answered.append(path.rsplit("/", 1)[-1])
                self._notify()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()


def _callback_body(rollout_id: str, url: str) -> dict[str, Any]:
    return body(rollout_id, completion_callback_url=url, controller_api_key="k")


async def test_hung_receiver_does_not_starve_a_healthy_one(backend: FakeBackend) -> None:
    hung = HungReceiver()
    hung_base = await hung.start()
    healthy = CallbackListener()
    try:
        async with (
            serve_app(healthy.app) as healthy_base,
            running(backend, callback_timeout_sec=60.0) as (client, _),
        ):
            for i in range(HUNG_ROLLOUTS):
                url = f"{hung_base}/cb/completion/h{i}"
                response = await client.post("/rollout", json=_callback_body(f"h{i}", url))
                assert response.status_code == 202
            await hung.wait_until(lambda: hung.in_flight == _MAX_IN_FLIGHT_PER_RECEIVER)

            for i in range(HEALTHY_ROLLOUTS):
                url = healthy.url(healthy_base, "completion", f"g{i}")
                response = await client.post("/rollout", json=_callback_body(f"g{i}", url))
                assert response.status_code == 202
            calls = await healthy.wait_for(HEALTHY_ROLLOUTS, kind="completion")

            # every healthy callback arrived while the hung receiver still held its full share,
            # none of it answered and none given up on
            assert sorted(c.rollout_id for c in calls) == sorted(
                f"g{i}" for i in range(HEALTHY_ROLLOUTS)
            )
            assert hung.in_flight == _MAX_IN_FLIGHT_PER_RECEIVER
            assert hung.max_in_flight == _MAX_IN_FLIGHT_PER_RECEIVER
            assert (hung.answered, hung.closed_unanswered) == ([], 0)

            # once it answers, its queued callbacks follow: nothing was lost or sent twice
            hung.release()
            await hung.wait_until(lambda: len(hung.answered) == HUNG_ROLLOUTS)
            assert sorted(hung.answered) == sorted(f"h{i}" for i in range(HUNG_ROLLOUTS))
            assert hung.max_in_flight == _MAX_IN_FLIGHT_PER_RECEIVER
    finally:
        await hung.aclose()


async def test_a_failing_receiver_is_backed_off_as_one_not_once_per_rollout(
    backend: FakeBackend,
) -> None:
    """16 callbacks to a receiver that never answers: the first attempts go out together (it
    is not known to fail yet); once one has failed, the receiver gets one request at a time,
    after its backoff, instead of every delivery retrying on its own schedule (~1.5 requests/s
    for as long as it hangs). Every delivery still ends (parked for the next start)."""
    hung = HungReceiver()
    hung_base = await hung.start()
    try:
        async with running(
            backend,
            callback_timeout_sec=0.3,
            callback_backoff_initial_sec=0.1,
            callback_backoff_max_sec=0.4,
            callback_retry_budget_sec=3.0,
        ) as (client, service):
            for i in range(_MAX_IN_FLIGHT_PER_RECEIVER):
                url = f"{hung_base}/cb/completion/h{i}"
                response = await client.post("/rollout", json=_callback_body(f"h{i}", url))
                assert response.status_code == 202
            await hung.wait_until(lambda: hung.received == _MAX_IN_FLIGHT_PER_RECEIVER)
            async with asyncio.timeout(30):
                while service._deliveries:
                    await asyncio.gather(*service._deliveries, return_exceptions=True)
    finally:
        await hung.aclose()
    assert hung.max_in_flight == _MAX_IN_FLIGHT_PER_RECEIVER  # the first attempts, together
    assert hung.received > _MAX_IN_FLIGHT_PER_RECEIVER  # it was retried...
    assert hung.late_max_in_flight == 1  # ...one request at a time once it had failed
    assert hung.answered == []
