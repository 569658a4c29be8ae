"""Intermediaries for whole groups: ``mitogen_via`` as a group variable, ``ioc_via_auto``."""
from __future__ import annotations

import os
import textwrap

from ioc import inventory as inv
from ioc import loader
from ioc.callbacks import CallbackSet
from ioc.controller.playbook import PlaybookRun
from ioc.controller.state import RunOptions
from ioc.loader.inventory import load_inventory

RACKS = """
    [rack1]
    n11
    n12
    n13
    [rack2]
    n21
    n22
    [lonely]
    solo
    [racks:children]
    rack1
    rack2
    [web]
    n12
    [other]
    free
    """


def inventory_of(tmp_path, text):
    path = tmp_path / "hosts"
    path.write_text(textwrap.dedent(text))
    return load_inventory([str(path)])


def via_of(tmp_path, text, host, extra=None):
    """``host``'s ``mitogen_via`` as ioc-run would connect to it (the chain's first hop)."""
    inventory = inventory_of(tmp_path, text)
    book = loader.load_playbook_data([{"hosts": host, "gather_facts": False, "tasks": []}],
                                     os.path.join(str(tmp_path), "play.yml"),
                                     extra_vars=extra or {})
    run = PlaybookRun(book, inventory, extra or {}, CallbackSet([]), RunOptions())
    return run.connection_spec(host).via


def test_each_host_is_behind_the_first_host_of_its_own_group(tmp_path):
    inventory = inventory_of(tmp_path, RACKS)
    heads = {h: inv.via_group_head(inventory, h) for h in inventory.hosts}
    # n12 is in web too, but rack1 comes first; the first hosts, a group of
    # one and a host in no group are reached directly.
    assert heads == {"n11": None, "n12": "n11", "n13": "n11", "n21": None, "n22": "n21",
                     "solo": None, "free": None}


def test_ioc_via_auto_on_the_command_line_puts_every_group_behind_its_first_host(tmp_path):
    assert via_of(tmp_path, RACKS, "n13", {"ioc_via_auto": True}) == "n11"
    assert via_of(tmp_path, RACKS, "n22", {"ioc_via_auto": "yes"}) == "n21"
    assert via_of(tmp_path, RACKS, "n11", {"ioc_via_auto": True}) is None
    assert via_of(tmp_path, RACKS, "n13") is None  # (not asked for: direct)


def test_ioc_via_auto_as_a_group_variable_applies_to_that_groups_hosts(tmp_path):
    text = RACKS + "[rack2:vars]\nioc_via_auto=true\n"
    assert via_of(tmp_path, text, "n22") == "n21"
    assert via_of(tmp_path, text, "n13") is None


def test_a_mitogen_via_of_the_host_or_its_group_wins_over_ioc_via_auto(tmp_path):
    text = RACKS.replace("n13\n", "n13 mitogen_via=solo\n") + \
        "[rack2:vars]\nmitogen_via=n12\n[all:vars]\nioc_via_auto=true\n"
    assert via_of(tmp_path, text, "n13") == "solo"
    assert via_of(tmp_path, text, "n22") == "n12"
    assert via_of(tmp_path, text, "n12") == "n11"


def test_mitogen_via_as_a_group_variable_ignores_itself_on_the_intermediary(tmp_path):
    text = RACKS + "[rack1:vars]\nmitogen_via=n11\n"
    assert via_of(tmp_path, text, "n12") == "n11"
    assert via_of(tmp_path, text, "n11") is None
