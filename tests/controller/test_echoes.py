"""Parking a key until a version of its object arrives (controller/runtime/echoes.py): after a status write lost
to a newer version, and after the controller's own status write, until its echo. The end-to-end waits are in
tests/e2e/test_status_conflicts.py; these are the protocol's rules."""

from __future__ import annotations

from controller.runtime.echoes import Echoes


def test_a_parked_key_is_woken_when_a_newer_version_arrives():
    woken: list[str] = []
    echoes = Echoes(woken.append)
    assert not echoes.arrived("ns/a", "5")  # not parked: the caller decides
    echoes.park("ns/a", "5")
    assert echoes.parked == {"ns/a": "5"}
    assert echoes.arrived("ns/a", "5") and woken == []  # the version it lost with: still waiting
    assert echoes.arrived("ns/a", "6") and woken == ["ns/a"]  # a newer one: woken, and no longer parked
    assert echoes.parked == {}
    assert not echoes.arrived("ns/a", "7")


def test_a_deleted_object_is_awaited_no_more():
    woken: list[str] = []
    echoes = Echoes(woken.append)
    echoes.park("ns/b", "1")
    echoes.wrote("ns/b", "1", "2")
    echoes.gone("ns/b")
    assert not echoes.arrived("ns/b", "2") and woken == [] and echoes.parked == {}
    assert not echoes.behind_own_write("ns/b", "1")


def test_a_reconcile_is_behind_its_own_write_until_the_cache_moves_on():
    echoes = Echoes()
    assert not echoes.behind_own_write("ns/a", "4")  # nothing written
    echoes.wrote("ns/a", "4", "5")
    assert echoes.behind_own_write("ns/a", "4")  # the cache still holds the version the write replaced
    assert echoes.behind_own_write("ns/a", "4")  # and still, until it moves on
    assert not echoes.behind_own_write("ns/a", "5")  # the echo: the write is forgotten
    assert not echoes.behind_own_write("ns/a", "4")  # (an older version seen again is not waited for twice)


def test_a_write_that_makes_no_new_version_awaits_no_echo():
    echoes = Echoes()
    echoes.wrote("ns/a", "4", "4")  # a no-op write: the server stored nothing
    echoes.wrote("ns/b", "4", None)
    assert not echoes.behind_own_write("ns/a", "4") and not echoes.behind_own_write("ns/b", "4")
