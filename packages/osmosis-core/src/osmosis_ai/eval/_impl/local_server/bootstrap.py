"""Child-process entry that serves a rollout's ``app`` for ``osmosis eval run``.

Run as a *file* (``python bootstrap.py ENTRYPOINT ROLLOUT_DIR PORT_FILE``), not as
``-m osmosis_ai.eval...``: with ``--isolated`` it runs in the rollout's own environment, which
has osmosis-core (every rollout server needs it) but maybe not this version's ``eval`` package.
It therefore imports only the standard library, uvicorn, the stdlib-only
:mod:`osmosis_ai.rollout.entrypoint` and :mod:`osmosis_ai.listening_socket`, and the entrypoint
(plus, when that osmosis-core has them, the worker pool and the rollout server's uvicorn
settings, :func:`osmosis_ai.rollout.server.serving.uvicorn_config`), and ``openai`` when
installed, ahead of the first rollout (see :func:`_preload_policy_client`).

* The entrypoint is loaded by :func:`osmosis_ai.rollout.entrypoint.load_rollout_app`, the loader
  ``osmosis rollout validate`` and ``rollout serve`` use too: never as ``__main__`` (its
  ``if __name__ == "__main__"`` block does not run); it must expose ``app`` (the object
  ``create_rollout_server`` returns) or a zero-argument ``create_app()``, or be a 0.3.x-style
  script whose ``main()`` builds the app and calls ``uvicorn.run`` (script mode: run with
  ``uvicorn.run`` captured, so its ``host="0.0.0.0"`` is never bound; see the loader).
* The child binds 127.0.0.1 on a free port itself (or on ``_OSMOSIS_ROLLOUT_PORT``, from
  ``--rollout-port``) and reports it through ``PORT_FILE``, so there is no race between
  choosing a port and binding it.
* Parent death: with ``_OSMOSIS_EVAL_WATCH_STDIN=1`` a thread blocks on stdin, a pipe whose
  other end only the eval process holds. When that process dies for any reason (also
  ``kill -9``) the pipe reaches EOF, and the server shuts down gracefully, then hard-exits if
  draining takes too long. This works through ``uv run`` too, where the eval process is not
  the direct parent. The thread starts once the app is loaded and the worker pool has forked
  its zygote (fork needs a single-threaded process); an eval that dies during the import is
  noticed then, at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

_GRACE_SEC = 15.0


def _watch_parent() -> None:
    def watch() -> None:
        # os.read on the raw descriptor, not sys.stdin: a daemon thread blocked inside the
        # buffered reader holds its lock, which aborts the interpreter at shutdown.
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        timer = threading.Timer(_GRACE_SEC, lambda: os._exit(1))
        timer.daemon = True
        timer.start()

    threading.Thread(target=watch, name="osmosis-parent-watch", daemon=True).start()


def _load_app(entrypoint: Path, rollout_dir: Path) -> Any:
    from osmosis_ai.rollout.entrypoint import RolloutEntrypointError, load_rollout_app

    try:
        return load_rollout_app(rollout_dir, entrypoint)
    except RolloutEntrypointError as exc:
        if exc.traceback_text:
            print(exc.traceback_text, file=sys.stderr, end="")
        raise SystemExit(f"osmosis eval: {exc}") from None


def _preload_policy_client() -> None:
    """Import ``openai`` now, when installed, rather than in the first rollout's first
    ``ctx.policy.client()`` / ``OsmosisRolloutModel`` call: there it ran on the event loop and
    went into the first rows' durations (about 1 s each for the first wave against 70-90 ms
    after, ``multiply-local-strands`` with ``--model mock``). Before the worker pool forks its
    zygote, so every worker starts with it too."""
    import contextlib
    import importlib.util

    if importlib.util.find_spec("openai") is None:
        return
    # Only a head start: a rollout that never calls the policy this way must serve even when
    # this fails (an openai that does not import, or builds clients differently).
    with contextlib.suppress(Exception):
        import openai

        # A client (never used: no request is made) and its chat resource pull in the HTTP
        # stack and the resource modules openai imports on first use, another 150-250 ms.
        client = openai.AsyncOpenAI(api_key="preload", base_url="http://127.0.0.1:9/v1")
        _ = client.chat.completions


def _use_workers(app: Any) -> None:
    """``OSMOSIS_ROLLOUT_WORKERS`` (set by ``eval run --workers``): run rollouts in worker
    processes. An osmosis-core without worker support (``--isolated`` with an older pin) serves
    in one process."""
    try:
        from osmosis_ai.rollout.server._impl.workers import resolve_workers
        from osmosis_ai.rollout.server._impl.workers.pool import use_workers
    except ImportError:
        return
    count = resolve_workers(None)
    if count > 1:
        use_workers(app, count)


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit("usage: bootstrap.py ENTRYPOINT ROLLOUT_DIR PORT_FILE")
    entrypoint, rollout_dir, port_file = Path(argv[0]), Path(argv[1]), Path(argv[2])
    app = _load_app(entrypoint.resolve(), rollout_dir.resolve())
    _preload_policy_client()
    _use_workers(app)  # forks the workers' zygote: before any thread starts (see _workers.zygote)
    if os.environ.get("_OSMOSIS_EVAL_WATCH_STDIN") == "1":
        _watch_parent()  # the eval died during the import: PR_SET_PDEATHSIG, or EOF at once

    import uvicorn

    from osmosis_ai.listening_socket import bind_tcp_listener

    wanted = int(os.environ.get("_OSMOSIS_ROLLOUT_PORT") or 0)  # `eval run --rollout-port`
    try:
        sock = bind_tcp_listener("127.0.0.1", wanted)
    except OSError as exc:
        raise SystemExit(
            f"cannot serve the rollout on 127.0.0.1:{wanted} ({exc.strerror or exc}): choose "
            "another --rollout-port, or leave it out to use a free port"
        ) from None
    port = sock.getsockname()[1]
    # Not osmosis_ai.atomic_file: this file may run under an older osmosis-core (see above).
    tmp = port_file.with_name(port_file.name + ".tmp")
    tmp.write_text(str(port))
    tmp.replace(port_file)
    config = _uvicorn_config(
        app,
        log_level=os.environ.get("_OSMOSIS_EVAL_SERVER_LOG_LEVEL", "warning"),
        access_log=False,
        timeout_graceful_shutdown=10,
    )
    try:
        from osmosis_ai._util.serving import uvicorn_server
        from osmosis_ai.rollout.server.serving import run_server
    except ImportError:  # an older osmosis-core (--isolated with an older pin): plain uvicorn
        uvicorn.Server(config).run(sockets=[sock])  # plumbing-owner: allowed (older core)
    else:
        # As serve() runs it: in one process, the protocol thread (admission and polls answered
        # while rollouts keep the agent loop busy); with workers, one loop.
        run_server(app, uvicorn_server(config), sockets=[sock])


def _uvicorn_config(app: Any, **options: Any) -> Any:
    """The rollout server's own uvicorn settings (:func:`osmosis_ai.rollout.server.serving.
    uvicorn_config`: keep-alive above the platform's idle timeout, bounded connections); an
    osmosis-core without it (``--isolated`` with an older pin) gets plain uvicorn with the same
    keep-alive."""
    try:
        from osmosis_ai.rollout.server.serving import uvicorn_config
    except ImportError:
        import uvicorn

        return uvicorn.Config(app, timeout_keep_alive=2160, **options)  # plumbing-owner: older core
    return uvicorn_config(app, port=0, **options)


if __name__ == "__main__":
    main(sys.argv[1:])
