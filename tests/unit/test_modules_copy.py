"""copy module: atomic content writes, idempotence, backup, validate, diff, check mode."""
import hashlib
import os
import stat

from ioc.agentless_runner import modules
from ioc.agentless_runner.context import ModuleContext

copy = modules.get("copy")


def run(check=False, diff=False, no_log=False, **args):
    return copy.run(args, ModuleContext(check_mode=check, diff_mode=diff, no_log=no_log))


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
    assert r["diff"] == {"before": "", "after_header": str(dest), "after": "a\n"}
    r = run(diff=True, content="b\n", dest=str(dest))
    assert r["diff"] == {"before_header": str(dest), "before": "a\n",
                         "after_header": str(dest), "after": "b\n"}
    r = run(content="c\n", dest=str(dest))
    assert "diff" not in r


def test_diff_binary_and_no_log(tmp_path):
    dest = tmp_path / "f"
    dest.write_bytes(b"\x00\x01")
    r = run(diff=True, content="text", dest=str(dest))
    assert r["diff"]["dst_binary"] == 1 and r["diff"]["after"] == "text"
    r = run(diff=True, no_log=True, content="secret", dest=str(dest))
    assert "secret" not in str(r["diff"])


def test_ioc_content_bytes_and_src_name(tmp_path):
    r = run(_ioc_content=b"\x00bin", src="files/blob.bin", dest=str(tmp_path) + "/")
    assert (tmp_path / "blob.bin").read_bytes() == b"\x00bin"
    assert r["dest"] == str(tmp_path / "blob.bin") and r["changed"] is True
    r = run(_ioc_content=b"\x00bin", src="files/blob.bin", dest=str(tmp_path))
    assert r["changed"] is False


def test_src_without_content_is_an_executor_bug(tmp_path):
    r = run(src="files/x", dest=str(tmp_path / "x"))
    assert r["failed"] and "controller" in r["msg"]


def test_dest_with_trailing_slash_creates_dirs(tmp_path):
    dest = str(tmp_path / "new" / "dir") + "/"
    r = run(_ioc_content=b"x", src="a.txt", dest=dest, directory_mode="0700")
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
    run(_ioc_content=b"x", src="a", _ioc_src_mode="0755", dest=str(tmp_path / "g"), mode="preserve")
    assert mode_of(tmp_path / "g") == 0o755
    r = run(_ioc_content=b"x", src="a", dest=str(tmp_path / "h"), mode="preserve")
    assert r["failed"] and not (tmp_path / "h").exists()
