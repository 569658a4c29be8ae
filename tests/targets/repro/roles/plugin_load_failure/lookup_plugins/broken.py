"""A lookup plugin that fails to load, on purpose (as ansible-core's templating
target's): using it must fail the task with "The lookup plugin 'broken' failed
to load: boom", the words the playbook asserts."""
from __future__ import annotations


raise NotImplementedError('boom')
