"""A filter plugin that fails to load, on purpose (as ansible-core's templating
target's): using it must fail the task with "The filter plugin 'broken' failed to
load: boom", the words the playbook asserts."""
from __future__ import annotations


class Broken:
    @property
    def accept_args_markers(self):
        raise Exception('boom')


class FilterModule:
    def filters(self):
        return {
            'broken': Broken(),
        }
