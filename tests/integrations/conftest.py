"""The framework integration suites (issue 18).

Each ``test_<framework>*.py`` module starts with ``pytest.importorskip`` of its framework, so
the ``core`` suite (no framework installed) skips them cleanly; ``nox -s "tests(suite=...)"``
installs the framework's extra and runs them.
"""
