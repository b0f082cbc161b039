"""mkdocs hook: a nav entry whose page is not in this checkout is dropped, with a log line.

Some pages are produced elsewhere (``docs/benchmarks.md`` by ``nox -s bench``) or by other
authors; a strict build must not fail because one of them has not been written yet, and no
placeholder page is ever invented for it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.hermes_host")


def _prune(items: list[Any], docs: Path) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            (title, target), = item.items()
            if isinstance(target, list):
                children = _prune(target, docs)
                if children:
                    kept.append({title: children})
                continue
            item_path = target
        else:
            title, item_path = item, item
        if isinstance(item_path, str) and item_path.endswith(".md"):
            if not (docs / item_path).is_file():
                log.info("nav entry %r skipped: docs/%s does not exist yet", title, item_path)
                continue
        kept.append(item)
    return kept


def on_config(config: Any) -> Any:
    if config.nav:
        config.nav = _prune(config.nav, Path(config.docs_dir))
    return config
