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


def test_a_password_hash_with_a_random_salt_is_a_random_part():
    """filter_core's "Debug the output for the next assert", as two runs
    printed it: ``password_hash`` with no salt draws a 16-character one."""
    printed = """TASK [filter_core : Debug the output for the next assert] **********************
ok: [localhost] => {
    "msg": "%s"
}
"""
    a = skeleton.view(printed % "$6$rounds=656000$U7YbPGVCVY5baLS/$0gZMoXmW7ZbmuKaxHbf6M4LuwL4nADSwurP"
                      "Sfg/sw3ON5ghxJlk07/SsFmJnsX7vvyfy2mYzs/2k96OyeFyYk0", skeleton.Normaliser(None))
    b = skeleton.view(printed % "$6$rounds=656000$mb5B2rTLFD6CBKyF$VwAfBoI4gZcHQQBh4WojU9OPDkUaeXv9.yN"
                      "Uwhec7RxCmZhKyv14JVPII/gmjkV5anOqKnEgsfMoyBRsdB9Va0", skeleton.Normaliser(None))
    assert skeleton.first_difference(a, 0, b, 0) is None
    assert texts(a)[1].endswith("msg=$6$rounds=656000$<rand>$<hash>")
    # a hash of a salt given (filter_core's "abcdefgh" and others) stays
    fixed = "$5$12345678$uAZsE3BenI2G.nA8DpTl.9Dc8JiqacI53pEqRr5ppT7"
    assert skeleton.Normaliser(None).line(fixed) == fixed


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


# -- stdout and stderr, each compared on its own ------------------------------------

#: The first tasks of callback_default's ``failed_to_stderr`` run
#: (``ANSIBLE_DISPLAY_FAILED_STDERR=1``) as ansible-core recorded its two streams
#: (``callback_default.out.failed_to_stderr.{stdout,stderr}``; stderr whole, with
#: runme.sh's trace of the command).
CALLBACK_STDOUT = (SNIPPETS / "callback_default.failed_to_stderr.stdout").read_text()
CALLBACK_STDERR = (SNIPPETS / "callback_default.failed_to_stderr.stderr").read_text()


def interleaved(stdout: str, stderr: str, seed: int) -> str:
    """A console that got the lines of two pipes in an order of its own: each
    stream's lines in their order, which stream comes next chosen by ``seed``."""
    import random
    chooser = random.Random(seed)
    out, err, console = stdout.splitlines(), stderr.splitlines(), []
    while out or err:
        source = out if out and (not err or chooser.random() < 0.5) else err
        console.append(source.pop(0))
    return "\n".join(console) + "\n"


def streams_of(stdout: str, stderr: str):
    normaliser = skeleton.Normaliser(None)
    return {"stdout": skeleton.view(stdout, normaliser),
            "stderr": skeleton.view(stderr, normaliser)}


def test_the_same_streams_reaching_the_console_in_another_order_are_identical():
    """callback_default tees ansible-playbook's stdout and stderr apart, so the
    console gets ``fatal:`` (stderr) before or after ``...ignoring`` (stdout) as
    the two tees run: on the console the runs part, stream by stream they do not."""
    console_a = interleaved(CALLBACK_STDOUT, CALLBACK_STDERR, seed=1)
    console_b = interleaved(CALLBACK_STDOUT, CALLBACK_STDERR, seed=2)
    merged_a = skeleton.view(console_a, skeleton.Normaliser(None))
    merged_b = skeleton.view(console_b, skeleton.Normaliser(None))
    assert skeleton.first_difference(merged_a, 0, merged_b, 0) is not None  # the old comparison
    a = streams_of(CALLBACK_STDOUT, CALLBACK_STDERR)
    b = streams_of(CALLBACK_STDOUT, CALLBACK_STDERR)
    assert skeleton.first_difference_of_streams(a, 0, b, 0) is None
    assert skeleton.brief_difference_of_streams(a, 0, b, 0) == ""


def test_a_difference_in_one_stream_is_reported_with_the_stream_named():
    a = streams_of(CALLBACK_STDOUT, CALLBACK_STDERR)
    b = streams_of(CALLBACK_STDOUT, CALLBACK_STDERR.replace(
        '"msg": "One or more items failed"', '"msg": "All items completed"'))
    assert skeleton.first_difference_of_streams(a, 0, b, 2) == (
        "exit code linear 0, mitogen_batch 2; stderr line 7 (in `ansible-playbook -i "
        "inventory test.yml`): linear \"fatal: [testhost]: FAILED! => {msg} msg=One or more "
        "items failed\"; mitogen_batch \"fatal: [testhost]: FAILED! => {msg} msg=All items "
        "completed\"")
    assert skeleton.brief_difference_of_streams(a, 0, b, 2) == (
        "exit 0/2, stderr at `ansible-playbook -i inventory test.yml`")
    # stdout is compared first, and its lines are located by their task
    c = streams_of(CALLBACK_STDOUT.replace("skipping: [testhost] => (item=debug-4)",
                                           "ok: [testhost] => (item=debug-4)"),
                   CALLBACK_STDERR.replace("no reason", "some reason"))
    assert skeleton.first_difference_of_streams(a, 0, c, 0) == (
        "stdout line 19 (at TASK [debug loop]): linear \"skipping: [testhost] => "
        "(item=debug-4)\"; mitogen_batch \"ok: [testhost] => (item=debug-4)\"")
    assert skeleton.brief_difference_of_streams(a, 0, c, 0) == "stdout at TASK [debug loop]"


def test_one_tasks_errors_for_several_hosts_on_stderr_are_in_no_order():
    """special_vars_hosts' ping task: linear (forks 5) prints each host's error
    as its worker finishes; on stderr no status line says whose it is."""
    unreachable = ("[ERROR]: Task failed: Failed to connect to the host via ssh: ssh: connect "
                   "to host 127.0.0.1 port 1011: Connection refused\n"
                   "Origin: /t/playbook.yml:29:7\n\n29     - ping:\n         ^ column 7\n\n")
    failed = ("[ERROR]: Task failed: Action failed: A 'failed_when' expression evaluated to "
              "'True'.\nOrigin: /t/playbook.yml:29:7\n\n29     - ping:\n         ^ column 7\n\n")
    elsewhere = failed.replace("29:7", "33:7")
    normaliser = skeleton.Normaliser(None)
    one = skeleton.view(unreachable + failed + elsewhere, normaliser)
    other = skeleton.view(failed + unreachable + elsewhere, normaliser)
    assert texts(one) == texts(other)
    assert texts(one)[-2:] == [elsewhere.splitlines()[0], "Origin: /t/playbook.yml:33:7"]
    # errors of two tasks keep their order
    moved = skeleton.view(elsewhere + unreachable + failed, normaliser)
    assert skeleton.first_difference(one, 0, moved, 0) is not None


def test_the_harness_judges_each_stream_of_a_run_on_its_own(tmp_path):
    """``harness.judge`` on two runs' files: the consoles got the streams in other
    orders (identical); a run of an older harness, with its console only, is one stream."""
    from tests.targets import harness
    runs = []
    for strategy, seed in (("linear", 1), ("mitogen_batch", 2)):
        for name, text in (("log", interleaved(CALLBACK_STDOUT, CALLBACK_STDERR, seed)),
                           ("stdout", CALLBACK_STDOUT), ("stderr", CALLBACK_STDERR)):
            (tmp_path / ("%s.%s" % (strategy, name))).write_text(text)
        runs.append(harness.Run(strategy, 0, 1.0, str(tmp_path / ("%s.log" % strategy)),
                                stdout=str(tmp_path / ("%s.stdout" % strategy)),
                                stderr=str(tmp_path / ("%s.stderr" % strategy))))
    outcome = harness.judge("callback_default", runs[0], runs[1], {})
    assert (outcome.result, outcome.detail) == ("identical", "")
    assert (tmp_path / "linear.stderr.skeleton").read_text().splitlines()[0] \
        == "[ERROR]: Task failed: Action failed: no reason"
    consoles_only = [harness.Run(r.strategy, 0, 1.0, r.log) for r in runs]
    outcome = harness.judge("callback_default", *consoles_only, {})
    assert outcome.result == "differs"
    assert outcome.detail.startswith("first difference: console line ")
