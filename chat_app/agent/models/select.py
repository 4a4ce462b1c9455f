"""Choosing a model with one environment variable, `CHAT_APP_MODEL=provider:model`.

`openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`, `ollama:llama3.1` (OpenAI-compatible, at
`http://localhost:11434/v1`). Keys and base URLs come from the providers' usual variables. A
provider module, and its SDK, is imported only when that provider is chosen, so the app runs
without the optional extras as long as nothing asks for them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .base import Model

MODEL_ENV = "CHAT_APP_MODEL"
PROVIDERS = ("openai", "anthropic", "ollama")
OLLAMA_PORT = 11434
#: A local model may first have to load into memory before its first token.
OLLAMA_TIMEOUT = 300.0
_EXAMPLE = "openai:gpt-4o-mini, anthropic:claude-sonnet-4-5 or ollama:llama3.1"


def model_from_env(
    env: Mapping[str, str] | None = None, *, instructions: str | None = None
) -> Model | None:
    """The model `CHAT_APP_MODEL` names, or None when it is unset or empty."""
    env = os.environ if env is None else env
    spec = env.get(MODEL_ENV, "").strip()
    return model_from_spec(spec, env=env, instructions=instructions) if spec else None


def model_from_spec(
    spec: str, *, env: Mapping[str, str] | None = None, instructions: str | None = None
) -> Model:
    """The model for `provider:model`, configured from `env` (default: the process env).

    Raises `ValueError` for a malformed spec, an unknown provider or a missing API key, and
    `ImportError` naming the extras file when the provider's SDK is not installed.
    """
    env = os.environ if env is None else env
    provider, colon, name = spec.strip().partition(":")
    provider, name = provider.strip().lower(), name.strip()
    if not colon or not provider or not name:
        raise ValueError(f"{MODEL_ENV} must look like provider:model ({_EXAMPLE}); got {spec!r}.")
    if provider == "openai":
        from .openai import OpenAIModel

        api_key = env.get("OPENAI_API_KEY") or None
        base_url = env.get("OPENAI_BASE_URL") or None
        if api_key is None and base_url is None:
            raise ValueError(f"{MODEL_ENV}={spec} needs OPENAI_API_KEY.")
        # A local server behind OPENAI_BASE_URL may take no key; the SDK insists on one.
        return OpenAIModel(
            name, api_key=api_key or "not-needed", base_url=base_url, instructions=instructions
        )
    if provider == "ollama":
        from .openai import OpenAIModel

        return OpenAIModel(
            name,
            api_key="ollama",  # Ollama ignores the key; the SDK insists on one
            base_url=_ollama_base_url(env.get("OLLAMA_HOST", "")),
            provider_name="Ollama",
            instructions=instructions,
            settings={"timeout": OLLAMA_TIMEOUT},
        )
    if provider == "anthropic":
        from .anthropic import AnthropicModel

        api_key = env.get("ANTHROPIC_API_KEY") or None
        if api_key is None:
            raise ValueError(f"{MODEL_ENV}={spec} needs ANTHROPIC_API_KEY.")
        return AnthropicModel(
            name,
            api_key=api_key,
            base_url=env.get("ANTHROPIC_BASE_URL") or None,
            instructions=instructions,
        )
    raise ValueError(
        f"{MODEL_ENV} names an unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}."
    )


def _ollama_base_url(host: str) -> str:
    """Ollama's OpenAI-compatible URL from `OLLAMA_HOST`, read as Ollama reads it.

    Unset: `http://localhost:11434`. A bare `host` or `host:port` is http, port 11434 by
    default; a URL with a scheme keeps that scheme's own default port.
    """
    host = host.strip().rstrip("/")
    if not host:
        host = "localhost"
    if "://" not in host:
        name = host.split("/", 1)[0]
        host = f"http://{host}" if ":" in name else f"http://{name}:{OLLAMA_PORT}"
    return f"{host}/v1"
