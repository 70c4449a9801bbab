"""The model preflight: one request through the policy proxy before any work item is dispatched.

A model that cannot answer at all (unreachable, a bad key, an unknown model) would fail every
work item the same way, so the session stops here with :class:`UpstreamRejected`, which says
what to fix. Rate limits and outages only warn: every call is retried anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.eval._impl.errors import UpstreamRejected

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
    from osmosis_ai.eval._impl.proxy.process import ProxyProcess
    from osmosis_ai.eval._impl.proxy.upstream import Upstream
    from osmosis_ai.eval._impl.run_dir.log import RunLog

#: Preflight answers that will fail every work item the same way.
_FATAL = frozenset({401, 403, 404})


async def preflight_model(
    proxy: PolicyProxy | ProxyProcess, upstream: Upstream, log: RunLog
) -> None:
    """One request before any work item: a model that cannot answer stops the run here."""
    status, excerpt = await proxy.preflight()
    excerpt = log.redact(excerpt)
    if status == 200:
        log.info("upstream", "model preflight ok", model=upstream.model)
        return
    where = upstream.display_url
    if status is None:  # connection refused, DNS, TLS, timeout: every call would fail the same
        error = UpstreamRejected(
            f"the model endpoint {where} could not be reached ({excerpt}); nothing was "
            "dispatched. Check --base-url (and that the model server is running).",
            0,
        )
        log.error("upstream", "model preflight failed", error=str(error))
        raise error
    fatal = status in _FATAL or (status == 400 and "model" in excerpt.lower())
    if not fatal:  # rate limits, outages: every call is retried anyway
        log.warning("upstream", "model preflight did not succeed", status=status, body=excerpt)
        return
    hint = {
        401: f"check the API key{f' in {upstream.key_env}' if upstream.key_env else ''} "
        "(or pass --api-key-env)",
        403: "the key is not allowed to use this model",
        404: "check the model name and --base-url",
    }.get(status, "check the model name")
    error = UpstreamRejected(
        f"the model endpoint {upstream.display_url} rejected model {upstream.model!r} with HTTP "
        f"{status}: {excerpt}; {hint}",
        status,
    )
    log.error("upstream", "model preflight failed", error=str(error))
    raise error
