"""Dispatch an action to the executor's own implementation or to a module."""
import sys
import time
import traceback

from ioc.agentless_runner import modules, results, trust
from ioc.agentless_runner.context import ModuleContext as Context
from ioc.agentless_runner.context import ModuleDirectory, ModuleError, TaskError
from ioc.agentless_runner.flow import as_bool

__all__ = ["Context", "run", "NATIVE", "NATIVE_OPTIONS"]

#: Actions the executor implements itself, beside the modules package.
NATIVE = frozenset({"set_fact", "gather_facts", "add_host", "group_by", "pause",
                    "include_vars", "include_tasks", "include_role"})


#: The arguments the executor's own actions take where they take fewer than
#: Ansible's (the planner refuses the rest, naming them).
NATIVE_OPTIONS = {"include_vars": frozenset({
    "file", "name", "dir", "depth", "files_matching", "ignore_files", "extensions",
    "ignore_unknown_extensions", "hash_behaviour"})}


def run(action, args, ctx):
    """Run ``action`` with templated ``args``; always returns a result dict."""
    if action == "set_fact":
        return _set_fact(args, ctx.templar)
    if action in _INVENTORY_ACTIONS:
        return _INVENTORY_ACTIONS[action](args)
    if action == "include_vars":
        try:
            return _include_vars(args, ctx)
        except TaskError as exc:
            return _task_error(exc)
    if action in ("include_tasks", "include_role"):
        return _include(action, args)
    try:
        module = modules.get(action)
    except KeyError:
        return {"failed": True, "changed": False,
                "msg": "The module %s was not found on the target." % action}
    if action in OPTIONS_CHECKED_HERE:
        refused = _unknown_options(action, args, module.OPTIONS) or \
            _refused_value(action, args, module)
        if refused is not None:
            return refused
    if ctx.check_mode and not getattr(module, "SUPPORTS_CHECK_MODE", False):
        return {"changed": False, "skipped": True,
                "msg": "remote module (%s) does not support check mode" % action}
    if action in ("command", "shell"):
        args = dict(args, _ioc_module=action)
    directory = None
    if action in _PLAIN_MODULES:  # (Ansible's module would run as an AnsibleModule)
        directory = ctx.cwd = ModuleDirectory(ctx.child_env(), ctx.start_dir)
    try:
        result = _run_module(action, module, args, ctx)
    finally:
        if directory is not None:
            directory.remove()
            ctx.cwd = None
    return directory.add_warnings(result) if directory is not None else result


def _run_module(action, module, args, ctx):
    """One of ioc's modules: its result, a failed one when it raised."""
    try:
        result = module.run(args, ctx)
    except ModuleError as exc:
        result = dict(exc.result, failed=True, msg=exc.msg)
    except TaskError as exc:
        return _task_error(exc)
    except Exception as exc:  # a bug in a module: report it as Ansible does
        result = {"failed": True, "changed": False,
                  "msg": "MODULE FAILURE: %s: %s" % (type(exc).__name__, exc),
                  "exception": traceback.format_exc()}
    if action == "debug" and not result.get("skipped"):
        result["_ansible_verbose_always"] = True  # (not above its verbosity: a skip)
    elif result.get("failed") and action in _PLAIN_MODULES and "exception" not in result \
            and not results.legacy():
        result["exception"] = results.TRACEBACK_UNAVAILABLE  # as 2.21 gives every module failure
    return result


def _task_error(exc):
    """The result of a task whose action raised (Ansible's ``AnsibleError``)."""
    result = results.failed_result("Task failed: %s" % exc.msg,  # (exception: as Ansible's)
                                   exception=results.TRACEBACK_UNAVAILABLE, _ioc_task_error=True)
    if isinstance(exc.expression, str):
        result["_ioc_error_expr"] = exc.expression
    if exc.option is not None:
        result["_ioc_error_option"] = exc.option
    if exc.origin is not None:
        result["_ioc_error_file"] = list(exc.origin)
    if exc.help_text:
        result["_ioc_error_help"] = exc.help_text
    if exc.value_origin:
        result["_ioc_error_value_origin"] = exc.value_origin
    return result


#: ioc's modules that are Ansible modules without controller work of their own.
_PLAIN_MODULES = frozenset({"command", "shell", "file", "stat", "lineinfile", "blockinfile",
                            "replace", "slurp"})


#: Ansible's action plugins whose options ioc's modules take in full: an
#: unknown option fails the task when it runs, worded as each plugin raises
#: it (the planner leaves these to the runner).
OPTIONS_CHECKED_HERE = frozenset({"debug", "assert", "fail"})
#: ``assert``'s aliases, as its argument spec lists them.
_ALIASES = {"assert": {"msg": "fail_msg"}}


def _unknown_options(action, args, options):
    """The failed result for options ``action`` does not take, or None.

    ``_ioc_raised``: the plugin raised (its ``[ERROR]`` line is ``Task failed:
    <msg>``, not ``Action failed``).
    """
    bad = sorted(k for k in args if k not in options and not str(k).startswith("_"))
    if not bad:
        return None
    if action == "fail":  # ActionBase's _VALID_ARGS check
        return {"failed": True, "changed": False, "_ioc_raised": True,
                "msg": "Invalid options for fail: %s" % ",".join(bad)}
    aliases = _ALIASES.get(action, {})
    listed = ", ".join(sorted(o for o in options if o not in aliases))
    if aliases:
        listed += " (%s)" % ", ".join(sorted(aliases))
    result = {"failed": True, "_ioc_raised": True,
              "msg": "Unsupported parameters for (%s) module: %s. Supported parameters include: "
                     "%s." % (action, ", ".join(bad), listed)}
    if action != "debug":
        result["changed"] = False
    return result


def _refused_value(action, args, module):
    """The failed result for an option value the plugin's argument spec refuses
    (debug's ``var`` that is no text), raised as the plugin raises it; or None."""
    check = getattr(module, "argument_error", None)
    msg = check(args) if check is not None else None
    if msg is None:
        return None
    result = {"failed": True, "_ioc_raised": True, "msg": msg}
    if action != "debug":
        result["changed"] = False
    return result


def _add_host(args):
    """``add_host``: what to add; the controller applies it and decides ``changed``."""
    name = args.get("name", args.get("hostname", args.get("host")))
    if not name:
        return {"failed": True, "changed": False, "msg": "name, host or hostname needs to be provided"}
    name, port = _split_port(str(name))
    groups = args.get("groups", args.get("group", args.get("groupname", [])))
    if isinstance(groups, str):
        groups = [g.strip() for g in groups.split(",") if g.strip()]
    host_vars = {k: v for k, v in args.items()
                 if k not in ("name", "hostname", "host", "groups", "group", "groupname")}
    if port:
        host_vars["ansible_ssh_port"] = port
    return {"changed": False,
            "add_host": {"host_name": name, "groups": list(groups), "host_vars": host_vars}}


def _split_port(name):
    host, sep, port = name.rpartition(":")
    if sep and port.isdigit() and host and not host.endswith(":"):
        return host, int(port)
    return name, None


def _group_by(args):
    """``group_by``: the group to put the host in; the controller applies it."""
    key = args.get("key")
    if key is None or str(key) == "":
        return {"failed": True, "changed": False, "msg": "the 'key' param is required when using group_by"}
    parents = args.get("parents", ["all"])
    if isinstance(parents, str):
        parents = [parents]
    return {"changed": False, "add_group": str(key).replace(" ", "-"), "parent_groups": list(parents)}


def _pause(args):
    """``pause``: it runs in the controller (a controller step), never on a target.

    With ``seconds``/``minutes`` it waits; without, or with a ``prompt``, it
    asks on the controller's terminal and fails clearly when there is none.
    """
    timed = args.get("seconds") is not None or args.get("minutes") is not None
    user_input = ""
    start = time.time()
    if timed:
        seconds = float(args.get("seconds") or 0) + 60 * float(args.get("minutes") or 0)
        time.sleep(seconds)
    else:
        if not sys.stdin.isatty():
            return {"failed": True, "changed": False,
                    "msg": "pause with a prompt is interactive, and standard input is not a "
                           "terminal"}
        prompt = args.get("prompt") or "Press enter to continue, Ctrl+C to interrupt"
        sys.stdout.write("[pause]\n%s:\n" % prompt)
        sys.stdout.flush()
        user_input = sys.stdin.readline().rstrip("\n")
        seconds = time.time() - start
    stop = time.time()
    return {"changed": False, "rc": 0, "stderr": "", "stdout": "Paused for %s seconds" % _num(seconds),
            "start": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)),
            "stop": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stop)),
            "delta": int(stop - start), "echo": True, "user_input": user_input}


def _num(value):
    return int(value) if float(value).is_integer() else value


_INVENTORY_ACTIONS = {"add_host": _add_host, "group_by": _group_by, "pause": _pause}


def _include_vars(args, ctx):
    """``include_vars`` of controller files shipped with the batch (L6.5), as
    ansible-core's action reads them: one file, or a directory's files in
    Ansible's order (``depth``, ``files_matching``, ``ignore_files``,
    ``extensions``, ``ignore_unknown_extensions``), under ``name``, merged
    by ``hash_behaviour``. A vault-encrypted file arrives decrypted and hides
    the task's result, as Ansible's does (``_ansible_no_log``)."""
    if any(k in args for k in _DIR_ARGS) and any(k in args for k in ("file", "_raw_params")):
        raise TaskError("You are mixing file only and dir only arguments, these are incompatible")
    for option in ("extensions", "ignore_files"):
        if option in args and not isinstance(args[option], (list, str) if option == "ignore_files"
                                             else list):
            # (Ansible's action raises it about the option's value)
            raise TaskError("The '%s' option must be a list." % option, option=option)
    included = []
    hidden = []
    try:
        if args.get("dir"):
            data = _vars_dir(args, ctx, included, hidden)
        else:
            source = args.get("file") or args.get("_raw_params")
            if source is None:
                # Ansible's DataLoader.path_dwim_relative_stack: a warning, then
                # AnsibleFileNotFound without a name or a search path.
                return {"failed": True, "changed": False, "ansible_facts": {},
                        "ansible_included_var_files": included,
                        "message": "Could not find file on the Ansible Controller.",
                        "warnings": ['Invalid request to find a file that matches a "null" value']}
            entry = ctx.controller_file(str(source).rstrip("\n"))
            data = _vars_file(entry.get("path", source), entry, included, hidden)
    except (ModuleError, _VarsError) as exc:  # Ansible's action puts its reason under "message"
        return {"failed": True, "changed": False, "message": str(exc), "ansible_facts": {},
                "ansible_included_var_files": included}
    if args.get("name"):
        data = {str(args["name"]): data}
    behaviour = args.get("hash_behaviour")
    if behaviour is not None and behaviour != "replace":  # the setting's default
        from ioc.agentless_runner.filters import merge_hash  # combine_vars
        existing = {k: v for k, v in ctx.task_vars.items() if k in data}
        data = merge_hash(existing, data) if behaviour == "merge" else {**existing, **data}
    result = {"ansible_facts": data, "ansible_included_var_files": included,
              "changed": False, "_ioc_include_vars": True}
    if hidden:
        result["_ansible_no_log"] = True
    return result


_DIR_ARGS = ("dir", "depth", "files_matching", "ignore_files", "extensions",
             "ignore_unknown_extensions")


class _VarsError(Exception):
    """A reason ``include_vars`` fails its task (Ansible's ``err_msg``)."""


def _vars_file(path, entry, included, hidden, content=None):
    """The dict of one vars file (``entry``: its shipped entry)."""
    from ioc.agentless_runner.filters import FILTERS  # the YAML reader, PyYAML or not
    content = entry["content"] if content is None else content
    if content.lstrip().startswith(b"$ANSIBLE_VAULT"):  # no vault secrets on the controller
        raise ModuleError("Attempting to decrypt but no vault secrets found")
    try:
        data = FILTERS["from_yaml"](content.decode("utf-8"))
    except Exception as exc:  # malformed YAML: the task fails, naming the file
        raise ModuleError("%s: %s" % (path, exc))
    if entry.get("vaulted"):
        hidden.append(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _VarsError("%r must be stored as a dictionary/hash" % path)
    included.append(path)
    # (what a vars file holds is trusted as a template, in its result too)
    return trust.trusted(data)


def _vars_dir(args, ctx, included, hidden):
    """The merged dicts of a directory's vars files, in ansible-core's order."""
    import os
    import re
    entry = ctx.controller_file(str(args["dir"]))
    root = entry["path"]
    depth = int(args.get("depth") or 0)
    matcher = re.compile(str(args["files_matching"])) if args.get("files_matching") else None
    ignore = args.get("ignore_files") or []
    if isinstance(ignore, str):
        ignore = ignore.split()
    extensions = args.get("extensions", ["yaml", "yml", "json"])
    by_dir = {}
    for item in entry["entries"]:
        if item.get("dir"):
            by_dir.setdefault(os.path.join(root, item["rel"]), [])
            continue
        folder, name = os.path.split(os.path.join(root, item["rel"]))
        by_dir.setdefault(folder, []).append((name, item))
    by_dir.setdefault(root, [])
    data = {}
    for folder in sorted(by_dir):
        level = len(os.path.relpath(folder, root).split(os.sep)) + 1 if folder != root else 1
        if depth and level > depth:
            continue
        for name, item in sorted(by_dir[folder], key=lambda pair: pair[0]):
            if matcher is not None and not matcher.search(name):
                continue
            if any(re.search("%s$" % pattern, name) for pattern in ignore):
                continue
            valid = os.path.splitext(name)[1][1:] in extensions
            if not valid and as_bool(args.get("ignore_unknown_extensions")):
                continue
            path = os.path.join(folder, name)
            if not valid:
                raise _VarsError("%r does not have a valid extension: %s"
                                 % (path, ", ".join(extensions)))
            data.update(_vars_file(path, item, included, hidden))
    return data


def _include(action, args):
    """The include step itself; the included tasks follow it in the same tree (L7.8)."""
    # ansible-core 2.21 reports only ``changed``. A dynamic include also
    # tells the controller its templated name and arguments (internal keys,
    # never shown): the controller loads the file or role from them.
    if action == "include_role":
        name = args.get("name")
    else:
        name = args.get("file", args.get("_raw_params"))
    return {"changed": False, "_ioc_included": args.get("_ioc_included", name),
            "_ioc_include_args": _include_args(args)}


#: Names Jinja gives a meaning of their own (ansible-core's ``JINJA_KEYWORDS``).
_JINJA_KEYWORDS = frozenset({"true", "false", "none", "True", "False", "None", "not"})


def _validate_variable_name(name):
    """Raise Ansible's error for a name no variable can have (``validate_variable_name``)."""
    if isinstance(name, str) and name.isidentifier() and name.isascii() \
            and name not in _JINJA_KEYWORDS:
        return
    if isinstance(name, (str, int, float, bool, type(None))):
        described = "name %r" % (str(name),)
    else:
        described = "name"
    if not isinstance(name, str):
        described += " of type %r" % (type(name).__name__,)
    raise TaskError("Invalid variable %s." % described, help_text=(
        "Variable names must be strings starting with a letter or underscore character, "
        "and contain only letters, numbers and underscores."))


def _include_args(args):
    """The templated arguments the controller loads a dynamic include from."""
    return {k: v for k, v in args.items() if not k.startswith("_ioc_")}


def _set_fact(args, templar=None):
    """``set_fact``: its keys are templated too, as Ansible's action templates
    them, and each must be a variable name (``validate_variable_name``)."""
    given = dict(args)
    cacheable = given.pop("cacheable", False)
    facts = {}
    for key, value in given.items():
        name = templar.template(key) if templar is not None and isinstance(key, str) \
            and "{" in key else key
        try:
            _validate_variable_name(name)
        except TaskError as exc:
            exc.expression = key  # (the controller names where the key was written)
            return _task_error(exc)
        facts[name] = value
    result = {"ansible_facts": facts, "changed": False}
    if cacheable not in (False, None) and str(cacheable).lower() not in ("false", "no", "0", ""):
        result["_ioc_cacheable"] = True  # also a fact: ansible_facts.<name>, later plays
    return result
