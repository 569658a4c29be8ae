#!/usr/bin/python
# A module that fails and says nothing: Ansible gives its result a msg of its own.
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec={"data": {"type": "str"}})
module.exit_json(failed=True, changed=False, data=module.params["data"])
