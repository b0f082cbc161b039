"""Built-in memory providers (entry-point group ``hermes_host.memory_providers``)."""

from hermes_host.memory.markdown import MarkdownMemory

__all__ = ["MarkdownMemory"]
