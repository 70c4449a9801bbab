"""Resolve ``--model`` / ``--base-url`` / ``--api-key-env`` into one OpenAI-compatible upstream.

Why shorthands: ``openai/gpt-4.1-mini`` is what users type (and what eval TOMLs hold in
``model_path``); it means "model ``gpt-4.1-mini`` at ``https://api.openai.com/v1`` with the key
in ``OPENAI_API_KEY``". With an explicit ``--base-url`` (vLLM, SGLang, Ollama, llama.cpp, any
gateway) the model name is sent verbatim, since served names such as ``Qwen/Qwen3-8B`` contain
slashes. ``mock`` is the offline scripted policy (a plumbing check; its rewards mean nothing);
``local`` is a real model offline (SmolLM2-135M-Instruct on llama.cpp's server, started for the
run: :class:`osmosis_ai.testing.LocalModelServer`, extra ``local-model``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval._impl.proxy.providers import known_names, lookup

MOCK_MODEL = "mock"
LOCAL_MODEL = "local"


class UpstreamError(ConfigurationError):
    """The model/endpoint flags do not describe a usable upstream."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the proxy sends chat-completions requests."""

    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    key_env: str | None = None
    is_mock: bool = False
    #: ``local``: the run starts the embedded real model and points ``base_url`` at it.
    is_local: bool = False
    #: Sampling parameters set on every forwarded request (``--temperature``, ``--model-arg``...);
    #: empty: the rollout's own values apply.
    sampling: dict[str, Any] = field(default_factory=dict)
    #: ``--mock-script``: the reply script answering for the mock policy, and its sha256.
    mock_script: str | None = None
    mock_script_sha256: str | None = None

    @property
    def chat_completions_url(self) -> str:
        """``<base_url>/chat/completions``, a query in ``base_url`` (``?api_key=``) kept after it."""
        base, sep, query = self.base_url.partition("?")
        return f"{base}/chat/completions{sep}{query}"

    @property
    def display_url(self) -> str:
        """``base_url`` as logs, files, the console and reports show it: credentials in it
        (``user:pass@``, ``?api_key=``) are masked; only requests use the real one."""
        from osmosis_ai._util.redaction import mask_url

        return mask_url(self.base_url) if self.base_url else ""

    def locked_identity(self) -> dict[str, Any]:
        """What the run manifest locks (never the key, nor credentials in the URL)."""
        identity: dict[str, Any] = {
            "model": self.model,
            # mock and local: a server the run starts itself, on a new port each time
            "base_url": None if self.is_mock or self.is_local else self.display_url,
        }
        if self.mock_script:  # only when set, like sampling
            identity["mock_script"] = {"path": self.mock_script, "sha256": self.mock_script_sha256}
        if self.sampling:  # only when set: runs without it keep their locked identity
            identity["sampling"] = dict(sorted(self.sampling.items()))
        return identity


def resolve_upstream(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    environ: dict[str, str] | None = None,
) -> Upstream:
    """Turn the flags into an :class:`Upstream`; errors say which flag or variable to set.

    An explicit ``api_key`` wins over any variable (it is never written anywhere: the run
    manifest locks the model and base URL only, and the run's log redacts the key).
    """
    env = os.environ if environ is None else environ
    model = model.strip()
    if not model:
        raise UpstreamError("no model given: pass --model or set experiment.model_path")
    if model == MOCK_MODEL and base_url is None:
        return Upstream(model=MOCK_MODEL, base_url="", is_mock=True)
    if model == LOCAL_MODEL and base_url is None:
        _check_local_model()
        return Upstream(model=LOCAL_MODEL, base_url="", is_local=True)
    if base_url is not None:
        base = _check_base_url(base_url)
        key = api_key or _read_key(api_key_env, env, required=api_key_env is not None)
        return Upstream(model=model, base_url=base, api_key=key, key_env=api_key_env)
    provider_name, sep, provider_model = model.partition("/")
    provider = lookup(provider_name) if sep else None
    if provider is None or not provider_model:
        known = known_names()
        raise UpstreamError(
            f"cannot tell where to send model {model!r}: use a provider shorthand "
            f"('<provider>/<model>', providers: {known}), pass --base-url for any "
            "OpenAI-compatible server, --model local for a real model offline, or --model "
            "mock for an offline plumbing check"
        )
    key_env = api_key_env or provider.key_env
    if api_key:
        return Upstream(model=provider_model, base_url=provider.base_url, api_key=api_key)
    key = _read_key(key_env, env, required=provider.key_required or api_key_env is not None)
    return Upstream(model=provider_model, base_url=provider.base_url, api_key=key, key_env=key_env)


def _check_local_model() -> None:
    """``--model local`` fails here, before anything starts, when the model or its server is
    not installed (the error names ``pip install 'osmosis-ai[local-model]'``)."""
    from osmosis_ai.testing.local_model import check_server_installed, find_model_file

    find_model_file()
    check_server_installed()


def _check_base_url(url: str) -> str:
    from osmosis_ai._util.redaction import mask_url

    base, sep, query = url.strip().partition("?")
    base = base.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UpstreamError(
            f"--base-url {mask_url(url.strip())!r} must start with http:// or https://"
        )
    if base.endswith("/chat/completions"):
        base = base[: -len("/chat/completions")]
    return f"{base}{sep}{query}"


def _read_key(
    var: str | None, env: os._Environ[str] | dict[str, str], *, required: bool
) -> str | None:
    if var is None:
        return None
    value = env.get(var, "").strip()
    if not value:
        if required:
            raise UpstreamError(
                f"the API key variable {var} is not set; export it (or put it in .env) "
                "or name another variable with --api-key-env"
            )
        return None
    return value
