"""The store contract suite (issue 16): every behaviour the host relies on from a
:class:`~hermes_host.store.StateStore`, as test modules that run against any backend.

hermes-host runs it over SQLite and PostgreSQL (``tests/test_store_contract.py``).  A
third-party store runs it against itself in one command::

    pytest --pyargs hermes_host.testing.store_suite --hermes-store 'mystore://host/db?ns={name}'

``{name}`` is replaced by a fresh name for every test, so each starts from an empty store;
the store's distribution must register its scheme in the ``hermes_host.stores`` entry
points.  Instead of a template, a distribution may provide a ``hermes_<scheme>_url_factory``
fixture (a callable returning a fresh URL) and pass ``--hermes-store <scheme>``.
"""
