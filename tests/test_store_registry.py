"""Store backends are plugins (issue 16): ``hermes_host.stores`` entry points map a URL
scheme to a store class; SQLite is built in; a missing or unknown backend is a clear error;
a password in a store URL is never printed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_host.cli import cli
from hermes_host.store import StoreError, open_store, store_file
from hermes_host.store import registry as registry_mod
from hermes_host.store.registry import installed_stores, load_store_class, redact_url
from hermes_host.store.sqlite import SQLiteStore

SECRET = "s3cr3t-pw-77"


def _without_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    """This environment may have hermes-store-postgres installed: hide it, as if it were not."""
    real = registry_mod._entry_points

    def hidden() -> dict[str, object]:
        return {k: v for k, v in real().items() if k not in ("postgresql", "postgres")}

    monkeypatch.setattr(registry_mod, "_entry_points", hidden)


def _fake_distribution(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real installed distribution (a dist-info folder on sys.path) registering memo://,
    whose store is SQLite under another scheme — enough to prove the lookup is the plugin's."""
    (root / "memo_store.py").write_text(textwrap.dedent("""
        from hermes_host.store.sqlite import SQLiteStore

        class MemoStore(SQLiteStore):
            @classmethod
            def from_url(cls, url, *, lease_ttl):
                return cls(url.split("://", 1)[1], lease_ttl=lease_ttl)
    """))
    info = root / "memo_store-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memo-store\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text("[hermes_host.stores]\nmemo = memo_store:MemoStore\n")
    monkeypatch.syspath_prepend(str(root))


def test_sqlite_is_built_in_and_the_default_issue_16(tmp_path: Path) -> None:
    assert load_store_class(str(tmp_path / "a.db")) is SQLiteStore
    assert load_store_class(f"sqlite:///{tmp_path}/a.db") is SQLiteStore
    assert "sqlite" in {b.scheme for b in installed_stores()}
    with open_store(f"sqlite:///{tmp_path}/b.db") as store:
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / "b.db"


def test_a_third_party_distribution_adds_a_scheme_issue_16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_distribution(tmp_path, monkeypatch)
    backends = {b.scheme: b for b in installed_stores()}
    assert backends["memo"].distribution == "memo-store"
    assert backends["memo"].version == "1.2.3"
    store = open_store(f"memo://{tmp_path}/memo.db")
    try:
        assert type(store).__name__ == "MemoStore"
        session = store.create_session(title="via plugin")
        assert store.get_session(session.id).title == "via plugin"
    finally:
        store.close()
    assert (tmp_path / "memo.db").is_file()


def test_postgresql_without_its_distribution_names_it_issue_16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without_postgres(monkeypatch)
    for scheme in ("postgresql", "postgres"):
        with pytest.raises(StoreError) as caught:
            open_store(f"{scheme}://app:{SECRET}@db.internal/hermes")
        text = str(caught.value)
        assert "install hermes-store-postgres" in text and "sqlite://" in text
        assert SECRET not in text


def test_an_unknown_scheme_lists_the_known_ones_with_did_you_mean_issue_16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlit://u:{SECRET}@x/y")
    text = str(caught.value)
    assert "unknown store URL scheme sqlit://" in text
    assert "did you mean sqlite://?" in text and "installed schemes: " in text
    assert "sqlite://" in text.split("installed schemes: ", 1)[1]
    assert SECRET not in text
    with pytest.raises(StoreError, match="did you mean postgresql://"):
        open_store("postgresq://db/x")
    with pytest.raises(StoreError) as far:
        open_store("zzz://nothing/like/it")
    assert "did you mean" not in str(far.value)


def test_store_file_refuses_a_server_url_without_making_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_postgres(monkeypatch)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match="install hermes-store-postgres"):
        store_file(f"postgresql://app:{SECRET}@db/h")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://app:{SECRET}@db:5432/h", "postgresql://app:***@db:5432/h"),
        (f"postgres://:{SECRET}@db/h", "postgres://:***@db/h"),
        (f"postgresql://db/h?user=a&password={SECRET}&sslmode=require",
         "postgresql://db/h?user=a&password=***&sslmode=require"),
        ("postgresql://app@db/h", "postgresql://app@db/h"),
        ("/srv/state.db", "/srv/state.db"),
    ],
)
def test_redact_url_hides_every_password_form_issue_16(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_no_command_prints_a_store_url_password_issue_16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_postgres(monkeypatch)
    monkeypatch.chdir(tmp_path)
    url = f"postgresql://app:{SECRET}@db.internal/hermes?password={SECRET}"
    config = tmp_path / "config.yaml"
    config.write_text(f"store:\n  url: '{url}'\n")
    runner = CliRunner()
    outputs = []
    for args in (
        ["config", "show", "--config", str(config)],
        ["config", "show", "--json", "--config", str(config)],
        ["sessions", "list", "--config", str(config)],
        ["sessions", "list", "--store", url],
        ["sessions", "search", "x", "--store", url],
        ["doctor", "--config", str(config)],
        ["doctor", "--json", "--config", str(config)],
        ["engines", "list", "--json", "--config", str(config)],
    ):
        result = runner.invoke(cli, args)
        assert "Traceback" not in result.output, (args, result.output)
        outputs.append(result.output)
    assert all(SECRET not in out for out in outputs), outputs
    assert "app:***@db.internal" in outputs[0]
    assert "install hermes-store-postgres" in outputs[2]
    assert list(tmp_path.iterdir()) == [config]  # no 'postgresql:' folder, no state.db


def test_engines_list_and_doctor_show_installed_stores_issue_16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_distribution(tmp_path, monkeypatch)
    config = tmp_path / "config.yaml"
    config.write_text(f"store:\n  url: memo://{tmp_path}/m.db\n")
    listed = CliRunner().invoke(cli, ["engines", "list", "--json", "--config", str(config)])
    stores = {r["name"]: r for r in json.loads(listed.stdout) if r["kind"] == "store"}
    assert stores["memo"]["distribution"] == "memo-store" and stores["memo"]["selected"]
    assert stores["sqlite"]["selected"] is False
    table = CliRunner().invoke(cli, ["engines", "list", "--config", str(config)])
    assert "memo://" in table.output and "memo-store" in table.output
    doctor = CliRunner().invoke(cli, ["doctor", "--json", "--config", str(config)])
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert "memo:// (memo-store 1.2.3)" in checks["stores installed"]["detail"]
    assert checks["store"]["status"] == "ok" and "reachable" in checks["store"]["detail"]
