"""Every check a developer or CI runs, by name: ``nox -s tests``, ``lint``, ``typecheck``,
``bench``, ``reliability``, ``demo``, ``docs``.

Engine and store distributions are found by globbing ``plugins/*/pyproject.toml``,
``contrib_engines/*/pyproject.toml`` and ``contrib_stores/*/pyproject.toml``: adding a folder
adds it to every session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = False
PYTHON = os.environ.get("HERMES_HOST_NOX_PYTHON", "3.11")


def engine_dists() -> list[Path]:
    """Every engine and store distribution in the repository (order does not matter)."""
    found = (
        sorted(ROOT.glob("plugins/*/pyproject.toml"))
        + sorted(ROOT.glob("contrib_engines/*/pyproject.toml"))
        + sorted(ROOT.glob("contrib_stores/*/pyproject.toml"))
    )
    return [p.parent for p in found]


def install_all(session: nox.Session, *extras: str) -> None:
    session.install("-e", f"{ROOT}[{','.join(('test', *extras))}]")
    for dist in engine_dists():
        session.install("-e", str(dist))


def transcripts_env() -> dict[str, str]:
    default = ROOT.parent / "shared" / "data" / "transcripts"
    return {"HERMES_HOST_TRANSCRIPTS": os.environ.get("HERMES_HOST_TRANSCRIPTS", str(default))}


INTEGRATIONS = ROOT / "integrations"


def install_framework(session: nox.Session, suite: str) -> None:
    """The host and its engines plus one framework's integration, with the framework's real
    package: each framework pins its own dependencies (hermes-agent: openai==2.24.0), so each
    suite gets an environment of its own."""
    install_all(session)
    # hermes-agent: the distribution Hermes' plugin manager discovers (entry point
    # hermes_agent.plugins); it pulls hermes-agent 0.19.x, whose pins sit beside the host's
    for dist in framework_dists(suite):
        session.install("-e", str(dist))
    if suite in ("openai-agents", "langchain"):
        # an extra of the host itself: hermes_host.integrations.openai_agents / .langchain
        session.install("-e", f"{ROOT}[test,{suite}]")


def framework_python(session: nox.Session, suite: str) -> str:
    """The interpreter of a virtualenv (under the session's tmp dir) holding the host, its
    engines and ``suite``'s integration, as the ``tests`` session of that suite has them."""
    venv = Path(session.create_tmp()).resolve() / f"framework-{suite}"
    python = venv / "bin" / "python"
    if not python.exists():
        session.run("python", "-m", "venv", str(venv))
    pip = [str(python), "-m", "pip", "install", "-q"]
    session.run(*pip, "-e", f"{ROOT}[test]", *[f"-e{d}" for d in engine_dists()],
                *[f"-e{d}" for d in framework_dists(suite)], external=True)
    return str(python)


def framework_dists(suite: str) -> list[Path]:
    """The distributions a framework suite installs beside the host."""
    if suite == "hermes-agent":
        return [INTEGRATIONS / "hermes-agent-hermes-host"]
    return []


@nox.session(python=PYTHON)
@nox.parametrize("suite", ["core", "hermes-agent", "openai-agents", "langchain"])
def tests(session: nox.Session, suite: str) -> None:
    """``core``: the host and every engine distribution, all their tests but the framework
    integrations' (``pytest tests`` in such an environment skips those modules anyway).
    A framework suite (``nox -s "tests(suite='hermes-agent')"``): the host plus that
    framework's integration in its own environment, running
    ``tests/integrations/test_<suite>*.py`` only."""
    if suite == "core":
        install_all(session)
        paths = ["tests", *[str(d / "tests") for d in engine_dists() if (d / "tests").is_dir()],
                 "--ignore", str(ROOT / "tests" / "integrations")]
    else:
        pattern = f"test_{suite.replace('-', '_')}*.py"
        paths = [str(p) for p in sorted((ROOT / "tests" / "integrations").glob(pattern))]
        if not paths:
            session.skip(f"no tests match tests/integrations/{pattern} yet")
        install_framework(session, suite)
    # HERMES_HOST_REQUIRE_BROWSER=1 (set by .ci/run): the browse tests fail, not skip,
    # without /usr/bin/chromium
    browser = {k: os.environ[k] for k in ("HERMES_HOST_REQUIRE_BROWSER",) if k in os.environ}
    session.run(
        "pytest", *session.posargs, *paths, env={**transcripts_env(), **browser}, external=False
    )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the host, the engines, tests and benchmarks."""
    session.install("ruff")
    session.run("ruff", "check", ".")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the host package."""
    install_all(session)
    session.install("mypy", "types-PyYAML")
    session.run("mypy", "hermes_host")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Run every benchmarks/bench_*.py and write their sections to docs/benchmarks.md.

    Each section marks a missed target **MISSED** (benchmarks/_targets.py).  With
    ``nox -s bench -- --check`` the session fails when any target was missed, after
    writing the page.  Other arguments go to every script.  The ``openai-agents`` and
    ``langchain`` extras are installed for ``bench_integrations_frameworks.py``."""
    install_all(session, "openai-agents", "langchain")
    session.install("llm")  # the yardstick of bench_startup.py (`llm --help`, simonw/llm)
    check = "--check" in session.posargs
    args = [a for a in session.posargs if a != "--check"]
    results = Path(session.create_tmp()).resolve() / "bench-targets.jsonl"
    results.unlink(missing_ok=True)
    env = {**transcripts_env(), "HERMES_BENCH_RESULTS": str(results)}
    sections = []
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        python = "python"
        if script.stem.startswith("bench_integration_"):
            # a framework's own pins: measured in an environment of its own (see tests)
            suite = script.stem.removeprefix("bench_integration_").replace("_", "-")
            python = framework_python(session, suite)
        out = session.run(python, str(script), *args, silent=True, env=env,
                          external=python != "python")
        if isinstance(out, str):
            print(out)
            sections.append(out.strip())
    if not sections:  # --install-only: nothing ran, so the page keeps its figures
        return
    header = (
        "# Benchmarks\n\nWritten by `nox -s bench`. Figures are from one run on a shared "
        "2-core machine; compare the ratios measured within the same run, not the absolute "
        "numbers across runs. A figure that misses its target is marked **MISSED**; "
        "`nox -s bench -- --check` fails when any is.\n"
    )
    (ROOT / "docs" / "benchmarks.md").write_text(header + "\n" + "\n\n".join(sections) + "\n")
    checks = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()
              if line.strip()] if results.exists() else []
    missed = [c for c in checks if not c["met"]]
    for c in missed:
        session.warn(f"MISSED [{c['section']}] {c['name']}: {c['shown_value']} "
                     f"(target {c['comparison']} {c['shown_target']})")
    session.log(f"{len(checks) - len(missed)} of {len(checks)} benchmark targets met")
    if check and missed:
        session.error(f"{len(missed)} benchmark target(s) missed (see the MISSED lines)")


RELIABILITY_TESTS = [
    "tests/reliability",
    "tests/test_store_crash.py",
    "tests/test_host_concurrency.py",
    "tests/test_secrets_e2e.py",
    "tests/test_host_cooldown_e2e.py",
    "tests/test_host_openai_failures.py",
]


@nox.session(python=PYTHON)
def reliability(session: nox.Session) -> None:
    """The reliability suite at full size (issue 13), then its figures in
    ``docs/reliability.md``: SIGKILL trials, processes sharing sessions, fuzzing, hostile
    engines, secrets end to end, summariser faults.  ``nox -s tests`` runs the same tests at
    the reduced ``ci`` size (``HERMES_HOST_RELIABILITY_SIZE``).  Arguments go to pytest."""
    install_all(session)
    figures = Path(session.create_tmp()).resolve() / "reliability-figures.jsonl"
    figures.unlink(missing_ok=True)
    env = {**transcripts_env(), "HERMES_HOST_RELIABILITY_SIZE": "full",
           "HERMES_HOST_RELIABILITY_FIGURES": str(figures)}
    try:
        session.run("pytest", "-q", "-rxXs", *session.posargs,
                    *[str(ROOT / t) for t in RELIABILITY_TESTS], env=env)
    finally:  # a failed run still shows what it measured (the failing test records nothing)
        session.run("python", str(ROOT / "tests" / "reliability" / "render_figures.py"),
                    str(figures), str(ROOT / "docs" / "reliability.md"))
        session.log("figures written to docs/reliability.md")


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The main job on the embedded default store: ``hermes-host demo``."""
    install_all(session)
    session.run("hermes-host", "demo", *session.posargs)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the documentation with warnings as errors.  The generated reference pages
    (configuration, command line) are regenerated from the code first, so the build always
    shows the current code; ``tests/test_docs_reference.py`` fails when the committed pages
    have drifted.  Output: ``.nox/_site``."""
    session.install("-e", f"{ROOT}[docs]")
    session.run("python", str(ROOT / "docs" / "gen_reference.py"))
    site = ROOT / ".nox" / "_site"
    session.run(
        "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site),
        env={"NO_MKDOCS_2_WARNING": "1"},
    )
    session.log(f"documentation built in {site}")


@nox.session(python=PYTHON)
def scaffold(session: nox.Session) -> None:
    """An engine author's whole path, end to end, in this fresh environment:
    ``plugin new`` → ``install`` → ``engines list`` shows it → a config.yaml selecting it
    passes ``config validate`` → the new distribution's tests (conformance kit included)."""
    import shutil

    session.install("-e", f"{ROOT}[test]")
    session.install("-e", str(ROOT / "plugins" / "hermes-compressor"))
    work = Path(session.create_tmp()).resolve() / "scaffold"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    session.run("hermes-host", "plugin", "new", "nox-probe", "--dir", str(work))
    dist = work / "hermes-nox-probe"
    session.run("hermes-host", "install", "-e", str(dist))

    listed = session.run("hermes-host", "engines", "list", "--json", silent=True)
    names = {row["name"] for row in json.loads(str(listed))}
    if "nox_probe" not in names:
        session.error(f"engines list does not show nox_probe: {sorted(names)}")

    config = work / "config.yaml"
    config.write_text(
        "context:\n"
        "  engine: compressor\n"
        "  hooks:\n"
        "    select_context: [nox_probe]\n"
        "engines:\n"
        "  nox_probe:\n"
        "    keep_last: 6\n",
        encoding="utf-8",
    )
    session.run("hermes-host", "config", "validate", "--config", str(config))
    session.chdir(dist)
    session.run("pytest", "-q", *session.posargs)
