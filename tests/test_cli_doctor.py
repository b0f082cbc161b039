"""``hermes-host doctor``: config, plugins, store path, tokenizer, versions; exit 0 or 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugins_helpers import FakeInstall, fake_installation, standard_install, write_config

from hermes_host.cli import cli

fake = pytest.fixture(fake_installation, name="fake")


def _doctor(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["doctor", "--json", *args])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout)


def _checks(report: dict) -> dict[str, tuple[str, str]]:
    return {c["name"]: (c["status"], c["detail"]) for c in report["checks"]}


def test_doctor_healthy_installation_exit_0(fake: FakeInstall, tmp_path: Path) -> None:
    standard_install(fake)
    store = tmp_path / "data" / "state.db"
    config = write_config(
        tmp_path,
        f"context:\n  engine: alpha\nmemory:\n  providers: [notes]\nstore:\n  url: {store}\n",
    )
    code, report = _doctor("--config", str(config))
    checks = _checks(report)
    assert code == 0 and report["healthy"] is True, checks
    assert checks["config"] == ("ok", f"{config}: valid")
    assert checks["plugins installed"][0] == "ok"
    assert "engines: alpha, broken, loud" in checks["plugins installed"][1]
    assert checks["engines selected"] == ("ok", "context.engine: alpha")
    assert checks["memory provider notes"] == ("ok", "loaded")
    status, detail = checks["store"]
    assert status == "ok" and str(store) in detail and "will be created" in detail
    assert checks["tokenizer"][0] in ("ok", "warn") and checks["tokenizer"][1]
    assert report["python"] and report["hermes_host"]


def test_doctor_reports_a_broken_selected_engine_exit_1(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(tmp_path, "context:\n  engine: broken\nmemory:\n  providers: [ghost]\n")
    code, report = _doctor("--config", str(config))
    checks = _checks(report)
    assert code == 1 and report["healthy"] is False
    status, detail = checks["engines selected"]
    assert status == "fail" and "'broken' (acme-broken 0.0.7) failed to load" in detail
    # a missing memory provider is a warning, not a failure
    assert checks["memory provider ghost"] == ("warn", "'ghost' not installed")


def test_doctor_missing_memory_provider_is_a_warning_only(
    fake: FakeInstall, tmp_path: Path
) -> None:
    standard_install(fake)
    config = write_config(
        tmp_path,
        "context:\n  engine: alpha\nmemory:\n  providers: [ghost]\n"
        f"store:\n  url: {tmp_path}/s.db\n",
    )
    code, report = _doctor("--config", str(config))
    status, detail = _checks(report)["memory provider ghost"]
    assert code == 0 and status == "warn" and "'ghost' not installed" in detail


def test_doctor_invalid_config_and_unwritable_store(fake: FakeInstall, tmp_path: Path) -> None:
    standard_install(fake)
    code, report = _doctor("--config", str(write_config(tmp_path, "modle: {}\n")))
    assert code == 1 and _checks(report)["config"][0] == "fail"
    assert "modle: unknown key" in _checks(report)["config"][1]

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    config = write_config(
        tmp_path, f"context:\n  engine: alpha\nstore:\n  url: sqlite:///{blocker}/sub/state.db\n",
        name="c2.yaml",
    )
    code, report = _doctor("--config", str(config))
    status, detail = _checks(report)["store"]
    assert code == 1 and status == "fail" and f"{blocker} is not a directory" in detail


def test_doctor_table_output(fake: FakeInstall, tmp_path: Path) -> None:
    standard_install(fake)
    config = write_config(tmp_path, f"context:\n  engine: loud\nstore:\n  url: {tmp_path}/s.db\n")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["doctor", "--config", str(config)])
    assert result.exit_code == 1
    assert "engines selected" in result.stdout and "fail" in result.stdout
    assert "(acme-loud 0.1) failed to load: RuntimeError" in result.stdout
    assert result.stdout.rstrip().endswith("problems found")


def _store_config(tmp_path: Path, store: Path) -> Path:
    return write_config(tmp_path, f"memory:\n  providers: []\nstore:\n  url: {store}\n")


def test_doctor_reads_an_existing_store_without_changing_it(tmp_path: Path) -> None:
    from hermes_host.store import open_store
    from hermes_host.store.sqlite import DEFER_TRIGRAM_MIN
    from hermes_host.store.sqlite.schema import LATEST_VERSION

    store_path = tmp_path / "state.db"
    with open_store(store_path) as store:
        session = store.create_session()
        store.append_messages(session.id, [{"role": "user", "content": f"m{i}"}
                                           for i in range(DEFER_TRIGRAM_MIN)])
    before = store_path.read_bytes()
    _, report = _doctor("--config", str(_store_config(tmp_path, store_path)))
    status, detail = _checks(report)["store contents"]
    assert status == "ok", detail
    assert f"schema version {LATEST_VERSION} (current)" in detail
    assert f"1 session, {DEFER_TRIGRAM_MIN} messages" in detail
    assert f"{DEFER_TRIGRAM_MIN} messages not in the substring index yet" in detail
    assert store_path.read_bytes() == before


def test_doctor_says_an_older_store_will_be_migrated(tmp_path: Path) -> None:
    import sqlite3

    from hermes_host.store.sqlite.schema import MIGRATIONS, migrate

    store_path = tmp_path / "state.db"
    conn = sqlite3.connect(store_path, isolation_level=None)
    migrate(conn, store_path, MIGRATIONS[:1])
    conn.close()
    _, report = _doctor("--config", str(_store_config(tmp_path, store_path)))
    status, detail = _checks(report)["store contents"]
    assert status == "ok" and "schema version 1: migrated to" in detail, detail
    check = sqlite3.connect(store_path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == 1  # doctor migrated nothing
    check.close()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        ("newer", "newer than this hermes-host understands"),
        ("garbage", "not a hermes-host store"),
    ],
)
def test_doctor_fails_on_a_store_it_cannot_use(tmp_path: Path, make: str, expected: str) -> None:
    import sqlite3

    from hermes_host.store import open_store
    from hermes_host.store.sqlite.schema import LATEST_VERSION

    store_path = tmp_path / "state.db"
    if make == "newer":
        open_store(store_path).close()
        conn = sqlite3.connect(store_path)
        conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
        conn.commit()
        conn.close()
    else:
        store_path.write_bytes(b"not sqlite at all " * 100)
    code, report = _doctor("--config", str(_store_config(tmp_path, store_path)))
    status, detail = _checks(report)["store contents"]
    assert code == 1 and status == "fail" and expected in detail, detail


def test_doctor_refuses_a_store_url_it_cannot_open_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_host.store import registry

    real = registry._entry_points  # as if hermes-store-postgres were not installed
    monkeypatch.setattr(registry, "_entry_points",
                        lambda: {k: v for k, v in real().items() if k != "postgresql"})
    config = write_config(tmp_path, "memory:\n  providers: []\nstore:\n  url: postgresql://app:pw-51@db/h\n")
    code, report = _doctor("--config", str(config))
    status, detail = _checks(report)["store"]
    assert code == 1 and status == "fail"
    assert "install hermes-store-postgres" in detail
    assert "pw-51" not in json.dumps(report)  # the URL may carry a password
    assert not (tmp_path / "postgresql:").exists()
