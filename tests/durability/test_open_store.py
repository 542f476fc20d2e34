"""``open_store``: the one place a broker's store is built.

None gives a :class:`~ternmq.store.MemoryStore`; a directory path (a string or a path
object) or ``sqlite:PATH`` gives a :class:`~ternmq.store.sqlite.SqliteStore` there, with the
durability settings passed on; a ``scheme://`` ternmq has no store for raises JMSException
naming it.
"""

from __future__ import annotations

import pathlib

import pytest

from ternmq.errors import JMSException
from ternmq.store import AddMessage, MemoryStore, open_store
from ternmq.store.sqlite import SqliteStore


def test_none_opens_a_memory_store() -> None:
    store = open_store(None)
    try:
        assert isinstance(store, MemoryStore)
        assert store.synchronous
        assert store.set_owner_commits(lambda: None) is False
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["str", "path"])
def test_a_directory_opens_the_sqlite_store_there(tmp_path: pathlib.Path, kind: str) -> None:
    """A path (``str`` or ``os.PathLike``) is the SQLite store's data directory, created on
    first use; the settings reach the store."""
    data_dir = tmp_path / "data"
    target = str(data_dir) if kind == "str" else data_dir
    store = open_store(target, fsync="batch", fsync_interval=0.5, batch_scheduling=False)
    try:
        assert isinstance(store, SqliteStore)
        assert store.path == data_dir
        assert (store.fsync, store.batch_interval) == ("batch", 0.5)
        assert store.batch_scheduling is False
        assert not store.synchronous
    finally:
        store.close()
    assert (data_dir / "ternmq.db").is_file()


def test_the_sqlite_prefix_names_the_same_store(tmp_path: pathlib.Path) -> None:
    """``sqlite:PATH`` is the SQLite store in PATH; what one wrote the other reads back."""
    data_dir = tmp_path / "data"
    first = open_store(f"sqlite:{data_dir}")
    try:
        assert isinstance(first, SqliteStore)
        assert first.path == data_dir
        assert first.batch_scheduling is True  # the default of open_store
        first.write([AddMessage("queue://Q", 1, b"kept", 4, 0, 0)])
    finally:
        first.close()
    again = open_store(data_dir)
    try:
        assert [m.data for m in again.load().messages["queue://Q"]] == [b"kept"]
    finally:
        again.close()


@pytest.mark.parametrize("url", ["mongodb://db.example/ternmq", "redis://localhost:6379"])
def test_an_unknown_kind_of_store_raises_jms_exception(url: str) -> None:
    """A URL of a store ternmq does not have is refused, naming the scheme and the URL."""
    scheme = url.partition(":")[0]
    with pytest.raises(JMSException, match=f"no store of kind '{scheme}'") as info:
        open_store(url)
    assert url in str(info.value)


def test_a_directory_in_use_raises_jms_exception(tmp_path: pathlib.Path) -> None:
    """A second store on a directory another store holds is refused."""
    first = open_store(tmp_path / "data")
    try:
        with pytest.raises(JMSException, match="in use"):
            open_store(f"sqlite:{tmp_path / 'data'}")
    finally:
        first.close()
