"""Kept so ``from hermes_host.chat_openai import …`` goes on working: the OpenAI chat model
lives in :mod:`hermes_host.chat.openai_model`."""

from hermes_host.chat.openai_model import OpenAIChatModel, to_openai, usage_of

__all__ = ["OpenAIChatModel", "to_openai", "usage_of"]
