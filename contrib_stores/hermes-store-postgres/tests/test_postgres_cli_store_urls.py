"""``hermes-host demo --store URL`` and ``replay --store URL`` on a real PostgreSQL server
(issue 16): both commands took only a state.db path; a store URL now goes through the
``hermes_host.stores`` entry points like ``chat --store`` and ``config.yaml``'s store.url."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hermes_store_postgres import PostgresStore
from hermes_store_postgres.testing import TestServer

HERMES = str(Path(sys.executable).parent / "hermes-host")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HERMES_HOST_HOME": str(tmp_path / "home")}
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def test_demo_writes_its_compressing_session_into_a_postgres_store_issue_16(
    pg_url: str, hermes_postgres: TestServer, tmp_path: Path,
) -> None:
    done = subprocess.run([HERMES, "demo", "--store", pg_url], capture_output=True, text=True,
                          timeout=180, env=_env(tmp_path), check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Context compaction complete") >= 3
    assert hermes_postgres.password not in done.stdout + done.stderr
    shown = done.stdout.split("lineage: ")[1].split("newest summary")[0]  # may wrap
    lineage = [part.strip() for part in shown.split("→")]
    lineage[-1] = lineage[-1].split()[0]
    with PostgresStore(pg_url) as store:
        assert store.lineage(lineage[-1]) == lineage  # the tour's lineage is in PostgreSQL
        assert len(lineage) >= 2 and store.active_messages(lineage[-1])


def test_replay_persists_a_transcript_into_a_postgres_store_issue_16(
    pg_url: str, hermes_postgres: TestServer, tmp_path: Path,
) -> None:
    transcript = tmp_path / "t.jsonl"
    messages = [{"role": "system", "content": "You fix parsers."}]
    for i in range(6):
        messages += [{"role": "user", "content": f"question {i} about the tokenizer"},
                     {"role": "assistant", "content": f"answer {i}: the lexer was wrong"}]
    transcript.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("summarizer:\n  provider: offline\nmemory:\n  providers: []\n",
                      encoding="utf-8")
    done = subprocess.run(
        [HERMES, "replay", str(transcript), "--json", "--store", pg_url, "--config",
         str(config), "--title", "from-replay"],
        capture_output=True, text=True, timeout=180, env=_env(tmp_path), check=False)
    assert done.returncode == 0, done.stderr
    assert hermes_postgres.password not in done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["store"].startswith("postgresql://") and "***" in data["store"]
    with PostgresStore(pg_url) as store:
        stored = [r.message for r in store.lineage_messages(data["session_id"])]
        assert stored == messages[1:]
        assert store.get_session(data["lineage"][0]).title == "from-replay"
