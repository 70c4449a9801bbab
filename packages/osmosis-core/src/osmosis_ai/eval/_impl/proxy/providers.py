"""The one table of hosted and local OpenAI-compatible providers (policy upstream and judge).

For each provider: the default base URL, the variable holding its key, and the variable that
overrides the base URL (``<PROVIDER>_BASE_URL``; the judge reads it). Local servers (vLLM,
SGLang, Ollama, llama.cpp) need no key. ``local/<name>`` is a llama.cpp server on this machine:
the one ``eval run --model local`` started (it exports :data:`LOCAL_MODEL_BASE_URL_ENV` to the
rollout, so a grader's ``Judge("local/judge")`` reaches the same model), else llama.cpp's default
``127.0.0.1:8080``. :mod:`osmosis_ai.eval._impl.proxy.upstream` (``--model openai/gpt-4.1-mini``) and
:mod:`.judge.providers` (``Judge("openai/gpt-4.1-mini")``) both resolve through it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One provider's OpenAI-compatible endpoint."""

    name: str
    base_url: str
    key_env: str | None
    base_url_env: str
    key_required: bool = True


def _spec(name: str, base_url: str, key_env: str | None, *, local: bool = False) -> ProviderSpec:
    return ProviderSpec(
        name=name,
        base_url=base_url,
        key_env=key_env,
        base_url_env=f"{name.upper()}_BASE_URL",
        key_required=not local,
    )


#: Where ``local/<name>`` points: set by ``eval run --model local`` for the rollout it runs.
LOCAL_MODEL_BASE_URL_ENV = "OSMOSIS_LOCAL_MODEL_BASE_URL"

PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        _spec("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        _spec("anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
        _spec(
            "gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"
        ),
        _spec("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        _spec("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
        _spec("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        _spec("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        _spec("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
        _spec("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        _spec("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
        _spec("vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", local=True),
        _spec("sglang", "http://127.0.0.1:30000/v1", "SGLANG_API_KEY", local=True),
        _spec("ollama", "http://127.0.0.1:11434/v1", "OLLAMA_API_KEY", local=True),
        ProviderSpec("local", "http://127.0.0.1:8080/v1", None, LOCAL_MODEL_BASE_URL_ENV, False),
    )
}
#: 0.3 / LiteLLM spellings accepted as the same provider.
ALIASES: dict[str, str] = {
    "google": "gemini",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
}


def lookup(prefix: str) -> ProviderSpec | None:
    """The provider a ``<prefix>/<model>`` shorthand names (aliases and case folded)."""
    name = prefix.lower()
    return PROVIDERS.get(ALIASES.get(name, name))


def known_names() -> str:
    """The accepted prefixes, for error messages."""
    return ", ".join(sorted({*PROVIDERS, *ALIASES}))
