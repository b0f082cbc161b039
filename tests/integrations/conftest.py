"""Tests of the framework integrations (issue 18), one suite per framework:
``test_<suite>*.py`` runs in ``nox -s tests`` under ``suite=<suite>``, in an environment
with that framework's real package installed.

Each module starts with ``pytest.importorskip(<the framework's module>)``, so in the core
environment (no framework installed) ``pytest tests`` skips these modules cleanly instead of
failing to import them.
"""
