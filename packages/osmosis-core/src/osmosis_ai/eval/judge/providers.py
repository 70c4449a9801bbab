"""Where a judge model lives: 0.3's ``provider/model`` strings mapped to OpenAI-compatible endpoints.

Every provider is reached through its OpenAI-compatible chat-completions endpoint with the
``openai`` client. The table is :mod:`osmosis_ai.eval._impl.proxy.providers` (shared with the policy
upstream); for each provider it gives the default base URL, the variable holding the
key and the variable that overrides the base URL (``OPENAI_BASE_URL`` as the ``openai`` client
reads it; ``<PROVIDER>_BASE_URL`` for the others). Local servers (vLLM, SGLang, Ollama) need no
key. An explicit ``base_url=`` wins over both the variable and the default; with it, a model
string without a known provider prefix (``Qwen/Qwen3-8B``) is sent verbatim.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval._impl.proxy.providers import ALIASES, PROVIDERS, ProviderSpec
from osmosis_ai.eval.judge.errors import MissingAPIKeyError

__all__ = [
    "ALIASES",
    "KEYLESS_PLACEHOLDER",
    "PROVIDERS",
    "JudgeTarget",
    "ProviderSpec",
    "pricing_provider",
    "resolve_target",
]


#: Model families recognised without a ``provider/`` prefix (0.3 did the same).
_INFERRED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "o1", "o3", "o4", "chatgpt-"), "openai"),
    (("claude",), "anthropic"),
    (("gemini",), "gemini"),
    (("grok",), "xai"),
)
#: Sent as the bearer token to servers that need none (the ``openai`` client requires one).
KEYLESS_PLACEHOLDER = "EMPTY"


@dataclass(frozen=True, slots=True)
class JudgeTarget:
    """A resolved judge endpoint: what to call, where, with which key (never printed)."""

    provider: str
    model: str
    base_url: str
    api_key: str = field(repr=False)
    key_env: str | None = None


def resolve_target(
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeTarget:
    """Turn ``model`` (and the optional overrides) into a :class:`JudgeTarget`.

    Raises :class:`MissingAPIKeyError` when a hosted provider's key is neither passed nor in
    its environment variable, and ``ConfigurationError`` when the endpoint cannot be told.
    """
    env = os.environ if environ is None else environ
    if not isinstance(model, str) or not model.strip():
        raise ConfigurationError("the judge 'model' must be a non-empty 'provider/model' string")
    model = model.strip()
    explicit_base = _clean_base_url(base_url) if base_url else None
    prefix, sep, rest = model.partition("/")
    name = ALIASES.get(prefix.lower(), prefix.lower()) if sep else ""
    spec = PROVIDERS.get(name)
    if spec is not None and rest:
        bare = rest
    else:
        spec = _infer(model) if not sep else None
        bare = model
    if spec is None:
        if explicit_base is None:
            known = ", ".join(sorted(PROVIDERS))
            raise ConfigurationError(
                f"cannot tell which provider serves judge model {model!r}: write it as "
                f"'<provider>/<model>' (providers: {known}) or pass base_url= for any "
                "OpenAI-compatible server"
            )
        key = _clean(api_key) or KEYLESS_PLACEHOLDER
        return JudgeTarget(provider="custom", model=bare, base_url=explicit_base, api_key=key)
    resolved_base = explicit_base or _clean_base_url(env.get(spec.base_url_env) or spec.base_url)
    key = _clean(api_key) or (_clean(env.get(spec.key_env)) if spec.key_env else None)
    if key is None:
        if spec.key_required and explicit_base is None:
            raise MissingAPIKeyError(
                f"Environment variable '{spec.key_env}' is not set. Export it with your "
                f"{spec.name} API key (or pass api_key=) before calling the judge."
            )
        key = KEYLESS_PLACEHOLDER
    return JudgeTarget(
        provider=spec.name, model=bare, base_url=resolved_base, api_key=key, key_env=spec.key_env
    )


def pricing_provider(target: JudgeTarget) -> str | None:
    """The provider whose price list applies to ``target``'s calls: its provider when they go
    to that provider's own endpoint, else ``None`` (priced by the URL the calls go to, so a
    judge shorthand pointed at a local server by ``base_url=`` or ``<PROVIDER>_BASE_URL`` is
    not charged the hosted model's price)."""
    spec = PROVIDERS.get(target.provider)
    if spec is None or target.base_url != _clean_base_url(spec.base_url):
        return None
    return spec.name


def _infer(model: str) -> ProviderSpec | None:
    lowered = model.lower()
    for prefixes, name in _INFERRED:
        if lowered.startswith(prefixes):
            return PROVIDERS[name]
    return None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None


def _clean_base_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"judge base URL {url!r} must start with http:// or https:// (e.g. "
            "http://127.0.0.1:8000/v1)"
        )
    suffix = "/chat/completions"
    return url[: -len(suffix)] if url.endswith(suffix) else url
