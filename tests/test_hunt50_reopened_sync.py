"""A run's log opened anew (`RunLog._open`: the file was deleted under the
run, or a forked child opens its own) resets its `Syncer`; a sync of the
old descriptor still in flight on another thread then ended by setting
`synced` to its own target, an offset of the old file: a commit to the new
file up to that offset returned without any sync, its record claimed
durable though no fdatasync covered it. A sync that began before the
reset now claims nothing for the file after it."""

from __future__ import annotations

import threading

from durable._storage.durability import Syncer


def test_a_sync_of_the_old_file_is_not_claimed_for_the_new_one() -> None:
    syncer = Syncer("fsync", 1.0)
    syncer.written = 100  # the old file's records
    started, go = threading.Event(), threading.Event()
    synced_new: list[int] = []

    def old_sync() -> None:  # fdatasync of the old descriptor, slow
        started.set()
        assert go.wait(10)

    old = threading.Thread(target=syncer.cover, args=(old_sync, 100))
    old.start()
    assert started.wait(10)
    syncer.reset()  # the log opened anew: nothing of the new file is synced
    syncer.written = 40  # a record written to the new file
    go.set()
    old.join(10)
    assert syncer.synced == 0  # was 100: the old file's offset, claimed for the new one
    syncer.cover(lambda: synced_new.append(40), 40)
    assert synced_new == [40] and syncer.synced == 40  # the new record's own sync


def test_a_commit_to_the_new_file_does_not_wait_for_the_old_sync() -> None:
    """`_busy` of the old file's sync, kept by `reset`, made the new file's
    first commit wait for it (and then skip its own sync, as above)."""
    syncer = Syncer("fsync", 1.0)
    syncer.written = 100
    started, go = threading.Event(), threading.Event()

    def old_sync() -> None:
        started.set()
        assert go.wait(10)

    old = threading.Thread(target=syncer.cover, args=(old_sync, 100))
    old.start()
    assert started.wait(10)
    syncer.reset()
    syncer.written = 40
    calls: list[int] = []
    new = threading.Thread(target=syncer.cover, args=(lambda: calls.append(40), 40))
    new.start()
    new.join(10)  # it waited on the old sync forever (a failure here, not a hang)
    assert calls == [40] and syncer.synced == 40
    go.set()
    old.join(10)
    assert syncer.synced == 40


def test_a_commit_to_the_old_file_claims_no_offset_of_the_new_one() -> None:
    """A committer that wrote to the old file, then reached `cover` after
    the reset, claimed its own end (an offset of the old file) synced."""
    syncer = Syncer("fsync", 1.0)
    syncer.reset()
    syncer.written = 40  # the new file's
    syncer.cover(lambda: None, 100)  # the old file's end, late
    assert syncer.synced == 40
