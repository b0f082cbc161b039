"""hermes-count-trigger: decide to compress by message count (the docs tutorial engine)."""

from hermes_count_trigger.engine import CountTrigger

__all__ = ["CountTrigger"]
