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


async def test_another_process_closing_the_database_leaves_this_ones_files(
    tmp_path: Path,
) -> None:
    """`sayso keys create` beside a running `sayso run` on SQLite: when the other process
    closes its last connection, the -wal and -shm files this process still uses stay (they
    were deleted when opening a new connection here dropped this process's SQLite locks, and
    the running bot then failed with "disk I/O error")."""
    import asyncio
    import sys

    db = tmp_path / "sayso.db"
    url = f"sqlite+aiosqlite:///{db}"
    other = (
        "import asyncio\n"
        "from store import Store\n"
        "async def main():\n"
        f"    async with Store({url!r}) as s:\n"
        "        await s.runs.list()\n"
        "asyncio.run(main())\n"
    )
    async with Store(url) as store:
        await store.upgrade()
        await paused_run(store, "r1")
        async with store.db.engine.connect(), store.db.engine.connect():
            pass  # new connections of this process (each runs the file-mode hook)
        closed = await asyncio.create_subprocess_exec(sys.executable, "-c", other)
        assert await closed.wait() == 0
        side_files = [Path(f"{db}-wal"), Path(f"{db}-shm")]
        assert all(f.exists() for f in side_files)
        await paused_run(store, "r2")
        assert {r.id for r in await store.runs.list()} == {"r1", "r2"}
