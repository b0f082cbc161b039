"""Discovery from real installed distributions (R-0.2, R-0.3, R-14.2, R-14.5).

Builds the throwaway distributions in ``tests/fixtures/dists/`` and pip-installs them, with a
copy of hermes-host itself, into a fresh virtualenv, then runs that venv's real
``hermes-host`` console script.  The venv sees the test interpreter's site-packages (the
host's dependencies) through a ``.pth`` file — the venv-inside-a-venv equivalent of
``--system-site-packages`` — so nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DISTS = Path(__file__).resolve().parent / "fixtures" / "dists"
OURS = "good_engine,broken_engine,good_notes"
FIXTURE_DISTS = ("good_engine", "broken_engine", "dupe_a", "dupe_b")

Run = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = [
    pytest.mark.slow,  # ~15 s alone, well over 20 s on a busy 2-core machine
    pytest.mark.skipif(
        importlib.util.find_spec("pip") is None or importlib.util.find_spec("setuptools") is None,
        reason="needs pip and setuptools in the test environment to build the fixture dists",
    ),
]


def _pip(python: Path, *args: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args],
        check=True,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real-dists")
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    outer = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in dict.fromkeys(outer))
    Path(purelib, "_hermes_test_outer.pth").write_text(lines, encoding="utf-8")

    # Build from copies: an in-tree build would leave build/ and *.egg-info in the repo.
    src = root / "src"
    shutil.copytree(DISTS, src / "dists", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    host = src / "hermes-host"
    host.mkdir()
    shutil.copy(REPO / "pyproject.toml", host)
    readme = REPO / "README.md"
    (host / "README.md").write_text(readme.read_text("utf-8") if readme.exists() else "x\n")
    shutil.copytree(REPO / "hermes_host", host / "hermes_host",
                    ignore=shutil.ignore_patterns("__pycache__"))
    wheels = root / "wheels"
    _pip(python, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels),
         str(host), *(str(src / "dists" / d) for d in FIXTURE_DISTS))
    _pip(python, "install", "--no-deps", "--no-index", *map(str, sorted(wheels.glob("*.whl"))))
    return env_dir


@pytest.fixture
def run(venv: Path, tmp_path: Path) -> Run:
    def run_cli(*args: str, allow: str | None = OURS) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_HOST_")}
        env.update(HERMES_HOST_HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "c"),
                   PYTHONPATH="", COLUMNS="200")
        if allow is not None:
            env["HERMES_HOST_LOAD_PLUGINS"] = allow
        result = subprocess.run([str(venv / "bin" / "hermes-host"), *args], env=env,
                                cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in result.stderr, result.stderr
        return result

    return run_cli


def _config(tmp_path: Path, text: str, name: str = "config.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = "context:\n  engine: good_engine\nmemory:\n  providers: [good_notes]\n"


def test_console_script_runs_from_the_fresh_venv(run: Run, venv: Path) -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("hermes-host, version")
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import hermes_test_good_engine as m; print(m.__file__)"],
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv))


def test_engines_list_json_imports_only_the_selected_engine(run: Run, tmp_path: Path) -> None:
    result = run("engines", "list", "--json", "--config", _config(tmp_path, GOOD))
    assert result.returncode == 0, result.stderr
    rows = {(r["kind"], r["name"]): r for r in json.loads(result.stdout)}
    good = rows[("engine", "good_engine")]
    assert (good["distribution"], good["version"]) == ("hermes-test-good-engine", "0.3.1")
    assert good["hooks"] == ["should_compress", "compress"] and good["status"] == "loaded"
    assert rows[("memory_provider", "good_notes")]["hooks"] == ["on_pre_compress"]
    broken = rows[("engine", "broken_engine")]
    assert broken["status"] == "not loaded" and broken["hooks"] is None  # never imported
    assert {r["status"] for k, r in rows.items() if k[1] == "dupe"} == {"disabled"}


def test_engines_list_verbose_reports_the_import_error(run: Run, tmp_path: Path) -> None:
    result = run("engines", "list", "--json", "--verbose", "--config", _config(tmp_path, GOOD))
    assert result.returncode == 0
    broken = next(r for r in json.loads(result.stdout) if r["name"] == "broken_engine")
    assert broken["status"] == "failed"
    assert broken["distribution"] == "hermes-test-broken-engine" and broken["version"] == "0.0.1"
    assert broken["error"] == ("ImportError: hermes_test_broken_engine needs the package "
                               "'frobnicate', which is not installed")
    table = run("engines", "list", "--verbose", "--config", _config(tmp_path, GOOD))
    assert table.returncode == 0
    assert "hermes-test-broken-engine" in table.stdout and "failed" in table.stdout


def test_config_validate_exit_codes_for_each_selection(run: Run, tmp_path: Path) -> None:
    ok = run("config", "validate", "--config", _config(tmp_path, GOOD))
    assert ok.returncode == 0, ok.stderr
    assert "valid (context.engine: good_engine)" in ok.stdout

    broken = run("config", "validate", "--config",
                 _config(tmp_path, "context:\n  engine: broken_engine\n", "b.yaml"))
    assert broken.returncode == 2
    assert "b.yaml: context.engine: engine 'broken_engine' (hermes-test-broken-engine 0.0.1) " \
           "failed to load: ImportError: hermes_test_broken_engine needs" in broken.stderr

    typo = run("config", "validate", "--config",
               _config(tmp_path, "context:\n  engine: good_engin\n", "t.yaml"))
    assert typo.returncode == 2
    assert "unknown engine 'good_engin' (did you mean 'good_engine'?); " \
           "installed engines: broken_engine, good_engine" in typo.stderr

    bad_option = run("config", "validate", "--config", _config(
        tmp_path, GOOD + "engines:\n  good_engine: {min_tokns: 5}\n", "o.yaml"))
    assert bad_option.returncode == 2
    assert "ValueError: unknown option(s) ['min_tokns']; allowed: min_tokens" in bad_option.stderr


def test_doctor_in_the_fresh_venv(run: Run, tmp_path: Path) -> None:
    result = run("doctor", "--json", "--config", _config(tmp_path, GOOD))
    report = json.loads(result.stdout)
    checks = {c["name"]: c["status"] for c in report["checks"]}
    assert result.returncode == 0 and report["healthy"], report
    assert checks["engines selected"] == "ok" and checks["memory provider good_notes"] == "ok"


def test_duplicate_names_are_an_error_naming_both_distributions(
    run: Run, tmp_path: Path
) -> None:
    for allow in (None, "dupe"):  # everything visible, or only the duplicated name
        result = run("engines", "list", "--json", allow=allow)
        assert result.returncode == 2
        assert "two distributions provide the engine 'dupe'" in result.stderr
        assert "hermes-test-dupe-a 1.0.0" in result.stderr
        assert "hermes-test-dupe-b 1.0.1" in result.stderr
    result = run("config", "validate", "--config",
                 _config(tmp_path, "context:\n  engine: dupe\n"), allow="dupe")
    assert result.returncode == 2 and "hermes-test-dupe-b 1.0.1" in result.stderr


def test_removing_a_distribution_does_not_break_the_host_r0_2(
    run: Run, venv: Path, tmp_path: Path
) -> None:
    python = venv / "bin" / "python"
    _pip(python, "uninstall", "-y", "hermes-test-dupe-b", "hermes-test-good-engine")
    try:
        listed = run("engines", "list", "--json", allow="dupe,broken_engine")
        assert listed.returncode == 0, listed.stderr  # the duplicate is gone with its twin
        dupe = next(r for r in json.loads(listed.stdout) if r["name"] == "dupe")
        assert dupe["distribution"] == "hermes-test-dupe-a"
        gone = run("config", "validate", "--config", _config(tmp_path, GOOD))
        assert gone.returncode == 2
        assert "unknown engine 'good_engine'; installed engines: broken_engine" in gone.stderr
    finally:
        wheels = venv.parent / "wheels"
        _pip(python, "install", "--no-deps", "--no-index",
             *map(str, wheels.glob("hermes_test_dupe_b-*.whl")),
             *map(str, wheels.glob("hermes_test_good_engine-*.whl")))
