"""Discovery reads entry-point metadata only, once per process (R-0.2, R-14.2)."""

from __future__ import annotations

import importlib.metadata

import pytest
from plugins_helpers import (
    ENGINE_GROUP,
    PROVIDER_GROUP,
    FakeDist,
    FakeInstall,
    fake_installation,
)

from hermes_host.plugins import DuplicatePluginError, discover

fake = pytest.fixture(fake_installation, name="fake")

LOUD = "raise RuntimeError('this module must never be imported by discovery')\n"


def _two_engines_and_a_provider(fake: FakeInstall) -> None:
    fake.add(
        FakeDist(
            "acme-engines",
            "1.2.3",
            {
                ENGINE_GROUP: {"alpha": "acme_alpha:Alpha", "beta": "acme_beta:Beta"},
                PROVIDER_GROUP: {"notes": "acme_notes:Notes"},
            },
            {"acme_alpha": LOUD, "acme_beta": LOUD, "acme_notes": LOUD},
        )
    )


def test_discover_reports_distribution_and_version_without_importing_r14_2(
    fake: FakeInstall,
) -> None:
    _two_engines_and_a_provider(fake)
    fake.activate()
    infos = {(i.kind, i.name): i for i in discover()}
    alpha = infos[("engine", "alpha")]
    assert (alpha.distribution, alpha.version, alpha.module) == (
        "acme-engines",
        "1.2.3",
        "acme_alpha:Alpha",
    )
    assert alpha.hooks is None and alpha.status == "not loaded"
    assert infos[("memory_provider", "notes")].status == "not loaded"
    assert not any(fake.imported(m) for m in ("acme_alpha", "acme_beta", "acme_notes"))


def test_discover_scans_entry_points_once_per_process(
    fake: FakeInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_engines_and_a_provider(fake)
    fake.activate()
    calls: list[str] = []
    real = importlib.metadata.entry_points

    def counting(**kwargs: str) -> importlib.metadata.EntryPoints:
        calls.append(kwargs.get("group", ""))
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    first = discover()
    second = discover()
    assert sorted(calls) == sorted([ENGINE_GROUP, PROVIDER_GROUP])
    assert [i.name for i in first] == [i.name for i in second]
    second[0].status = "failed"  # callers get copies: the cache cannot be corrupted
    assert discover()[0].status != "failed"


def test_load_plugins_env_hides_everything_else(
    fake: FakeInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_engines_and_a_provider(fake)
    fake.activate(allow="beta, notes")
    status = {i.name: i.status for i in discover() if i.distribution == "acme-engines"}
    assert status == {"alpha": "disabled", "beta": "not loaded", "notes": "not loaded"}

    monkeypatch.setenv("HERMES_HOST_LOAD_PLUGINS", "")  # "" = none
    assert {i.status for i in discover()} <= {"disabled"}

    monkeypatch.delenv("HERMES_HOST_LOAD_PLUGINS")  # unset = all
    status = {i.name: i.status for i in discover() if i.distribution == "acme-engines"}
    assert set(status.values()) == {"not loaded"}


def _dupes(fake: FakeInstall) -> None:
    for suffix in ("a", "b"):
        fake.add(
            FakeDist(
                f"acme-dupe-{suffix}",
                f"0.{ord(suffix) - 96}",
                {ENGINE_GROUP: {"dupe": f"acme_dupe_{suffix}:Engine"}},
            )
        )


def test_duplicate_name_from_two_distributions_is_an_error_naming_both(
    fake: FakeInstall,
) -> None:
    _dupes(fake)
    fake.activate()
    with pytest.raises(DuplicatePluginError) as err:
        discover()
    message = str(err.value)
    assert "'dupe'" in message
    assert "acme-dupe-a 0.1" in message and "acme-dupe-b 0.2" in message
    assert "HERMES_HOST_LOAD_PLUGINS" in message


def test_duplicate_hidden_by_allow_list_is_not_an_error(fake: FakeInstall) -> None:
    _dupes(fake)
    fake.add(FakeDist("acme-other", "1.0", {ENGINE_GROUP: {"other": "acme_o:E"}}))
    fake.activate(allow="other")
    visible = [i.name for i in discover() if i.status != "disabled"]
    assert visible == ["other"]


def test_same_name_in_both_groups_is_not_a_duplicate(fake: FakeInstall) -> None:
    fake.add(
        FakeDist(
            "acme-both",
            "1.0",
            {ENGINE_GROUP: {"notes": "acme_b:Engine"}, PROVIDER_GROUP: {"notes": "acme_b:P"}},
        )
    )
    fake.activate()
    kinds = sorted(i.kind for i in discover() if i.name == "notes")
    assert kinds == ["engine", "memory_provider"]
