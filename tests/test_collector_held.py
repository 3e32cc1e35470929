"""`collector_held`: no collection while a block of short-lived objects runs, counted across
threads, and the collector's state as it was afterwards."""

from __future__ import annotations

import gc
import threading

from sagents_nb._base.collector import collector_held


def test_the_collector_is_held_in_the_block_and_on_again_after() -> None:
    assert gc.isenabled()
    with collector_held():
        assert not gc.isenabled()
        with collector_held():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_held():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_is_on_again_only_when_the_last_thread_lets_go() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collector_held():
            inside.set()
            assert leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    with collector_held():
        pass
    assert not gc.isenabled()  # the other thread still holds it
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_restore_pause_stays_paused_when_a_commit_elsewhere_ends() -> None:
    """`collector_paused` (a session's rows rebuilt) and a commit's hold on another thread
    share one count: the commit ending first turned the collector on under the rebuild."""
    from sagents_nb._runtime.restore import collector_paused

    holding, release, released = threading.Event(), threading.Event(), threading.Event()

    def commit() -> None:
        with collector_held():
            holding.set()
            assert release.wait(10)
        released.set()

    thread = threading.Thread(target=commit)
    thread.start()
    assert holding.wait(10)
    with collector_paused():
        release.set()
        assert released.wait(10)
        assert not gc.isenabled()
    thread.join(10)
    assert gc.isenabled()
