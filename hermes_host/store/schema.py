"""Deprecated location: the SQLite schema module moved to :mod:`hermes_host.store.sqlite.schema`
(issue 15: backend code lives apart).  This name stays an alias of that module."""

import sys

from hermes_host.store.sqlite import schema as _moved

sys.modules[__name__] = _moved
