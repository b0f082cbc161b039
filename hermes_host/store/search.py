"""Deprecated location: the SQLite search module moved to :mod:`hermes_host.store.sqlite.fts`
(issue 15: backend code lives apart).  This name stays an alias of that module."""

import sys

from hermes_host.store.sqlite import fts as _moved

sys.modules[__name__] = _moved
