"""The on-disk caches do not grow without bound: a new file of a family prunes that family's
oldest files (every change of opdoctor's sources keys new ones; the old are never read)."""

from __future__ import annotations

import os
from pathlib import Path

from opdoctor import cachefile


def _family(folder: Path, prefix: str, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        p = folder / f"{prefix}-{i:08x}.marshal"
        assert cachefile.write(str(p), {"i": i})
        os.utime(p, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))  # oldest first
        paths.append(p)
    return paths


def test_a_new_file_keeps_the_newest_of_its_family_only(tmp_path: Path) -> None:
    keep = cachefile.KEEP_PER_FAMILY
    olds = _family(tmp_path, "checks", keep + 10)
    others = _family(tmp_path, "cli", 5)
    (tmp_path / "checks-deadbeef.marshal.123.tmp").write_bytes(b"x")  # a writer's temporary
    new = tmp_path / "checks-ffffffff.marshal"
    assert cachefile.write(str(new), [1, 2, 3])
    left = sorted(p.name for p in tmp_path.glob("checks-*.marshal"))
    # The new file and the keep - 1 newest before it; the 11 oldest went.
    assert len(left) == keep and new.name in left
    assert all(not p.exists() for p in olds[:11]) and all(p.exists() for p in olds[11:])
    assert all(p.exists() for p in others)  # another family is not touched
    assert (tmp_path / "checks-deadbeef.marshal.123.tmp").exists()
    assert cachefile.read(str(new)) == [1, 2, 3]


def test_rewriting_an_existing_file_prunes_nothing(tmp_path: Path) -> None:
    paths = _family(tmp_path, "regex", cachefile.KEEP_PER_FAMILY + 3)
    before = sorted(tmp_path.iterdir())
    assert cachefile.write(str(paths[-1]), "again")
    assert sorted(tmp_path.iterdir()) == before


def test_prune_of_a_missing_folder_or_gone_files_is_harmless(tmp_path: Path) -> None:
    assert cachefile.prune(str(tmp_path / "nowhere" / "cli-00000000.marshal")) == 0
    paths = _family(tmp_path, "cli", 4)
    paths[0].unlink()  # another process pruned it meanwhile
    assert cachefile.prune(str(tmp_path / "cli-ffffffff.marshal"), keep=1) == 3
    assert list(tmp_path.iterdir()) == []
