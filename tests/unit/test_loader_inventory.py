"""Specification of the inventory loader, the variable queries and host patterns."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ioc.errors import InventoryError
from ioc.loader import (
    add_vars_dirs, ensure_localhost, group_names, groups_dict, host_vars,
    implicit_localhost_inventory, load_inventory, match_hosts,
)
from ioc.model import Inventory


def own(variables) -> dict:
    """A host's variables but ``inventory_file``/``inventory_dir``, which every
    host from a source has (see ``test_hosts_know_the_source_they_came_from``)."""
    return {k: v for k, v in variables.items() if k not in ("inventory_file", "inventory_dir")}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


INI = """
    localhost ansible_connection=local
    [web]
    web[01:03] http_port=8080 label="front end" enabled=True
    [db]
    db1:2222 ansible_user=admin
    [prod:children]
    web
    db
    [prod:vars]
    env=prod
    retries=5
    [web:vars]
    env=web
    [all:vars]
    ntp=pool.example
    env=all
"""


@pytest.fixture
def ini_inventory(tmp_path: Path) -> Inventory:
    return load_inventory([str(write(tmp_path / "hosts", INI))])


# ---------------------------------------------------------------- INI


def test_ini_hosts_keep_order_of_first_appearance(ini_inventory: Inventory) -> None:
    assert list(ini_inventory.hosts) == ["localhost", "web01", "web02", "web03", "db1"]


def test_ini_host_vars_are_literal_evaluated(ini_inventory: Inventory) -> None:
    assert own(ini_inventory.hosts["web02"].vars) == {"http_port": 8080, "label": "front end", "enabled": True}


def test_ini_lowercase_true_stays_a_string(tmp_path: Path) -> None:
    inv = load_inventory([str(write(tmp_path / "hosts", "h flag=true other=yes\n"))])
    assert own(inv.hosts["h"].vars) == {"flag": "true", "other": "yes"}


def test_ini_host_port_becomes_ansible_port(ini_inventory: Inventory) -> None:
    assert own(ini_inventory.hosts["db1"].vars) == {"ansible_port": 2222, "ansible_user": "admin"}


def test_ini_groups_children_and_vars(ini_inventory: Inventory) -> None:
    groups = ini_inventory.groups
    assert groups["prod"].children == ("web", "db")
    assert groups["prod"].vars == {"env": "prod", "retries": 5}
    assert groups["web"].hosts == ("web01", "web02", "web03")


def test_all_and_ungrouped_always_exist(ini_inventory: Inventory, tmp_path: Path) -> None:
    assert ini_inventory.groups["ungrouped"].hosts == ("localhost",)
    # (`all` itself holds no parsed INI host: they are its through its children)
    assert ini_inventory.groups["all"].hosts == ()
    assert groups_dict(ini_inventory)["all"] == sorted(ini_inventory.hosts,
                                                       key=list(ini_inventory.hosts).index)
    empty = load_inventory([str(write(tmp_path / "empty", "# nothing\n"))])
    assert set(empty.groups) == {"all", "ungrouped"}


def test_ini_alphabetic_and_stepped_ranges(tmp_path: Path) -> None:
    inv = load_inventory([str(write(tmp_path / "hosts", "[g]\nn[a:c]\nm[0:6:3]\n"))])
    assert list(inv.hosts) == ["na", "nb", "nc", "m0", "m3", "m6"]


def test_ini_bad_section_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "hosts", "[web]\nh1\n[web:varz]\n")
    with pytest.raises(InventoryError) as info:
        load_inventory([str(path)])
    assert str(info.value).startswith("%s:3: " % path)


def test_ini_host_word_without_equals_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "hosts", "[web]\nh1 ansible_user\n")
    with pytest.raises(InventoryError) as info:
        load_inventory([str(path)])
    assert str(info.value).startswith("%s:2: " % path) and "ansible_user" in str(info.value)


# ---------------------------------------------------------------- YAML, dirs, lists


YAML_INV = """
    all:
      vars: {ntp: pool}
      hosts:
        bastion: {ansible_host: 10.0.0.1}
      children:
        web:
          hosts:
            w1: {port: 80}
            w2:
          vars: {role: web}
        prod:
          children:
            web:
"""


def test_yaml_inventory_hosts_groups_and_vars(tmp_path: Path) -> None:
    inv = load_inventory([str(write(tmp_path / "inv.yml", YAML_INV))])
    assert list(inv.hosts) == ["bastion", "w1", "w2"]
    assert own(inv.hosts["w1"].vars) == {"port": 80} and own(inv.hosts["w2"].vars) == {}
    assert inv.groups["web"].vars == {"role": "web"}
    assert inv.groups["prod"].children == ("web",)
    assert inv.groups["all"].vars == {"ntp": "pool"}
    assert inv.groups["ungrouped"].hosts == ("bastion",)


def test_yaml_inventory_with_a_bad_group_key_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "inv.yml", "all:\n  host:\n    a:\n")
    with pytest.raises(InventoryError) as info:
        load_inventory([str(path)])
    assert str(info.value).startswith("%s:2: " % path) and "'host'" in str(info.value)


def test_directory_source_reads_every_inventory_file(tmp_path: Path) -> None:
    write(tmp_path / "inv/01-ini", "[a]\nh1\n")
    write(tmp_path / "inv/02.yml", "b:\n  hosts:\n    h2:\n")
    write(tmp_path / "inv/notes.md", "not an inventory = at all [\n")
    inv = load_inventory([str(tmp_path / "inv")])
    assert list(inv.hosts) == ["h1", "h2"]
    assert set(inv.groups) == {"all", "ungrouped", "a", "b"}


def test_comma_separated_host_list_source(tmp_path: Path) -> None:
    inv = load_inventory(["h1,h2,"])
    assert list(inv.hosts) == ["h1", "h2"]


def test_missing_source_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError):
        load_inventory([str(tmp_path / "nope")])


def test_several_sources_are_merged(tmp_path: Path) -> None:
    first = write(tmp_path / "one", "[g]\nh1 a=1\n")
    second = write(tmp_path / "two", "[g]\nh1 b=2\nh2\n")
    inv = load_inventory([str(first), str(second)])
    assert own(inv.hosts["h1"].vars) == {"a": 1, "b": 2}
    assert inv.groups["g"].hosts == ("h1", "h2")


# ---------------------------------------------------------------- host_vars / group_vars


def test_group_vars_and_host_vars_beside_the_inventory(tmp_path: Path) -> None:
    path = write(tmp_path / "hosts", "[web]\nw1 a=inline\n")
    write(tmp_path / "group_vars/web.yml", "g: from_file\n")
    write(tmp_path / "group_vars/all/one.yml", "x: 1\n")
    write(tmp_path / "group_vars/all/two.yaml", "y: 2\n")
    write(tmp_path / "host_vars/w1.yaml", "a: from_file\n")
    inv = load_inventory([str(path)])
    assert inv.groups["web"].vars == {"g": "from_file"}
    assert inv.groups["all"].vars == {"x": 1, "y": 2}
    assert own(inv.hosts["w1"].vars) == {"a": "from_file"}


def test_playbook_dir_vars_override_inventory_dir_vars(tmp_path: Path) -> None:
    path = write(tmp_path / "inv/hosts", "[web]\nw1\n")
    write(tmp_path / "inv/group_vars/web.yml", "g: inventory\nkeep: 1\n")
    write(tmp_path / "play/group_vars/web.yml", "g: playbook\n")
    inv = add_vars_dirs(load_inventory([str(path)]), str(tmp_path / "play"))
    assert inv.groups["web"].vars == {"g": "playbook", "keep": 1}


def test_bad_group_vars_file_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "hosts", "[web]\nw1\n")
    bad = write(tmp_path / "group_vars/web.yml", "a: [1,\n")
    with pytest.raises(InventoryError) as info:
        load_inventory([str(path)])
    assert str(info.value).startswith("%s:" % bad)


# ---------------------------------------------------------------- queries


def test_host_vars_merge_all_then_parents_then_children_then_host(ini_inventory: Inventory) -> None:
    merged = host_vars(ini_inventory, "web01")
    assert merged["env"] == "web"
    assert merged["ntp"] == "pool.example" and merged["retries"] == 5
    assert merged["http_port"] == 8080
    assert host_vars(ini_inventory, "db1")["env"] == "prod"
    assert host_vars(ini_inventory, "localhost")["env"] == "all"


def test_host_vars_same_depth_groups_merge_by_name(tmp_path: Path) -> None:
    inv = load_inventory([str(write(tmp_path / "hosts", """
        [b]
        h
        [a]
        h
        [a:vars]
        v=a
        [b:vars]
        v=b
    """))])
    assert host_vars(inv, "h")["v"] == "b"


def test_host_vars_of_unknown_host_is_an_error(ini_inventory: Inventory) -> None:
    with pytest.raises(InventoryError):
        host_vars(ini_inventory, "nobody")


def test_groups_dict_includes_children_hosts_all_and_ungrouped(ini_inventory: Inventory) -> None:
    groups = groups_dict(ini_inventory)
    assert groups["prod"] == ["web01", "web02", "web03", "db1"]
    assert groups["all"] == ["localhost", "web01", "web02", "web03", "db1"]
    assert groups["ungrouped"] == ["localhost"]


def test_group_names_are_sorted_with_ancestors_and_without_all(ini_inventory: Inventory) -> None:
    assert group_names(ini_inventory, "web01") == ["prod", "web"]
    # Ansible keeps "ungrouped" in group_names of an ungrouped host.
    assert group_names(ini_inventory, "localhost") == ["ungrouped"]


# ---------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("all", ("localhost", "web01", "web02", "web03", "db1")),
        ("*", ("localhost", "web01", "web02", "web03", "db1")),
        ("web", ("web01", "web02", "web03")),
        ("db1", ("db1",)),
        ("web0*", ("web01", "web02", "web03")),
        ("~web0[12]", ("web01", "web02")),
        ("web:db", ("web01", "web02", "web03", "db1")),
        ("db,web", ("db1", "web01", "web02", "web03")),
        ("prod:!db", ("web01", "web02", "web03")),
        ("all:&prod:!web02", ("web01", "web03", "db1")),
        ("!web:prod", ("db1",)),
        ("web[0]", ("web01",)),
        ("web[1:]", ("web02", "web03")),
        ("web[-1]", ("web03",)),
        ("nosuchgroup", ()),
        ("db1,nosuch", ("db1",)),
    ],
)
def test_match_hosts_patterns(ini_inventory: Inventory, pattern: str, expected: tuple[str, ...]) -> None:
    assert match_hosts(ini_inventory, pattern) == expected


def test_limit_intersects_the_pattern(ini_inventory: Inventory) -> None:
    assert match_hosts(ini_inventory, "prod", limit="db1,web02") == ("web02", "db1")
    assert match_hosts(ini_inventory, "prod", limit="all:!web") == ("db1",)


def test_limit_from_a_file(ini_inventory: Inventory, tmp_path: Path) -> None:
    limit = write(tmp_path / "retry", "web03\ndb1\n")
    assert match_hosts(ini_inventory, "all", limit="@%s" % limit) == ("web03", "db1")


def test_invalid_regex_is_an_inventory_error(ini_inventory: Inventory) -> None:
    with pytest.raises(InventoryError):
        match_hosts(ini_inventory, "~web[")


def test_localhost_not_in_inventory_is_the_implicit_localhost(tmp_path: Path) -> None:
    inv = load_inventory([str(write(tmp_path / "hosts", "[web]\nw1\n"))])
    assert match_hosts(inv, "localhost") == ("localhost",)
    assert match_hosts(inv, "all") == ("w1",)
    with_local = ensure_localhost(inv)
    assert with_local.hosts["localhost"].vars == {"ansible_connection": "local"}
    assert match_hosts(with_local, "all") == ("w1",)
    assert groups_dict(with_local)["all"] == ["w1"]


def test_ensure_localhost_keeps_an_inventory_localhost(ini_inventory: Inventory) -> None:
    assert ensure_localhost(ini_inventory) is ini_inventory


def test_implicit_localhost_inventory_has_only_local_localhost() -> None:
    inv = implicit_localhost_inventory()
    assert inv.implicit_localhost is True
    assert list(inv.hosts) == ["localhost"]
    assert host_vars(inv, "localhost") == {"ansible_connection": "local"}
    assert inv.groups["all"].hosts == () and inv.groups["ungrouped"].hosts == ("localhost",)
    assert match_hosts(inv, "localhost") == ("localhost",)
    # As in Ansible, the implicit localhost is not matched by "all".
    assert match_hosts(inv, "all") == ()


def test_hosts_know_the_source_they_came_from(tmp_path: Path) -> None:
    """``inventory_file``/``inventory_dir``, as Ansible's ``InventoryData.add_host``
    sets them: the file a host first came from (inside a directory source,
    the file), a host list's text and no directory; a host's own value wins."""
    directory = tmp_path / "inv"
    write(directory / "a", "h1\nh2 inventory_dir=mine\n")
    write(directory / "b", "h1 x=1\nh3\n")
    inv = load_inventory([str(directory), "h4,h1,"])
    assert inv.hosts["h1"].vars["inventory_file"] == str(directory / "a")
    assert inv.hosts["h1"].vars["inventory_dir"] == str(directory)
    assert inv.hosts["h2"].vars["inventory_dir"] == "mine"
    assert inv.hosts["h3"].vars["inventory_file"] == str(directory / "b")
    assert inv.hosts["h4"].vars["inventory_file"] == "h4,h1,"
    assert inv.hosts["h4"].vars["inventory_dir"] is None


def test_groups_list_their_hosts_in_ansibles_order(tmp_path: Path) -> None:
    """A group's hosts, then its children's, level by level (Ansible's
    ``Group.get_hosts``), not the order hosts were first read; a host
    ``add_host`` makes is in ``all`` itself, before the parsed ones."""
    from ioc.inventory import with_host

    inv = load_inventory([str(write(tmp_path / "hosts",
                                    "[b]\ny\n[a]\nx\n[a:children]\nb\n[c]\nz\n"))])
    assert groups_dict(inv)["all"] == ["x", "z", "y"]
    assert match_hosts(inv, "a") == ("x", "y")
    inv, _ = with_host(inv, "dyn", [], {})
    inv, _ = with_host(inv, "dyn2", ["c"], {})
    assert match_hosts(inv, "all") == ("dyn", "dyn2", "x", "z", "y")
    assert groups_dict(inv)["ungrouped"] == ["dyn"] and groups_dict(inv)["c"] == ["z", "dyn2"]
