"""The policy proxy's own process (``eval run --servers``): ``python -m osmosis_ai.eval._impl.proxy.child``.

It serves the same :class:`~osmosis_ai.eval._impl.proxy.policy_proxy.PolicyProxy` (routes, retries, call records)
and talks to the controller (:class:`~osmosis_ai.eval._impl.proxy.process.ProxyProcess`) over its
stdin and stdout, one JSON object per line:

* in: the configuration first (upstream with its key, retry policy, bind address, the session's
  route key, ``llm_calls.jsonl``), then ``reset`` (a re-dispatched rollout's route starts over),
  ``close`` (a rollout ended; with ``keep`` its calls are saved and summarised) and
  ``preflight``;
* out: ``ready`` (the bound URL) or ``error``, ``closed`` (a row's
  :class:`~osmosis_ai.eval._impl.proxy.calls.CallSummary`), ``event`` (upstream retries) and the
  preflight's answer.

Routes need no opening message: a rollout's bearer token is an HMAC of its id and attempt
(:func:`~osmosis_ai.eval._impl.proxy.asgi.route_token`) under a key only the controller and this process
hold, so the proxy checks it on the first call; closed rollouts get ``404``, tokens of an older
attempt ``401``. The process ignores SIGINT (the controller stops it) and exits when its stdin
closes, so it never outlives the controller.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import signal
import sys
from typing import Any

from osmosis_ai._util import framing
from osmosis_ai.eval._impl.proxy.asgi import Scope, bearer, route_token
from osmosis_ai.eval._impl.proxy.caller import UpstreamCaller
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy, ProxyRoute
from osmosis_ai.eval._impl.proxy.upstream import Upstream

#: Longest generation number a token may carry (a bound on what ``int()`` parses).
_MAX_GENERATION_DIGITS = 9


class SignedRoutesProxy(PolicyProxy):
    """A :class:`PolicyProxy` whose routes are opened by their signed tokens (see the module
    docstring) and closed by the controller's ``close``."""

    def __init__(self, caller: UpstreamCaller, key: bytes, *, token_ids: bool = False) -> None:
        super().__init__(caller, token_ids=token_ids)
        self._key = key
        self._closed: set[str] = set()

    def _route(self, rollout_id: str, scope: Scope) -> ProxyRoute | tuple[int, str, str]:
        if rollout_id in self._closed:
            return 404, f"unknown or finished rollout {rollout_id!r}", "not_found"
        given = bearer(scope) or ""
        prefix = given.partition(".")[0]
        well_formed = prefix.isdigit() and len(prefix) <= _MAX_GENERATION_DIGITS
        generation = int(prefix) if well_formed else -1
        if not (
            well_formed
            and hmac.compare_digest(
                given.encode(), route_token(self._key, rollout_id, generation).encode()
            )
        ):
            return 401, "invalid or missing bearer token for this rollout", "auth"
        self.reset(rollout_id, generation)  # the first call of this attempt opens its route
        route = self._routes[rollout_id]
        if route.generation > generation:
            return 401, "this attempt of the rollout was re-dispatched elsewhere", "auth"
        return route

    def reset(self, rollout_id: str, generation: int) -> None:
        """A new attempt: the route starts over (earlier attempts' calls are dropped)."""
        route = self._routes.get(rollout_id)
        if route is None or route.generation < generation:
            self._routes[rollout_id] = ProxyRoute("", generation=generation)

    def close(self, rollout_id: str) -> None:
        """Later calls of ``rollout_id`` get ``404``."""
        self._closed.add(rollout_id)


async def _serve(config: dict[str, Any], reader: asyncio.StreamReader, out: Any) -> None:
    def send(message: dict[str, Any]) -> None:
        out.write(framing.encode(message))

    caller = UpstreamCaller(
        Upstream(**config["upstream"]),
        retry=RetryPolicy(**config["retry"]),
        on_event=lambda kind, details: send({"op": "event", "kind": kind, "details": details}),
    )
    proxy = SignedRoutesProxy(caller, bytes.fromhex(config["key"]), token_ids=config["token_ids"])
    try:
        await proxy.start(config["host"], config["port"])
    except OSError as exc:
        send(
            {"op": "error", "message": f"cannot listen on {config['host']}:{config['port']}: {exc}"}
        )
        return
    try:
        with open(config["calls_path"], "a", encoding="utf-8") as calls_file:  # noqa: ASYNC230 (once)
            proxy.calls_file = calls_file
            send({"op": "ready", "url": proxy.base_url})
            while (message := await framing.read_message(reader)) is not None:
                await _handle(proxy, message, send)
    finally:
        await proxy.aclose()


async def _handle(proxy: SignedRoutesProxy, message: dict[str, Any], send: Any) -> None:
    op = message["op"]
    if op == "close":
        rollout_id = message["id"]
        proxy.close(rollout_id)
        if message["keep"]:
            summary = await proxy.finish(rollout_id)
            send({"op": "closed", "id": rollout_id, "summary": summary.to_json()})
        else:
            proxy.discard(rollout_id)
    elif op == "reset":
        proxy.reset(message["id"], message["generation"])
    elif op == "preflight":
        status, excerpt = await proxy.preflight()
        send({"op": "preflight", "status": status, "excerpt": excerpt})


async def _main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    # The protocol gets its own copy of stdout; stray prints go to stderr.
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, protocol_out)
    config = framing.decode(await reader.readline())
    try:
        await _serve(config, reader, transport)
    finally:
        transport.close()


if __name__ == "__main__":
    from osmosis_ai.eval._impl.api import loop_factory

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(_main(), loop_factory=loop_factory())  # uvloop, as the controller's loop
