"""The conformance console normaliser's rule for raced unreachable wordings
(tests/conformance/console.py): Ansible prints each distinct error text once
per run, so two hosts' errors whose volatile part came out differently print
twice and the same words once; only such blocks collapse."""
from pathlib import Path

from tests.conformance import console

RACED = """TASK [delegated] ***
[ERROR]: Task failed: Data could not be sent to remote host "127.0.0.1". Make sure this host can be reached over ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused
Origin: play.yml:10:7

failed: [h1 -> u1] (item=a)
[ERROR]: Task failed: Data could not be sent to remote host '127.0.0.1'. Make sure this host can be reached over SSH.
Origin: play.yml:10:7

failed: [h2 -> u1] (item=a)
"""


def lines(text):
    return console.normalize(text, Path("/work"), Path("/out"), ["h1", "h2"])


def test_a_raced_unreachable_error_shows_once_whichever_words_it_got():
    once = RACED.split("failed: [h1 -> u1] (item=a)\n")[0] + "failed: [h1 -> u1] (item=a)\n" \
        + "failed: [h2 -> u1] (item=a)\n"
    assert lines(RACED) == lines(once)
    assert sum(line.startswith("[ERROR]") for line in lines(RACED)) == 1


def test_a_repeated_error_without_a_volatile_part_is_kept():
    text = "TASK [t] ***\n[ERROR]: boom\n\nfailed: [h1]\n[ERROR]: boom\n\nfailed: [h2]\n"
    assert sum(line.startswith("[ERROR]") for line in lines(text)) == 2


def test_no_more_hosts_left_ends_the_task_whichever_host_finished_last():
    # forks 5: h2's failure may print before h1's skip; the banner after them
    # belongs to neither host (CI: dead_max_fail_percentage's reference had
    # h2's fatal moved below two such banners).
    banner = "NO MORE HOSTS LEFT " + "*" * 20
    tail = "\n%s\n\n%s\n\nPLAY RECAP ***\n" % (banner, banner)
    h1_first = "TASK [t] ***\nskipping: [h1]\nfatal: [h2]: FAILED! => {}\n" + tail
    h2_first = "TASK [t] ***\nfatal: [h2]: FAILED! => {}\nskipping: [h1]\n" + tail
    assert lines(h1_first) == lines(h2_first)
    assert lines(h2_first)[:4] == ["TASK [t] ***", "skipping: [h1]", "fatal: [h2]: FAILED! => {}", ""]
