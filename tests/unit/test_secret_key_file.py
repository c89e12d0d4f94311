"""The generated SECRET_KEY file: private from its first byte, and one key however many processes start."""

from __future__ import annotations

import stat
from pathlib import Path

from console import config


def test_a_new_key_file_is_never_readable_by_others(tmp_path, monkeypatch):
    """It was written with the umask's mode (0644 usually) and chmod-ed afterwards: readable meanwhile."""
    monkeypatch.setattr(config, "INSTANCE_DIR", tmp_path)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setattr(Path, "chmod", lambda self, mode: None)  # only the mode it was created with counts
    value = config.secret_key()
    path = tmp_path / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == value and len(value) > 40
    assert config.secret_key() == value
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no temporary file left behind


def test_a_key_written_first_by_another_process_is_the_one_used(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "INSTANCE_DIR", tmp_path)
    path = tmp_path / "secret_key"
    path.write_text("written-by-the-other-process\n")
    assert config._write_new_secret_key(path) == "written-by-the-other-process"
    assert path.read_text() == "written-by-the-other-process\n"
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]


def test_a_fresh_instance_folder_is_its_owners_only(tmp_path, monkeypatch):
    """It holds the SQLite database (every workspace's data), which SQLite creates with the umask's mode."""
    instance = tmp_path / "checkout" / "instance"
    monkeypatch.setattr(config, "INSTANCE_DIR", instance)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    config.secret_key()
    assert stat.S_IMODE(instance.stat().st_mode) == 0o700
    other = tmp_path / "elsewhere"
    config.make_private_dir(other)
    assert stat.S_IMODE(other.stat().st_mode) == 0o700
