"""The harness's normalisation and skeleton, on console output captured from real runs.

``snippets/`` holds the beginnings of real ansible-test logs of ansible-core's
``debug`` target (two linear runs from different trees, one mitogen_batch
run), ansible-test leaving a target out, and lines Ansible prints for a
third-party strategy. Nothing here runs Ansible.
"""
from __future__ import annotations

from pathlib import Path

from tests.targets import skeleton

SNIPPETS = Path(__file__).resolve().parent / "snippets"
#: The trees the snippets' runs were made from (the harness's private copies, and a
#: copy of the sdist used by hand).
BASELINE_TREE = Path("/tmp/ioc-targets-trees-3ux2c215/baseline")
CANDIDATE_TREE = Path("/tmp/ioc-targets-trees-3ux2c215/candidat")
OTHER_TREE = Path("/tmp/sd/ansible_core-2.21.5")


def skeleton_of(name: str, tree: Path):
    return skeleton.view((SNIPPETS / name).read_text(), skeleton.Normaliser(tree))


def texts(lines):
    return [line.text for line in lines]


def test_skeleton_keeps_banners_status_lines_labels_keys_messages_and_origins():
    work = "<tree>/test/results/.tmp/integration/debug-<rand>-ÅÑŚÌβŁÈ/test/integration/targets/debug"
    untrusted = ("Task failed: Error while resolving `var` expression: "
                 "Encountered untrusted template or expression.")
    assert texts(skeleton_of("debug.linear.log", BASELINE_TREE)) == [
        "PLAY [localhost]",
        "TASK [test item being present in the output]",
        "ok: [localhost] => (item=1) => {item}",
        "ok: [localhost] => (item=2) => {item}",
        "ok: [localhost] => (item=3) => {item}",
        "TASK [ensure that explicitly-tagged unsafe debug var fails]",
        "[ERROR]: " + untrusted,
        "Origin: %s/main.yml:16:7" % work,
        "Origin: %s/main.yml:18:14" % work,
        "Origin: %s/main.yml:18:14" % work,
        "fatal: [localhost]: FAILED! => {msg} msg=" + untrusted,
        "...ignoring",
        "TASK [assert]",
    ]


def test_each_line_remembers_the_playbook_command_and_banner_it_belongs_to():
    lines = skeleton_of("debug.linear.log", BASELINE_TREE)
    fatal = next(l for l in lines if l.text.startswith("fatal:"))
    assert fatal.command == "ansible-playbook main.yml -i ../../inventory -v"
    assert fatal.banner == "TASK [ensure that explicitly-tagged unsafe debug var fails]"
    assert fatal.host == "localhost"


def test_two_linear_runs_from_different_trees_have_the_same_skeleton():
    a = (SNIPPETS / "debug.linear.log").read_text()
    b = (SNIPPETS / "debug.linear-other-tree.log").read_text()
    assert a.splitlines()[14] != b.splitlines()[15]  # the raw lines differ: tree and random dir
    view_a = skeleton_of("debug.linear.log", BASELINE_TREE)
    view_b = skeleton_of("debug.linear-other-tree.log", OTHER_TREE)
    assert texts(view_a) == texts(view_b)
    assert skeleton.first_difference(view_a, 0, view_b, 0) is None


def test_a_grep_that_echoes_the_first_line_of_a_result_does_not_swallow_the_lines_after_it():
    lines = texts(skeleton_of("debug.mitogen_batch.log", CANDIDATE_TREE))
    # runme.sh greps the saved output for each item: each echo stands alone.
    assert lines[-2:] == ["ok: [localhost] => (item=1) => {", "ok: [localhost] => (item=2) => {"]
    assert "localhost : ok=2 changed=0 unreachable=0 failed=1 skipped=0 rescued=0 ignored=0" \
        in lines


def test_first_difference_names_exit_codes_command_task_and_both_lines():
    a = skeleton_of("debug.linear.log", BASELINE_TREE)
    b = skeleton_of("debug.mitogen_batch.log", CANDIDATE_TREE)
    assert skeleton.first_difference(a, 0, b, 1) == (
        "exit code linear 0, mitogen_batch 1; line 7 (in `ansible-playbook main.yml -i "
        "../../inventory -v`, at TASK [ensure that explicitly-tagged unsafe debug var fails]): "
        "linear \"[ERROR]: Task failed: Error while resolving `var` expression: Encountered "
        "untrusted template or expression.\"; mitogen_batch \"ok: [localhost] => {debug_me}\"")


def test_a_shorter_skeleton_is_a_difference_too():
    a = skeleton_of("debug.linear.log", BASELINE_TREE)
    difference = skeleton.first_difference(a, 0, a[:5], 0)
    assert difference is not None
    assert difference.startswith("line 6 (in `ansible-playbook main.yml")
    assert difference.endswith("mitogen_batch <nothing more>")


def test_ansible_announcing_a_third_party_strategy_is_not_part_of_the_skeleton():
    printed = (SNIPPETS / "strategy_deprecation.log").read_text()
    lines = texts(skeleton.view(printed, skeleton.Normaliser(None)))
    assert lines == ["PLAY [localhost]", "TASK [debug]", "ok: [localhost] => {msg} msg=hi",
                     "PLAY RECAP",
                     "localhost : ok=1 changed=0 unreachable=0 failed=0 skipped=0 rescued=0 "
                     "ignored=0"]


def test_ansible_test_leaving_a_target_out_is_reported_with_its_reason():
    text = (SNIPPETS / "cli.not-run.log").read_text()
    assert skeleton.not_run(text) == (
        'Excluding controller tests marked "destructive" which require --allow-destructive or '
        'prefixing with "destructive/" to run on unmanaged hosts: cli')
    assert skeleton.not_run((SNIPPETS / "debug.linear.log").read_text()) is None


def test_a_yaml_result_is_read_like_a_json_one_and_the_uploaded_source_is_no_key():
    # The template target sets callback_result_format=yaml; its copy action
    # reports the upload in Ansible's per-task temporary directory as "src".
    lines = texts(skeleton_of("template.yaml-results.log", Path("/tmp/ioc-targets-trees-vptjycw_/baseline")))
    assert lines == [
        "TASK [template : include_tasks]",
        "task path: <tree>/test/results/.tmp/integration/template-<rand>-ÅÑŚÌβŁÈ/test/"
        "integration/targets/template/tasks/main.yml:22",
        "included: <tree>/test/results/.tmp/integration/template-<rand>-ÅÑŚÌβŁÈ/test/"
        "integration/targets/template/tasks/ansible_managed.yml for testhost",
        "TASK [template : invoke template action with content using default injected "
        "`ansible_managed`]",
        "task path: <tree>/test/results/.tmp/integration/template-<rand>-ÅÑŚÌβŁÈ/test/"
        "integration/targets/template/tasks/ansible_managed.yml:2",
        "changed: [testhost] => {changed, checksum, dest, gid, group, md5sum, mode, owner, size, "
        "state, uid}",
        "TASK [template : invoke template action with content using explicitly set "
        "`ansible_managed` var]",
        "task path: <tree>/test/results/.tmp/integration/template-<rand>-ÅÑŚÌβŁÈ/test/"
        "integration/targets/template/tasks/ansible_managed.yml:8",
    ]


def test_names_of_ansibles_tempfile_module_are_random_parts():
    """The ``file`` target's loop over a ``tempfile`` directory, as two runs printed
    it (``/tmp/ansible.<8 random>``), and setup_remote_tmp_dir's ``.test`` one."""
    printed = '''TASK [file : Delete unprivileged user home and tempdir] ************************
changed: [testhost] => (item=/tmp/ansible.%s) => {"ansible_loop_var": "item", "changed": true, "item": "/tmp/ansible.%s", "path": "/tmp/ansible.%s", "state": "absent"}
ok: [testhost] => (item=/home/tmp_ansible_test_user) => {"ansible_loop_var": "item", "changed": false, "item": "/home/tmp_ansible_test_user", "path": "/home/tmp_ansible_test_user", "state": "absent"}
TASK [file : stat] ****************************************************************
ok: [testhost] => (item=/tmp/ansible.%s.test/x) => {"changed": false}
'''
    a = skeleton.view(printed % (("jx20h6qp",) * 3 + ("u0cd_9kq",)), skeleton.Normaliser(None))
    b = skeleton.view(printed % (("_ta3t2uy",) * 3 + ("ab3dxyzw",)), skeleton.Normaliser(None))
    assert skeleton.first_difference(a, 0, b, 0) is None
    assert texts(a)[1] == ("changed: [testhost] => (item=/tmp/ansible.<rand>) => "
                           "{ansible_loop_var, changed, item, path, state}")
    assert texts(a)[4] == "ok: [testhost] => (item=/tmp/ansible.<rand>.test/x) => {changed}"
    # names that are no tempfile module's stay as they are
    assert skeleton.Normaliser(None).line("/etc/ansible.cfg /x/ansible.builtins /tmp/ansible.c") \
        == "/etc/ansible.cfg /x/ansible.builtins /tmp/ansible.c"


def test_async_job_ids_are_random_parts():
    """callback_default's test_async.yml, as two linear runs printed it (the job id
    is async_wrapper's random number and its pid)."""
    printed = '''TASK [test success async output] ***********************************************
ASYNC OK on testhost: jid=%s
changed: [testhost]
'''
    a = skeleton.view(printed % "j902672516014.16376", skeleton.Normaliser(None))
    b = skeleton.view(printed % "j12033171972.9779", skeleton.Normaliser(None))
    assert skeleton.first_difference(a, 0, b, 0) is None
    assert texts(a)[1] == "ASYNC OK on testhost: jid=j<rand>"
    # a name that merely looks like one stays
    assert skeleton.Normaliser(None).line("file j1.2.tar, v.j12.3") == "file j1.2.tar, v.j12.3"


def test_a_failure_is_the_command_before_the_exit_trap_ran():
    """callback_default's runme.sh fails at a ``diff`` (set -e) and its ``trap
    cleanup EXIT`` runs after it: the report names the diff, not the trap's
    last test (``[[ -n '' ]]``, as linear's report did)."""
    log = """+ trap cleanup EXIT
+ INIT=0
+ diff -u callback_default.out.free.stdout /dev/fd/63
++ ANSIBLE_STRATEGY=free
++ ansible-playbook -i inventory test_non_lockstep.yml
--- callback_default.out.free.stdout	2026-10-05 15:06:50.000000000 +0000
+++ /dev/fd/63	2026-11-26 22:06:01.496596420 +0000
@@ -17,10 +17,10 @@
-changed: [testhost11]
+changed: [testhost12]
+ cleanup
+ [[ 0 = 0 ]]
+ rm -rf 'callback_default.out.new.*'
+ [[ -n '' ]]
NOTICE: To resume at this test target, use the option: --start-at callback_default
"""
    assert skeleton.failure_summary(log, skeleton.Normaliser(None)) == (
        "last command `diff -u callback_default.out.free.stdout /dev/fd/63`")
    # a quoted trap command, and a script without a trap
    assert skeleton.failure_summary("+ trap 'rm -f x' EXIT\n+ false\n+ rm -f x\n",
                                    skeleton.Normaliser(None)) == "last command `false`"
    assert skeleton.failure_summary("+ true\n+ false\n", skeleton.Normaliser(None)) \
        == "last command `false`"
