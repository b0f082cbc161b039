"""hermes-topic-router: a ``select_context`` engine for hermes-host (entry point
``topic_router``).  It keeps per-topic branches of a session and sends each turn with the
branch it belongs to.  See the README for options and composition.
"""

from hermes_topic_router.engine import TopicRouter, TopicRouterOptions, TopicRouterOptionsError

__all__ = ["TopicRouter", "TopicRouterOptions", "TopicRouterOptionsError"]
