"""Lease holder identities (R-10.1); the lease behaviour itself, with real competing
processes, is the contract suite's (hermes_host/testing/store_suite/test_leases.py)."""

from __future__ import annotations

from hermes_host.store.ids import holder_is_dead, make_holder, parse_holder


def test_holder_identifies_pid_host_and_nonce_R_10_1() -> None:
    import os
    import socket

    holder = make_holder()
    assert parse_holder(holder) == (os.getpid(), socket.gethostname())
    assert make_holder() != holder  # every acquisition is distinct
    assert not holder_is_dead(holder)
    assert not holder_is_dead("pid:1/host:some-other-machine/nonce:ab")  # cannot prove it
    assert not holder_is_dead("not our format")
