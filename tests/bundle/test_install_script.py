"""install.sh with a careless prefix and beside files it did not write: it never replaces or deletes them."""

from __future__ import annotations

from tests.bundle.test_packaging import APP_ID, fake_release, installed_paths, read_desktop_entry, run_install

__all__ = ["fake_release"]  # the fixture, used by name below


def test_a_trailing_slash_on_the_prefix_installs_and_reinstalls(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    prefix = tmp_path / "apps" / "te"
    run_install(fake_release, home, "--prefix", f"{prefix}/")
    run_install(fake_release, home, "--prefix", f"{prefix}//")  # the second run replaced the first before
    assert (prefix / APP_ID).is_file() and (prefix / ".installed-files").is_file()
    assert read_desktop_entry(installed_paths(home)["desktop"])["TryExec"] == str(prefix / APP_ID)
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["te"]  # no staging folder left, none inside
    run_install(prefix, home, "--uninstall")
    assert not prefix.exists()


def test_a_command_and_menu_entry_of_the_users_are_left_alone(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    paths = installed_paths(home)
    paths["launcher"].parent.mkdir(parents=True)
    paths["launcher"].write_text("#!/bin/sh\necho my own script\n")
    paths["desktop"].parent.mkdir(parents=True)
    paths["desktop"].write_text("[Desktop Entry]\nName=Mine\nExec=/usr/bin/true\nTryExec=/usr/bin/true\n")
    before = (paths["launcher"].read_text(), paths["desktop"].read_text())

    result = run_install(fake_release, home)
    assert "left alone (not written by this script):" in result.stdout
    assert str(paths["launcher"]) in result.stdout and str(paths["desktop"]) in result.stdout
    assert (paths["launcher"].read_text(), paths["desktop"].read_text()) == before
    assert not paths["launcher"].is_symlink()

    run_install(paths["prefix"], home, "--uninstall")
    assert (paths["launcher"].read_text(), paths["desktop"].read_text()) == before
    assert not paths["prefix"].exists()


def test_a_link_to_another_program_is_left_alone_and_ours_is_replaced(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    paths = installed_paths(home)
    paths["launcher"].parent.mkdir(parents=True)
    paths["launcher"].symlink_to("/usr/bin/true")
    run_install(fake_release, home)
    assert str(paths["launcher"].readlink()) == "/usr/bin/true"
    paths["launcher"].unlink()
    run_install(fake_release, home)  # now the place is free: the link is made
    run_install(fake_release, home)  # and a reinstall replaces our own link
    assert paths["launcher"].resolve() == (paths["prefix"] / APP_ID).resolve()
    run_install(paths["prefix"], home, "--uninstall")
    assert not paths["launcher"].is_symlink()


def test_a_menu_entry_edited_to_another_program_survives_uninstall(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    paths = installed_paths(home)
    run_install(fake_release, home)
    paths["desktop"].write_text("[Desktop Entry]\nName=Replaced by the user\nTryExec=/usr/bin/true\n")
    run_install(paths["prefix"], home, "--uninstall")
    assert paths["desktop"].read_text().startswith("[Desktop Entry]\nName=Replaced by the user")
