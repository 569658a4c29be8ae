"""How much of Ansible travels with validate_argument_spec: the ansible.* modules of its
import closure as mitogen finds it, their source and zlib-compressed size (what the
controller forwards once per host per run; docs/mitogen_batch.md).

    python -m benchmarks.validator_closure
"""
import zlib, importlib, sys
import ansible.release, mitogen.master
finder = mitogen.master.ModuleFinder()
name = "ioc.agentless_runner.modules.validate_argument_spec"
importlib.import_module(name)
related = [n for n in finder.find_related(name) if n.startswith("ansible")]
raw = z = 0
for n in related:
    src = finder.get_module_source(n)[1]
    raw += len(src); z += len(zlib.compress(src, 9))
print("ansible-core %s: %d modules, %d KiB source, %d KiB zlib-compressed"
      % (ansible.release.__version__, len(related), raw // 1024, z // 1024))
