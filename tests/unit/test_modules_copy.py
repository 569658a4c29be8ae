"""copy module: atomic content writes, idempotence, backup, validate, diff, check mode."""
import hashlib
import os
import shutil
import stat

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

copy = modules.get("copy")


def run(check=False, diff=False, no_log=False, files=None, **args):
    return copy.run(args, ModuleContext(check_mode=check, diff_mode=diff, no_log=no_log,
                                        files=files))


def shipped(src, content, mode=0o644, path=None):
    """ctx.files as the controller ships one controller file."""
    return {src: {"kind": "file", "path": path or "/ctl/" + src, "mode": mode,
                  "content": content}}


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def sha1(data):
    return hashlib.sha1(data).hexdigest()


def test_content_create_and_idempotent(tmp_path):
    dest = tmp_path / "f.txt"
    r = run(content="hello\n", dest=str(dest))
    assert dest.read_text() == "hello\n"
    assert r["changed"] is True and r["dest"] == str(dest)
    assert r["checksum"] == sha1(b"hello\n") and r["size"] == 6
    assert r["state"] == "file" and r["mode"] == "0644" and r["uid"] == 0
    assert r["owner"] == "root" and r["group"] == "root" and r["gid"] == 0
    r = run(content="hello\n", dest=str(dest))
    assert r["changed"] is False and r["checksum"] == sha1(b"hello\n")
    assert r["dest"] == str(dest) and r["state"] == "file"


def test_no_temp_files_left(tmp_path):
    run(content="a", dest=str(tmp_path / "f"))
    run(content="b", dest=str(tmp_path / "f"))
    assert sorted(os.listdir(str(tmp_path))) == ["f"]


def test_mode_owner_group(tmp_path):
    dest = tmp_path / "f"
    r = run(content="x", dest=str(dest), mode="0600", owner="0", group="root")
    assert mode_of(dest) == 0o600 and r["mode"] == "0600"
    # same content, different mode: mode still enforced
    r = run(content="x", dest=str(dest), mode="u=rw,g=r")
    assert r["changed"] is True and mode_of(dest) == 0o640
    assert run(content="x", dest=str(dest), mode="0640")["changed"] is False


def test_existing_mode_and_owner_preserved_on_rewrite(tmp_path):
    dest = tmp_path / "f"
    dest.write_text("old")
    os.chmod(str(dest), 0o640)
    os.chown(str(dest), 1234, 1234)
    run(content="new", dest=str(dest))
    st = os.stat(str(dest))
    assert dest.read_text() == "new" and stat.S_IMODE(st.st_mode) == 0o640
    assert st.st_uid == 1234 and st.st_gid == 1234


def test_unknown_owner_fails(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), owner="no-such-ioc-user")
    assert r["failed"] and r["msg"] == "chown failed: failed to look up user no-such-ioc-user"


def test_numeric_owner(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), owner="54321")
    assert r["uid"] == 54321 and r["owner"] == "54321"


def test_force_no(tmp_path):
    dest = tmp_path / "f"
    dest.write_text("keep")
    r = run(content="new", dest=str(dest), force=False)
    assert r["changed"] is False and dest.read_text() == "keep"
    r = run(content="new", dest=str(tmp_path / "g"), force="no")
    assert r["changed"] is True and (tmp_path / "g").read_text() == "new"


def test_backup(tmp_path):
    dest = tmp_path / "f"
    dest.write_text("v1")
    r = run(content="v2", dest=str(dest), backup=True)
    backup = r["backup_file"]
    assert backup.startswith("%s.%d." % (dest, os.getpid())) and backup.endswith("~")
    assert open(backup).read() == "v1" and dest.read_text() == "v2"
    r = run(content="v2", dest=str(dest), backup=True)
    assert "backup_file" not in r and r["changed"] is False


def test_validate_failure_leaves_dest_and_no_temp(tmp_path):
    dest = tmp_path / "f"
    dest.write_text("good")
    r = run(content="bad", dest=str(dest), validate="sh -c 'grep -q good %s || { echo nope; exit 3; }'")
    assert r["failed"] is True and r["msg"] == "failed to validate"
    assert r["exit_status"] == 3 and r["stdout"].strip() == "nope" and "stderr" in r
    assert dest.read_text() == "good"
    assert os.listdir(str(tmp_path)) == ["f"]


def test_validate_success_sees_temp_file_with_mode(tmp_path):
    dest = tmp_path / "f"
    r = run(content="good", dest=str(dest), mode="0600",
            validate="""sh -c 'test "$(stat -c %%a "$0")" = 600 && grep -q good "$0"' %s""")
    assert r["changed"] is True and dest.read_text() == "good" and mode_of(dest) == 0o600
    r = run(content="good", dest=str(dest), validate="grep -q good %s")
    assert r["changed"] is False


def test_validate_with_two_placeholders_fails_cleanly(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), validate="cmp %s %s")
    assert r["failed"] and os.listdir(str(tmp_path)) == []


def test_validate_needs_percent_s(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), validate="true")
    assert r["failed"] and r["msg"] == "validate must contain %s: true"
    assert os.listdir(str(tmp_path)) == []


def test_validate_missing_binary(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), validate="no-such-ioc-validator %s")
    assert r["failed"] and "No such file or directory" in r["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_content_with_directory_dest_fails(tmp_path):
    r = run(content="x", dest=str(tmp_path) + "/")
    assert r["failed"] and r["msg"] == "can not use content with a dir as dest"
    r = run(content="x", dest=str(tmp_path))
    assert r["failed"] and r["msg"] == "can not use content with a dir as dest"


def test_missing_destination_directory(tmp_path):
    r = run(content="x", dest=str(tmp_path / "no" / "f"))
    assert r["failed"] and r["msg"] == "Destination directory %s does not exist" % (tmp_path / "no")


def test_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / "f"
    r = run(check=True, content="x", dest=str(dest))
    assert r["changed"] is True and not dest.exists()
    dest.write_text("x")
    os.chmod(str(dest), 0o600)
    r = run(check=True, content="x", dest=str(dest), mode="0644")
    assert r["changed"] is True and mode_of(dest) == 0o600
    r = run(check=True, content="y", dest=str(dest))
    assert r["changed"] is True and dest.read_text() == "x"


def test_diff_text(tmp_path):
    dest = tmp_path / "f"
    r = run(diff=True, content="a\n", dest=str(dest))
    assert r["diff"] == [{"before": "", "after_header": str(dest), "after": "a\n"}]
    r = run(diff=True, content="b\n", dest=str(dest))
    assert r["diff"] == [{"before_header": str(dest), "before": "a\n",
                         "after_header": str(dest), "after": "b\n"}]
    r = run(content="c\n", dest=str(dest))
    assert r["diff"] == []  # the copy action's empty list outside diff mode


def test_diff_binary_and_no_log(tmp_path):
    dest = tmp_path / "f"
    dest.write_bytes(b"\x00\x01")
    r = run(diff=True, content="text", dest=str(dest))
    assert r["diff"][0]["dst_binary"] == 1 and r["diff"][0]["after"] == "text"
    r = run(diff=True, no_log=True, content="secret", dest=str(dest))
    assert "secret" not in str(r["diff"])


def test_controller_file_bytes_and_src_name(tmp_path):
    files = shipped("files/blob.bin", b"\x00bin")
    r = run(files=files, src="files/blob.bin", dest=str(tmp_path) + "/")
    assert (tmp_path / "blob.bin").read_bytes() == b"\x00bin"
    assert r["dest"] == str(tmp_path / "blob.bin") and r["changed"] is True
    r = run(files=files, src="files/blob.bin", dest=str(tmp_path))
    assert r["changed"] is False


def test_src_not_shipped_fails_like_a_missing_controller_file(tmp_path):
    r = run(src="files/x", dest=str(tmp_path / "x"))
    assert r["failed"] and r["msg"] == \
        "Could not find or access 'files/x' on the Ansible Controller."
    r = run(files={"files/x": {"kind": "missing", "msg": "Could not find or access 'files/x'"}},
            src="files/x", dest=str(tmp_path / "x"))
    assert r["failed"] and r["msg"] == "Could not find or access 'files/x'"
    assert not (tmp_path / "x").exists()


def test_dest_with_trailing_slash_creates_dirs(tmp_path):
    dest = str(tmp_path / "new" / "dir") + "/"
    r = run(files=shipped("a.txt", b"x"), src="a.txt", dest=dest, directory_mode="0700")
    assert (tmp_path / "new" / "dir" / "a.txt").read_bytes() == b"x" and r["changed"]
    assert mode_of(tmp_path / "new") == 0o700


def test_remote_src(tmp_path):
    src = tmp_path / "src"
    src.write_text("remote")
    dest = tmp_path / "dest"
    r = run(src=str(src), remote_src=True, dest=str(dest))
    assert dest.read_text() == "remote" and r["changed"] and r["src"] == str(src)
    assert run(src=str(src), remote_src=True, dest=str(dest))["changed"] is False
    os.chmod(str(src), 0o751)
    run(src=str(src), remote_src=True, dest=str(tmp_path / "d2"), mode="preserve")
    assert mode_of(tmp_path / "d2") == 0o751
    r = run(src=str(tmp_path / "nope"), remote_src=True, dest=str(dest))
    assert r["failed"] and r["msg"] == "Source %s not found" % (tmp_path / "nope")


def test_content_and_src_exclusive(tmp_path):
    r = run(content="x", src="y", dest=str(tmp_path / "f"))
    assert r["failed"] and r["msg"] == "src and content are mutually exclusive"
    r = run(dest=str(tmp_path / "f"))
    assert r["failed"] and r["msg"] == "src (or content) is required"


def test_checksum_option(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), checksum="0" * 40)
    assert r["failed"] and r["expected_checksum"] == "0" * 40
    assert not (tmp_path / "f").exists()


def test_replaces_symlink_dest_without_touching_target(tmp_path):
    target = tmp_path / "target"
    target.write_text("t")
    link = tmp_path / "link"
    link.symlink_to(target)
    r = run(content="t", dest=str(link))
    assert r["changed"] is True and not link.is_symlink() and target.read_text() == "t"
    link.unlink()
    link.symlink_to(target)
    run(content="new", dest=str(link), follow=True)
    assert link.is_symlink() and target.read_text() == "new"


def test_dict_content_is_json(tmp_path):
    run(content={"a": 1}, dest=str(tmp_path / "f"))
    assert (tmp_path / "f").read_text() == '{"a": 1}'


def test_mode_preserve(tmp_path):
    # like Ansible, content is written from a 0600 temp file, so preserve means 0600
    run(content="x", dest=str(tmp_path / "f"), mode="preserve")
    assert mode_of(tmp_path / "f") == 0o600
    run(files=shipped("a", b"x", mode=0o755), src="a", dest=str(tmp_path / "g"), mode="preserve")
    assert mode_of(tmp_path / "g") == 0o755
    r = run(files=shipped("a", b"x", mode=None), src="a", dest=str(tmp_path / "h"),
            mode="preserve")
    assert r["failed"] and not (tmp_path / "h").exists()


# -- controller src: files and directory trees ------------------------------------------


def tree(src="files/conf", path="/ctl/files/conf"):
    return {src: {"kind": "dir", "path": path, "mode": 0o755, "entries": [
        {"rel": "sub", "mode": 0o755, "dir": True},
        {"rel": "empty", "mode": 0o700, "dir": True},
        {"rel": "a.txt", "mode": 0o644, "content": b"a\n"},
        {"rel": "sub/b.sh", "mode": 0o755, "content": b"#!/bin/sh\n"},
    ]}}


def listing(root):
    out = []
    for base, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(base, name), str(root)))
    return sorted(out)


def test_controller_file_diff_header_and_md5(tmp_path):
    dest = tmp_path / "f"
    dest.write_text("old\n")
    r = run(diff=True, files=shipped("motd", b"new\n", path="/play/files/motd"), src="motd",
            dest=str(dest))
    assert r["diff"] == [{"before_header": str(dest), "before": "old\n",
                         "after_header": "/play/files/motd", "after": "new\n"}]
    assert r["md5sum"] == hashlib.md5(b"new\n").hexdigest() and r["checksum"] == sha1(b"new\n")


def test_directory_src_without_slash_copies_the_directory(tmp_path):
    dest = tmp_path / "dest"
    r = run(files=tree(), src="files/conf", dest=str(dest), directory_mode="0750")
    assert r == {"changed": True, "dest": str(dest) + "/", "src": "files/conf"}
    assert listing(dest) == ["conf", "conf/a.txt", "conf/empty", "conf/sub", "conf/sub/b.sh"]
    assert (dest / "conf" / "sub" / "b.sh").read_text() == "#!/bin/sh\n"
    assert mode_of(dest) == 0o750 and mode_of(dest / "conf" / "sub") == 0o750
    # without mode: new files get the default mode, not the source's
    assert mode_of(dest / "conf" / "sub" / "b.sh") == 0o644
    r = run(files=tree(), src="files/conf", dest=str(dest), directory_mode="0750")
    assert r["changed"] is False


def test_directory_src_with_slash_copies_the_contents(tmp_path):
    dest = tmp_path / "dest"
    files = tree(src="files/conf/")
    r = run(files=files, src="files/conf/", dest=str(dest), mode="preserve")
    assert r["changed"] is True
    assert listing(dest) == ["a.txt", "empty", "sub", "sub/b.sh"]
    assert mode_of(dest / "sub" / "b.sh") == 0o755
    (dest / "a.txt").write_text("changed")
    r = run(files=files, src="files/conf/", dest=str(dest), mode="preserve", diff=True)
    assert r["changed"] is True and (dest / "a.txt").read_text() == "a\n"
    assert r["diff"] == [{"before_header": str(dest / "a.txt"), "before": "changed",
                          "after_header": "files/conf/a.txt", "after": "a\n"}]
    assert run(files=files, src="files/conf/", dest=str(dest), mode="preserve")["changed"] is False


def test_directory_src_check_mode_leaves_no_trace(tmp_path):
    dest = tmp_path / "dest"
    r = run(check=True, files=tree(), src="files/conf", dest=str(dest))
    assert r["changed"] is True and not dest.exists()
    assert os.listdir(str(tmp_path)) == []


def test_directory_src_refuses_escaping_entries(tmp_path):
    files = {"d/": {"kind": "dir", "path": "/ctl/d", "mode": 0o755,
                    "entries": [{"rel": "ok", "mode": 0o644, "content": b"x"},
                                {"rel": "../evil", "mode": 0o644, "content": b"x"}]}}
    r = run(files=files, src="d/", dest=str(tmp_path / "dest"))
    assert r["failed"] and "not a relative path inside src" in r["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_directory_src_with_one_file_returns_the_file_result(tmp_path):
    files = {"d/": {"kind": "dir", "path": "/ctl/d", "mode": 0o755,
                    "entries": [{"rel": "only", "mode": 0o644, "content": b"x"}]}}
    r = run(files=files, src="d/", dest=str(tmp_path))
    assert r["changed"] is True and r["dest"] == str(tmp_path / "only")
    assert r["checksum"] == sha1(b"x") and r["state"] == "file"


def test_remote_src_directory(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "x").write_text("x")
    os.chmod(str(src / "sub" / "x"), 0o600)
    (src / "link").symlink_to("sub/x")
    dest = tmp_path / "dest"
    r = run(src=str(src), remote_src=True, dest=str(dest))
    assert r["changed"] is True
    assert listing(dest) == ["src", "src/link", "src/sub", "src/sub/x"]
    assert os.readlink(str(dest / "src" / "link")) == "sub/x"
    assert mode_of(dest / "src" / "sub" / "x") == 0o600
    assert run(src=str(src), remote_src=True, dest=str(dest))["changed"] is False
    r = run(src=str(src) + "/", remote_src=True, dest=str(tmp_path / "flat"))
    assert listing(tmp_path / "flat") == ["link", "sub", "sub/x"]


def test_unsupported_option_refused(tmp_path):
    r = run(content="x", dest=str(tmp_path / "f"), attributes="+i")
    assert r["failed"] and r["msg"].startswith("Unsupported parameters for (copy) module: attributes.")


def test_a_change_reports_the_uploaded_file_as_ansibles_module_does(tmp_path, monkeypatch):
    """``src`` is ``<remote_tmp>/ansible-tmp-<time>-<pid>-<random>/.source<dest's
    suffix>``, gone after the task; in ``/var/tmp`` (Ansible's system tmpdir for
    an unprivileged become) when ``~/.ansible/tmp`` cannot be made; an
    unchanged copy and check mode have none."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    r = run(content="a", dest=str(tmp_path / "f.txt"))
    assert r["src"].startswith(str(home / ".ansible" / "tmp" / "ansible-tmp-"))
    assert r["src"].endswith("/.source.txt") and not os.path.exists(r["src"])
    assert os.listdir(str(home / ".ansible" / "tmp")) == []
    assert "src" not in run(content="a", dest=str(tmp_path / "f.txt"))
    assert "src" not in run(check=True, content="b", dest=str(tmp_path / "f.txt"))
    shutil.rmtree(str(home / ".ansible"))
    (home / ".ansible").write_text("")  # ~/.ansible/tmp cannot be made
    r = run(content="c", dest=str(tmp_path / "g"))
    assert r["src"].startswith("/var/tmp/ansible-tmp-") and r["src"].endswith("/.source")
    assert not os.path.exists(os.path.dirname(r["src"]))
