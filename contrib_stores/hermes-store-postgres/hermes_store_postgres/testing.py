"""A real PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` on loopback, torn down after.

:class:`TestServer` starts a throw-away cluster in its own temporary directory on a free
port (TCP on 127.0.0.1 with password authentication, the unix socket in the same
directory), creates a **non-superuser** role and a database with ``pg_trgm`` installed by
the administrator, and hands out a fresh schema per test (:meth:`fresh_url`) owned by that
role — the production shape: the store's role owns only its schema.

PostgreSQL refuses to run as root.  When the tests run as root (CI containers), the data
directory is given to the ``postgres`` account (or ``$HERMES_HOST_TEST_POSTGRES_OS_USER``)
and ``initdb``/``pg_ctl`` run through ``runuser -u <account> --`` (``su`` if runuser is
missing).  ``$HERMES_HOST_TEST_POSTGRES_URL`` names an existing server instead (an admin URL:
its role must be able to create roles, databases and schemas).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

__all__ = ["ServerUnavailable", "TestServer", "find_binaries"]

URL_ENV = "HERMES_HOST_TEST_POSTGRES_URL"
OS_USER_ENV = "HERMES_HOST_TEST_POSTGRES_OS_USER"


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server can be started or reached here (the message says why)."""


def find_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (PATH first, then Debian's layout)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class TestServer:
    """One running server and what the tests may do with it."""

    __test__ = False  # not a pytest test class

    admin_url: str
    """Superuser (or CREATEROLE/CREATEDB) connection to the maintenance database."""
    database: str = ""
    role: str = ""
    password: str = ""
    host: str = "127.0.0.1"
    port: int = 5432
    managed: bool = False
    """True when this object started the server (and may restart or stop it)."""
    _root: Path | None = None
    _bindir: Path | None = None
    _os_user: str | None = None
    _schemas: list[str] = field(default_factory=list)

    # -- start / stop -----------------------------------------------------------------------

    @classmethod
    def start(cls) -> TestServer:
        """The server named by ``$HERMES_HOST_TEST_POSTGRES_URL``, else a new one."""
        url = os.environ.get(URL_ENV)
        server = cls._external(url) if url else cls._launch()
        server._prepare_database()
        return server

    @classmethod
    def _external(cls, url: str) -> TestServer:
        parts = urlsplit(url)
        return cls(admin_url=url, host=parts.hostname or "127.0.0.1", port=parts.port or 5432)

    @classmethod
    def _launch(cls) -> TestServer:
        bindir = find_binaries()
        if bindir is None:
            raise ServerUnavailable(
                "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in "
                f"/usr/lib/postgresql/*/bin, and {URL_ENV} is not set"
            )
        os_user = None
        if os.geteuid() == 0:
            os_user = os.environ.get(OS_USER_ENV, "postgres")
            try:
                pwd.getpwnam(os_user)
            except KeyError:
                raise ServerUnavailable(
                    f"running as root, and there is no {os_user!r} account to run PostgreSQL "
                    f"as (PostgreSQL refuses root); set {OS_USER_ENV} or {URL_ENV}"
                ) from None
        root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
        server = cls(admin_url="", managed=True, _root=root, _bindir=bindir, _os_user=os_user)
        try:
            server._initdb()
            server._pg_ctl("start")
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        cmd = [str(a) for a in args]
        if self._os_user is not None:
            if shutil.which("runuser"):
                cmd = ["runuser", "-u", self._os_user, "--", *cmd]
            else:
                cmd = ["su", self._os_user, "-s", "/bin/sh", "-c",
                       " ".join(f"'{c}'" for c in cmd)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise ServerUnavailable(
                f"{' '.join(str(a) for a in args[:2])} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        return done

    def _initdb(self) -> None:
        assert self._root is not None and self._bindir is not None
        data = self._root / "data"
        self.password = secrets.token_hex(12)
        pwfile = self._root / "admin.pw"
        pwfile.write_text(self.password)
        if self._os_user is not None:
            entry = pwd.getpwnam(self._os_user)
            os.chmod(self._root, 0o700)
            for path in (self._root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(self._bindir / "initdb", "-D", str(data), "-U", "hermes_admin",
                  "--auth-local=trust", "--auth-host=scram-sha-256",
                  f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        self.port = _free_port()
        self.admin_url = (f"postgresql://hermes_admin:{quote(self.password)}@127.0.0.1:"
                          f"{self.port}/postgres")

    def _pg_ctl(self, action: str) -> None:
        assert self._root is not None and self._bindir is not None
        options = (f"-p {self.port} -k {self._root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                   "-c max_connections=200 -c shared_buffers=64MB")
        args = [str(self._bindir / "pg_ctl"), action, "-D", str(self._root / "data"), "-w",
                "-t", "60"]
        if action in ("start", "restart"):
            args += ["-o", options, "-l", str(self._root / "server.log")]
        if action in ("stop", "restart"):
            args += ["-m", "fast"]
        self._run(*args)

    def stop_server(self) -> None:
        """Stop the server (it keeps its data); :meth:`start_server` brings it back."""
        if not self.managed:
            raise ServerUnavailable(f"the server of {URL_ENV} is not ours to stop")
        self._pg_ctl("stop")

    def start_server(self) -> None:
        if not self.managed:
            raise ServerUnavailable(f"the server of {URL_ENV} is not ours to start")
        self._pg_ctl("start")

    def restart(self) -> None:
        """Restart the server (every open connection breaks)."""
        if not self.managed:
            raise ServerUnavailable(f"the server of {URL_ENV} is not ours to restart")
        self._pg_ctl("restart")

    def stop(self) -> None:
        if self._root is None:
            return
        if (self._root / "data" / "postmaster.pid").exists():
            try:
                self._pg_ctl("stop")
            except ServerUnavailable:
                pass
        shutil.rmtree(self._root, ignore_errors=True)
        self._root = None

    # -- role, database, schemas ------------------------------------------------------------

    def admin(self, database: str | None = None) -> psycopg.Connection[tuple[Any, ...]]:
        url = self.admin_url
        if database is not None:
            parts = urlsplit(url)
            url = urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))
        deadline = time.monotonic() + 30
        while True:
            try:
                return psycopg.connect(url, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _prepare_database(self) -> None:
        suffix = secrets.token_hex(4)
        self.role, self.database = f"hermes_app_{suffix}", f"hermes_test_{suffix}"
        self.password = app_password = secrets.token_hex(12)
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOCREATEDB "
                                 "NOCREATEROLE").format(sql.Identifier(self.role),
                                                        sql.Literal(app_password)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))
        with self.admin(self.database) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))

    def app_url(self, schema: str | None = None, **options: str) -> str:
        """The non-superuser role's URL (``?schema=`` when given)."""
        query = "&".join(f"{k}={v}" for k, v in {"schema": schema, **options}.items() if v)
        return (f"postgresql://{self.role}:{quote(self.password)}@{self.host}:{self.port}/"
                f"{self.database}" + (f"?{query}" if query else ""))

    def fresh_schema(self, name: str | None = None) -> str:
        """A new empty schema owned by the app role (the administrator's one-time step)."""
        schema = name or f"t_{secrets.token_hex(5)}"
        with self.admin(self.database) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(
                sql.Identifier(schema), sql.Identifier(self.role)))
        self._schemas.append(schema)
        return schema

    def fresh_url(self, **options: str) -> str:
        """The URL of a new, empty store (its own schema) for one test."""
        return self.app_url(self.fresh_schema(), **options)

    def terminate_backends(self, application_name: str = "hermes-host") -> int:
        """``pg_terminate_backend`` every connection of the app role; returns how many."""
        with self.admin(self.database) as conn:
            row = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE usename = %s AND application_name = %s AND pid <> pg_backend_pid()",
                (self.role, application_name),
            ).fetchone()
        return int(row[0]) if row else 0

    def drop(self) -> None:
        """Remove what :meth:`_prepare_database` made (an external server is left clean)."""
        if not self.role:
            return
        try:
            with self.admin() as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(self.database)))
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(self.role)))
        except psycopg.Error:
            pass
