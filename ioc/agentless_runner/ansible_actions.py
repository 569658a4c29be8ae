"""The target-side halves of Ansible's action plugins that run a module.

Some of Ansible's actions are a little controller work around one module:
``gather_facts`` runs ``setup`` and reshapes its result, ``service``,
``package`` and ``dnf`` (``yum``) pick the module from a fact, ``shell`` is
``command`` with a flag, ``unarchive`` copies the archive to the target first. ioc does that
work here, on the target, inside the batch, and runs Ansible's own module
(:mod:`ioc.agentless_runner.ansible_module`) with the arguments the action
plugin would have given it. The controller (``ioc.ansible.modules``) ships
the candidate modules with the batch: a *dispatch* spec::

    {"dispatch": "service", "candidates": {"systemd": key, "sysvinit": key, ...}}

Each function mirrors the action plugin of the same name in
``ansible/plugins/action/`` and says where it differs (it does not).
"""
import os
import shutil
import tempfile

from ioc.agentless_runner import ansible_module, asyncjob


def run(action, spec, args, ctx, blob, specs, facts):
    """Run ``action`` (``spec`` is its module or dispatch spec) as Ansible's action would."""
    dispatch = spec.get("dispatch")
    if action == "gather_facts":
        return gather(spec, args, ctx, blob)
    if dispatch == "service":
        return service(spec, args, ctx, blob, specs, facts)
    if dispatch == "package":
        return package(spec, args, ctx, blob, specs, facts)
    if dispatch == "shell":
        return shell(specs[spec["candidates"]["command"]], args, ctx, blob)
    if dispatch == "command":  # (the action runs ansible.legacy.command)
        sub = dict(specs[spec["candidates"]["command"]], module_name="ansible.legacy.command")
        return normal("command", sub, args, ctx, blob)
    if dispatch in ("dnf", "yum"):
        return dnf(spec, args, ctx, blob, specs, facts)
    if dispatch == "async_status":
        return async_status(specs[spec["candidates"]["async_status"]], args, ctx, blob)
    if dispatch == "unarchive":
        return unarchive(specs[spec["candidates"]["unarchive"]], args, ctx, blob)
    return normal(action, spec, args, ctx, blob)


def normal(action, spec, args, ctx, blob):
    """What Ansible's ``normal`` action plugin returns for a plain module."""
    result = ansible_module.run(spec, args, ctx, blob)
    if action == "setup":  # keeps --verbose from showing the facts, as Ansible's does
        result["_ansible_verbose_override"] = True
    return result


def async_status(spec, args, ctx, blob):
    """``async_status``: the job's status file read by Ansible's module (its action's keys)."""
    unknown = sorted(k for k in args if k not in ("jid", "mode") and not k.startswith("_"))
    if unknown:
        return {"failed": True, "changed": False,
                "msg": "Unsupported parameters for (async_status) module: %s. Supported "
                       "parameters include: jid, mode." % ", ".join(unknown)}
    if args.get("jid") in (None, ""):
        return {"failed": True, "changed": False, "msg": "missing required arguments: jid"}
    mode = args.get("mode", "status")
    if mode not in ("status", "cleanup"):
        return {"failed": True, "changed": False,
                "msg": "value of mode must be one of: status, cleanup, got: %s" % mode}

    def run_status(module_args, status_ctx):
        return ansible_module.run(spec, module_args, status_ctx, blob)

    return asyncjob.status(str(args["jid"]), ctx, run_status, mode)


def gather(spec, args, ctx, blob):
    """``gather_facts`` with Ansible's ``setup``: its action plugin's result, one module.

    As ``plugins/action/gather_facts.py`` runs the one fact module of the
    default ``FACTS_MODULES = smart``: arguments with a ``None`` value are
    dropped, the facts, warnings and deprecations are kept, a failed or
    skipped module is reported under its name, and the facts are marked
    gathered.
    """
    name = "ansible.legacy.setup"
    mod_args = dict((k, v) for k, v in args.items() if v is not None and k != "parallel")
    res = ansible_module.run(spec, mod_args, ctx, blob)
    result = {"ansible_facts": {}}
    if res.get("failed"):
        result["failed_modules"] = {name: res}
        result["failed"] = True
        result["msg"] = "The following modules failed to execute: %s." % name
        if "exception" in res:
            result["exception"] = res["exception"]
    elif res.get("skipped"):
        result["msg"] = "The following modules were skipped: %s." % name
        result["skipped_modules"] = {name: res}
        result["skipped"] = True
    else:
        result["ansible_facts"] = res.get("ansible_facts", {})
        for key in ("warnings", "deprecations"):
            if res.get(key):
                result[key] = res[key]
    result["ansible_facts"]["_ansible_facts_gathered"] = True
    result["_ansible_verbose_override"] = True
    return result


#: What Ansible's ``service`` action drops (with a warning) for each module.
_SERVICE_UNUSED = {"systemd": ("pattern", "runlevel", "sleep", "arguments", "args")}


def service(spec, args, ctx, blob, specs, facts):
    """Ansible's ``service`` action plugin.

    The module is the ``use`` argument, else the host's ``service_mgr``
    fact, else what ``setup`` finds now; one that is not a known module
    means ``service``.
    """
    candidates = spec["candidates"]
    module = str(args.get("use", "auto")).lower()
    if module == "auto" and facts.get("ansible_service_mgr"):
        module = str(facts["ansible_service_mgr"])
    if module == "auto":
        found = _fact(specs[candidates["setup"]], "ansible_service_mgr", ctx, blob)
        module = found or "auto"
    if module not in candidates or module == "setup":
        module = "service"
    new_args = dict((k, v) for k, v in args.items() if k != "use")
    warnings = []
    for unused in _SERVICE_UNUSED.get(module, ()):
        if unused in new_args:
            del new_args[unused]
            warnings.append('Ignoring "%s" as it is not used in "%s"' % (unused, module))
    sub = dict(specs[candidates[module]], module_name="ansible.legacy." + module)
    result = normal(module, sub, new_args, ctx, blob)
    if warnings:
        result["warnings"] = warnings + list(result.get("warnings") or [])
    return result


def package(spec, args, ctx, blob, specs, facts):
    """Ansible's ``package`` action plugin.

    The module is ``use``, else the ``ansible_package_use`` variable, else the
    host's ``pkg_mgr`` fact, else what ``setup`` finds now. The candidates
    are the package managers the controller could resolve (the builtin ones
    and those of installed collections); any other is Ansible's error.
    """
    candidates = spec["candidates"]
    module = args.get("use", "auto")
    if module == "auto":
        module = ctx.task_vars.get("ansible_package_use") if ctx.task_vars else None
        if not module:
            module = facts.get("ansible_pkg_mgr")
            if not module:
                res = ansible_module.run(specs[candidates["setup"]],
                                         {"filter": "ansible_pkg_mgr", "gather_subset": "!all"},
                                         ctx, blob)
                if res.get("failed"):
                    return _fail("Failed to fetch ansible_pkg_mgr to determine the package "
                                 "action backend: %s" % res.get("msg"), **res)
                module = (res.get("ansible_facts") or {}).get("ansible_pkg_mgr")
                if module is None:
                    return _fail('Could not detect a package manager. Try using the "use" '
                                 'option.')
    if not module or module == "auto":
        return _fail('Could not detect which package manager to use. Try gathering facts or '
                     'setting the "use" option.')
    if module not in candidates or module == "setup":
        return _fail('Could not find a matching action for the "%s" package manager.' % module)
    new_args = dict((k, v) for k, v in args.items() if k != "use")
    sub = dict(specs[candidates[module]], module_name="ansible.legacy." + module)
    return normal(module, sub, new_args, ctx, blob)


#: The dnf action's backends.
_DNF_BACKENDS = ("yum", "yum4", "dnf", "dnf4", "dnf5")


def dnf(spec, args, ctx, blob, specs, facts):
    """Ansible's ``dnf`` action plugin (also ``yum``'s): dnf 4 or dnf 5 as the backend.

    The backend is ``use``/``use_backend``, else (for ``auto`` and ``yum``)
    the host's ``pkg_mgr`` fact, else what ``setup`` finds now, which the
    action also returns as the ``pkg_mgr`` fact.
    """
    candidates = spec["candidates"]
    if "use" in args and "use_backend" in args:
        return _fail("parameters are mutually exclusive: ('use', 'use_backend')")
    module = args.get("use", args.get("use_backend", "auto"))
    if module in ("yum", "auto"):
        module = facts.get("ansible_pkg_mgr") or module
    found = {}
    if module not in _DNF_BACKENDS:
        res = ansible_module.run(specs[candidates["setup"]],
                                 {"filter": "ansible_pkg_mgr", "gather_subset": "!all"}, ctx, blob)
        if res.get("failed"):
            return _fail("Failed to fetch ansible_pkg_mgr to determine the dnf action "
                         "backend: %s" % res.get("msg"), **res)
        module = (res.get("ansible_facts") or {}).get("ansible_pkg_mgr", "auto")
        if module != "auto":
            found = {"ansible_facts": {"pkg_mgr": module}}
    if module not in _DNF_BACKENDS:
        return _fail(["Could not detect which major revision of dnf is in use, which is "
                      "required to determine module backend.", "You should manually specify "
                      "use_backend to tell the module whether to use the dnf4 or dnf5 "
                      "backend})"], **found)
    if module in ("yum4", "dnf4"):
        module = "dnf"
    if module not in candidates:
        return _fail("Could not find a dnf module backend for ansible.legacy.%s." % module,
                     **found)
    new_args = dict((k, v) for k, v in args.items() if k not in ("use", "use_backend"))
    sub = dict(specs[candidates[module]], module_name="ansible.legacy." + module)
    result = normal(module, sub, new_args, ctx, blob)
    if found:
        result.setdefault("ansible_facts", {}).update(found["ansible_facts"])
    return result


def shell(spec, args, ctx, blob):
    """Ansible's ``shell`` action: the ``command`` module with ``_uses_shell``."""
    if "expand_argument_vars" in args:
        return _fail("Unsupported parameters for (shell) module: expand_argument_vars")
    sub = dict(spec, module_name="ansible.legacy.command")
    return normal("command", sub, dict(args, _uses_shell=True), ctx, blob)


def unarchive(spec, args, ctx, blob):
    """Ansible's ``unarchive`` action: the archive goes to the target, then the module.

    A controller ``src`` was shipped with the batch; it is written to a
    private temporary directory, handed to Ansible's ``unarchive`` module
    and removed afterwards, as the action plugin does with its remote tmp.
    """
    args = dict(args)
    if "copy" in args:
        if "remote_src" in args:
            return _fail("parameters are mutually exclusive: ('copy', 'remote_src')")
        args["remote_src"] = not _boolean(args.pop("copy"))
    remote_src = _boolean(args.get("remote_src", False))
    source, dest = args.get("src"), args.get("dest")
    if source is None or dest is None:
        return _fail("src (or content) and dest are required")
    creates = args.get("creates")
    if creates and os.path.exists(os.path.expanduser(str(creates))):
        return {"changed": False, "skipped": True,
                "msg": "skipped, since %s exists" % os.path.expanduser(str(creates))}
    dest = os.path.expanduser(str(dest))
    if not remote_src and "://" in str(source):
        return _fail("Unsupported option, an URI src (%s) is only supported when remote_src "
                     "is True" % source)
    if not os.path.isdir(dest):
        return _fail("dest '%s' must be an existing dir" % dest)
    args.pop("decrypt", None)
    if remote_src:
        return normal("unarchive", dict(spec, module_name="ansible.legacy.unarchive"),
                      args, ctx, blob)
    try:
        entry = ctx.controller_file(str(source))
    except Exception as exc:  # ModuleError: not shipped, or missing on the controller
        extra = getattr(exc, "result", None) or {}
        if extra.get("_ioc_raised"):  # (the plugin raised it: "Task failed: <msg>")
            return dict(extra, failed=True, changed=False, msg=getattr(exc, "msg", str(exc)))
        return _fail(getattr(exc, "msg", str(exc)))
    tmp = tempfile.mkdtemp(prefix="ansible-tmp-ioc-")
    try:
        path = os.path.join(tmp, "source")
        with open(path, "wb") as out:
            out.write(entry.get("content", b""))
        args["src"] = path
        return normal("unarchive", dict(spec, module_name="ansible.legacy.unarchive"),
                      args, ctx, blob)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fact(spec, name, ctx, blob):
    """One fact, asked of ``setup`` now (as the actions do when facts were not gathered)."""
    res = ansible_module.run(spec, {"gather_subset": "!all", "filter": name}, ctx, blob)
    return (res.get("ansible_facts") or {}).get(name)


def _fail(msg, **result):
    """A failure of the action itself, not of its module: "Action failed" in Ansible's words
    (``_ioc_action_failure``, which the callbacks never see)."""
    return dict(result, failed=True, changed=False, msg=msg, _ioc_action_failure=True)


def _boolean(value):
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("yes", "on", "1", "true", "y", "t")
