"""The public names of R-14.3 that engine authors import from ``hermes_host``."""

from __future__ import annotations

import pydantic

import hermes_host

R_14_3_NAMES = {
    "hookimpl",
    "ShouldCompressRequest",
    "CompressDecision",
    "CompressRequest",
    "CompressResult",
    "SelectRequest",
    "SelectResult",
    "PruneRequest",
    "PruneResult",
}


def test_public_all_is_sorted_importable_and_covers_r_14_3() -> None:
    names = hermes_host.__all__
    assert names == sorted(names)  # curated and kept sorted
    for name in names:
        assert hasattr(hermes_host, name), name
    assert R_14_3_NAMES <= set(names)


def test_request_fields_of_r_14_3_exist() -> None:
    fields = {
        "ShouldCompressRequest": {"session_id", "messages"},
        "CompressRequest": {
            "session_id", "messages", "current_tokens", "focus_topic", "force",
            "memory_context", "compression_count",
        },
        "SelectRequest": {"session_id", "messages", "incoming_message", "budget_tokens"},
        "PruneRequest": {"session_id", "messages"},
        "CompressDecision": {"compress", "reason"},
        "CompressResult": {"messages"},
        "SelectResult": {"messages"},
        "PruneResult": {"messages", "pruned"},
    }
    for model_name, required in fields.items():
        model = getattr(hermes_host, model_name)
        assert issubclass(model, pydantic.BaseModel)
        assert required <= set(model.model_fields), (model_name, required - set(model.model_fields))
