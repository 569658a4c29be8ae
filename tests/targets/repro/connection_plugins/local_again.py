"""A connection plugin of the playbook's own: Ansible's ``local`` under another name."""
from __future__ import annotations

from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = """
    name: local_again
    short_description: the local connection under another name (ioc's reproducers)
    description:
        - Runs on the controller like ansible.builtin.local.
    author: ioc
"""


class Connection(LocalConnection):
    transport = "local_again"
