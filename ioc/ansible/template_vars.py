"""The variables Ansible's ``template`` action gives a template, from Ansible's own code.

ansible-core's template action adds ``generate_ansible_template_vars`` to the
task's variables (``ansible.template`` in 2.19 and 2.21 alike): the template's
``template_host`` (the controller's name), ``template_uid`` (the owner of the
template file), ``template_mtime`` (its mtime) and ``ansible_managed`` — the
``ansible_managed`` setting of ansible.cfg with ``{file}``/``{uid}``/``{host}``
turned into ``{{ template_path }}``/``{{ template_uid }}``/``{{ template_host }}``
and strftime applied with the file's mtime, a trusted template. :func:`template_vars`
is that, for the controller's payloads (``PayloadCache.template_vars``), in a
form the wire carries: plain str, the mtime as the fields of its naive datetime.

The runner adds what only the task knows (``template_path``, ``template_fullpath``,
``template_destpath``, ``template_run_date``) and leaves ``ansible_managed`` out
when the task's variables set it (``include_ansible_managed``).
"""
from __future__ import annotations

from typing import Any, Dict


def template_vars(src: str, path: str) -> Dict[str, Any]:
    """``template_host``, ``template_uid``, ``template_mtime`` (datetime fields) and
    ``ansible_managed`` of the template ``src`` found at ``path`` on this controller."""
    from ansible._internal._templating import _template_vars
    from ansible.module_utils._internal._datatag import AnsibleTagHelper

    found = _template_vars.generate_ansible_template_vars(
        path=src, fullpath=path, dest_path=None, include_ansible_managed=True)
    mtime = found["template_mtime"]
    return {
        "template_host": AnsibleTagHelper.untag(found["template_host"]),
        "template_uid": AnsibleTagHelper.untag(found["template_uid"]),
        "template_mtime": (mtime.year, mtime.month, mtime.day, mtime.hour, mtime.minute,
                           mtime.second, mtime.microsecond),
        "ansible_managed": str(AnsibleTagHelper.untag(found["ansible_managed"])),
    }
