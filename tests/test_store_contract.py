"""The store contract suite (hermes_host/testing/store_suite), run here over every backend:
SQLite and PostgreSQL (a real server, started by hermes-store-postgres's test fixture).
One suite, parametrised by ``store_factory`` (issue 16), not a copy per backend."""

from hermes_host.testing.store_suite import (
    test_append,
    test_leases,
    test_publish,
    test_search,
    test_sessions,
    test_short_queries,
)

for _module in (test_append, test_leases, test_publish, test_search, test_sessions,
                test_short_queries):
    globals().update(
        {name: value for name, value in vars(_module).items()
         if name.startswith("test_") or name == "store"}
    )
del _module
