"""Where Ansible looks for a controller file a task names, and its words when
the file is in none of those places.

ansible-core's ``DataLoader.path_dwim_relative_stack`` walks the task's
search stack (the roles of its dependency chain, then the directory of the
task's own file) and the playbook's directory, each with the action's
subdirectory (``files``, ``templates``, ``vars``) and without, and names
every candidate, duplicates included, in its ``AnsibleFileNotFound``.
ioc ships the files before the batch (the controller looks them up) or
lets the runner pick among shipped candidates (a name chosen on the target):
both build the list here, so that a missing file is reported in Ansible's
exact words. Two releases differ: 2.21 leaves the subdirectory out for a
name that already starts with it; 2.19 (whose test compares bytes with
text) never does, and its message ends with a hint about ``remote_src``.
"""
import os

#: The hint 2.19's ``AnsibleFileNotFound`` ends its message with (2.21 shows
#: it as the error's help text, not in the result).
_REMOTE_SRC_HINT = ("\nIf you are using a module and expect the file to exist on the remote, "
                    "see the remote_src option")


def candidates(stack, subdir, name, basedir, legacy=False):
    """Every path Ansible tries for relative ``name``, in order, duplicates kept.

    ``stack``: ``[[directory, tasks_dir], ...]``, the task's search stack,
    each directory absolute and normalised; ``tasks_dir`` the directory
    above it when that is a ``tasks`` directory and Ansible takes the entry
    for a role's (its ``_is_role``: a file below a role's ``tasks/``), else
    None: Ansible then also tries the role's subdirectory and ``tasks/``.
    """
    add_subdir = bool(subdir) and (legacy or name.split("/")[0] != subdir)
    search = []
    for directory, tasks_dir in stack:
        if tasks_dir:
            if subdir:
                search.append(os.path.join(os.path.dirname(tasks_dir), subdir, name))
            search.append(os.path.join(tasks_dir, name))
        if add_subdir:
            search.append(os.path.join(directory, subdir, name))
        search.append(os.path.join(directory, name))
    if add_subdir:
        search.append(os.path.join(basedir, subdir, name))
    search.append(os.path.join(basedir, name))
    return search


def not_found(name, searched, legacy=False):
    """``AnsibleFileNotFound``'s message for ``name`` looked for at ``searched``."""
    message = "Could not find or access '%s'" % name
    if searched:
        message += "\nSearched in:\n\t%s" % "\n\t".join(searched)
    message += " on the Ansible Controller."
    return message + _REMOTE_SRC_HINT if legacy else message
