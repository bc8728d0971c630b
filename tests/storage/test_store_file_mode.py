"""The SQLite database and its -wal and -shm files are readable by their owner only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from store import Store
from tests.storage.store_helpers import paused_run


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_new_sqlite_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    db = tmp_path / "sayso.db"
    old = os.umask(0o022)
    try:
        async with Store(f"sqlite+aiosqlite:///{db}") as store:
            await store.upgrade()
            await paused_run(store, "r1")
            files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
            assert all(f.exists() for f in files)
            assert [_mode(f) for f in files] == [0o600, 0o600, 0o600]
    finally:
        os.umask(old)


async def test_an_existing_world_readable_database_is_tightened(tmp_path: Path) -> None:
    db = tmp_path / "sayso.db"
    async with Store(f"sqlite+aiosqlite:///{db}") as store:
        await store.upgrade()
    os.chmod(db, 0o644)
    async with Store(f"sqlite+aiosqlite:///{db}") as store:
        await store.ping()
        assert _mode(db) == 0o600
