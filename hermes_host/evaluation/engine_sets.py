"""Engine sets: ``compressor+topic_router+retrieval`` — the first name answers the
lifecycle hooks, the others form the ``select_context`` chain, in order."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hermes_host.config import HermesConfig


@dataclass(frozen=True)
class EngineSet:
    """``compressor+topic_router+retrieval``: ``engine`` answers the lifecycle hooks,
    ``select`` is the ``select_context`` chain."""

    engine: str
    select: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return "+".join((self.engine, *self.select))

    def apply(self, config: HermesConfig) -> HermesConfig:
        hooks = {k: v for k, v in config.context.hooks.items() if k != "select_context"}
        if self.select:
            hooks["select_context"] = list(self.select)
        context = config.context.model_copy(update={"engine": self.engine, "hooks": hooks})
        return config.model_copy(update={"context": context})


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_engine_sets(spec: str) -> list[EngineSet]:
    """``"compressor,compressor+retrieval"`` → two :class:`EngineSet`; ``ValueError`` naming
    the bad part otherwise."""
    sets: list[EngineSet] = []
    for raw in spec.split(","):
        part = raw.strip()
        if not part:
            raise ValueError(
                f"empty engine set in {spec!r}; write e.g. compressor,compressor+retrieval"
            )
        names = [n.strip() for n in part.split("+")]
        for name in names:
            if not _NAME.match(name):
                raise ValueError(f"{name!r} in engine set {part!r} is not an engine name")
        if len(set(names)) != len(names):
            raise ValueError(f"engine set {part!r} names an engine twice")
        sets.append(EngineSet(names[0], tuple(names[1:])))
    return sets


def configured_engine_set(config: HermesConfig) -> EngineSet:
    """The engine set ``config`` names: ``context.engine``, then its ``select_context`` chain
    (without the engine itself)."""
    chain = config.context.hooks.get("select_context") or []
    return EngineSet(config.context.engine, tuple(n for n in chain if n != config.context.engine))
