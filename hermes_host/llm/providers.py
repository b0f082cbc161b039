"""Model providers are plugins: the ``hermes_host.model_providers`` entry-point group.

A model provider turns configuration into a summariser (the ``summarizer:`` section) and,
when it can, a chat model (the ``model:`` section, for ``hermes-host chat``).  Its entry
point's *name* is what users write as ``summarizer.provider`` / ``model.provider``; its value
names a class that is instantiated without arguments and satisfies :class:`ModelProvider`.
Built in (registered in hermes-host's own ``pyproject.toml``): ``anthropic``, ``offline``
and ``openai``.

The same name-before-import discipline as engines (:mod:`hermes_host.plugins`):

* :func:`provider_infos` reads entry-point metadata only — nothing is imported;
* :func:`load_provider` imports (with stevedore) only the one provider asked for, and the
  built-in providers import their SDK (``anthropic``, ``openai``) only when a summariser or
  chat model is actually built — ``import hermes_host`` and ``hermes-host --help`` never do;
* two distributions exposing one name is an error, never "last one wins".

``HERMES_HOST_LOAD_PLUGINS`` hides engines and memory providers, not model providers: a
summariser is configuration, and the offline fallback must always be there.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hermes_host.llm.base import PermanentSummaryError, Summarizer
from hermes_host.models import SummarizerSettings

if TYPE_CHECKING:
    from hermes_host.chat import ChatModel
    from hermes_host.config import ModelSection

__all__ = [
    "BUILTIN_PROVIDERS",
    "MODEL_PROVIDER_GROUP",
    "AnthropicProvider",
    "ModelProvider",
    "OfflineProvider",
    "OpenAIProvider",
    "ProviderError",
    "ProviderInfo",
    "load_provider",
    "provider_infos",
]

MODEL_PROVIDER_GROUP = "hermes_host.model_providers"

BUILTIN_PROVIDERS: dict[str, str] = {
    "anthropic": "hermes_host.llm.providers:AnthropicProvider",
    "offline": "hermes_host.llm.providers:OfflineProvider",
    "openai": "hermes_host.llm.providers:OpenAIProvider",
}
"""What hermes-host's pyproject registers.  :func:`load_provider` falls back to it when the
installed metadata lacks a built-in name (an editable install older than the group), so the
offline fallback summary is always there; :func:`provider_infos` lists metadata only."""


class ProviderError(PermanentSummaryError):
    """A model provider is not installed, fails to load, or cannot do what was asked.

    A :class:`PermanentSummaryError`, so a compression falls back to the offline summary
    and says why; ``hermes-host chat`` and ``doctor`` print it as a one-line error."""


@runtime_checkable
class ModelProvider(Protocol):
    """What a ``hermes_host.model_providers`` entry point's class provides."""

    name: str

    def summarizer(self, settings: SummarizerSettings, environ: Mapping[str, str]) -> Summarizer:
        """A summariser for the ``summarizer:`` section (raise a SummaryError if it cannot)."""
        ...

    def chat_model(self, settings: ModelSection, environ: Mapping[str, str]) -> ChatModel:
        """A chat model for the ``model:`` section (raise :class:`ProviderError` if none)."""
        ...


@dataclass(frozen=True)
class ProviderInfo:
    """One installed model provider, from entry-point metadata alone."""

    name: str
    distribution: str | None
    version: str | None
    module: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "model_provider", "distribution": self.distribution,
                "version": self.version, "module": self.module}


_lock = threading.Lock()
_loaded: dict[str, ModelProvider] = {}


def provider_infos() -> list[ProviderInfo]:
    """Installed model providers, sorted by name; imports nothing.  Raises
    :class:`ProviderError` when two distributions expose the same name."""
    found: dict[str, ProviderInfo] = {}
    for ep in importlib.metadata.entry_points(group=MODEL_PROVIDER_GROUP):
        dist = ep.dist
        info = ProviderInfo(ep.name, dist.name if dist else None, dist.version if dist else None,
                            ep.value)
        first = found.get(ep.name)
        if first is not None and first.module != info.module:
            raise ProviderError(
                f"two distributions provide the model provider {ep.name!r} (entry-point group "
                f"{MODEL_PROVIDER_GROUP}): {first.distribution} ({first.module}) and "
                f"{info.distribution} ({info.module}); uninstall one of them"
            )
        found[ep.name] = info
    return [found[name] for name in sorted(found)]


def load_provider(name: str) -> ModelProvider:
    """Import and instantiate the model provider called ``name`` (cached per process)."""
    with _lock:
        cached = _loaded.get(name)
    if cached is not None:
        return cached
    infos = {info.name: info for info in provider_infos()}
    info = infos.get(name)
    if info is None and name in BUILTIN_PROVIDERS:
        info = ProviderInfo(name, None, None, BUILTIN_PROVIDERS[name])
    if info is None:
        raise ProviderError(f"unknown model provider {name!r}; installed: "
                            f"{', '.join(infos)} (entry-point group {MODEL_PROVIDER_GROUP})")
    try:
        factory = _import(info)
        provider = factory()
    except Exception as exc:
        raise ProviderError(f"model provider {name!r} ({info.module}) failed to load: "
                            f"{type(exc).__name__}: {exc}") from None
    if not isinstance(provider, ModelProvider):
        raise ProviderError(f"model provider {name!r} ({info.module}) lacks summarizer() / "
                            "chat_model()")
    with _lock:
        return _loaded.setdefault(name, provider)


def _import(info: ProviderInfo) -> Any:
    if info.distribution is None:  # a built-in absent from the installed metadata
        return importlib.metadata.EntryPoint(info.name, info.module, MODEL_PROVIDER_GROUP).load()
    from stevedore import DriverManager

    manager: DriverManager[Any] = DriverManager(
        namespace=MODEL_PROVIDER_GROUP, name=info.name, invoke_on_load=False,
        on_load_failure_callback=_reraise,
    )
    return manager.driver if manager.driver is not None else manager.extensions[0].plugin


def _reraise(_manager: Any, _ep: Any, exc: BaseException) -> None:
    raise exc


# -- the built-in providers (their SDKs are imported inside the methods) ------------------


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


class OfflineProvider:
    """The deterministic extractive summariser; it cannot chat."""

    name = "offline"

    def summarizer(self, settings: SummarizerSettings, environ: Mapping[str, str]) -> Summarizer:
        from hermes_host.llm.offline import OfflineSummarizer

        return OfflineSummarizer()

    def chat_model(self, settings: ModelSection, environ: Mapping[str, str]) -> ChatModel:
        raise ProviderError("the offline provider writes summaries only; set model.provider "
                            "to anthropic or openai for hermes-host chat")


class AnthropicProvider:
    """The Messages API on the ``anthropic`` SDK (key: ``ANTHROPIC_API_KEY`` by default)."""

    name = "anthropic"

    def summarizer(self, settings: SummarizerSettings, environ: Mapping[str, str]) -> Summarizer:
        from hermes_host.llm.anthropic_summarizer import (
            API_KEY_ENV,
            AnthropicSummarizer,
            MissingAPIKeyError,
        )

        variable = settings.api_key_env or API_KEY_ENV
        key = _environ(environ).get(variable)
        if not key:
            raise MissingAPIKeyError("anthropic", variable)
        return AnthropicSummarizer(settings, api_key=key)

    def chat_model(self, settings: ModelSection, environ: Mapping[str, str]) -> ChatModel:
        from hermes_host.chat import AnthropicChatModel
        from hermes_host.llm.anthropic_summarizer import API_KEY_ENV, BASE_URL_ENV

        env = _environ(environ)
        variable = settings.api_key_env or API_KEY_ENV
        key = env.get(variable)
        if not key:
            raise ProviderError(f"model.provider anthropic needs an API key: set {variable} "
                                f"(and {BASE_URL_ENV} or model.base_url for another endpoint)")
        return AnthropicChatModel(
            settings.name, key, base_url=settings.base_url or env.get(BASE_URL_ENV) or None,
            timeout=settings.timeout_seconds, max_retries=settings.max_retries,
            headers=dict(settings.headers),
        )


class OpenAIProvider:
    """Chat Completions on the ``openai`` SDK: every OpenAI-compatible server."""

    name = "openai"

    def summarizer(self, settings: SummarizerSettings, environ: Mapping[str, str]) -> Summarizer:
        from hermes_host.llm.openai_summarizer import (
            BASE_URL_ENV,
            OpenAISummarizer,
            resolve_key,
        )

        base_url = settings.base_url or _environ(environ).get(BASE_URL_ENV) or None
        key = resolve_key(settings.api_key_env, base_url, _environ(environ))
        return OpenAISummarizer(settings.model_copy(update={"base_url": base_url}), api_key=key)

    def chat_model(self, settings: ModelSection, environ: Mapping[str, str]) -> ChatModel:
        from hermes_host.chat.openai_model import OpenAIChatModel
        from hermes_host.llm.base import MissingAPIKeyError
        from hermes_host.llm.openai_summarizer import BASE_URL_ENV, resolve_key

        env = _environ(environ)
        base_url = settings.base_url or env.get(BASE_URL_ENV) or None
        try:
            key = resolve_key(settings.api_key_env, base_url, env)
        except MissingAPIKeyError as exc:
            raise ProviderError(f"model.provider openai needs an API key: set {exc.variable} "
                                "(or model.base_url for a local server that needs none)"
                                ) from None
        return OpenAIChatModel(
            settings.name, key, base_url=base_url, timeout=settings.timeout_seconds,
            max_retries=settings.max_retries, headers=dict(settings.headers),
        )
