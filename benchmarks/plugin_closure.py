"""Bytes of a module closure as mitogen would send it: the numbers of docs/architecture.md
("Filters, tests and lookups on the target").

    python3.13 -m benchmarks.plugin_closure ansible.plugins.filter.core ansible.template ...
"""
import sys, zlib, time
import mitogen.master
f = mitogen.master.ModuleFinder()
def closure(names):
    seen=set()
    for n in names:
        seen.add(n)
        seen |= set(f.find_related(n))
    return seen
def size(names):
    raw=comp=0; missing=[]
    for n in sorted(names):
        try:
            path, src, pkg = f.get_module_source(n)
        except Exception as e:
            missing.append(n); continue
        if src is None: missing.append(n); continue
        raw += len(src); comp += len(zlib.compress(src, 9))
    return raw, comp, missing
for group in [sys.argv[1:]]:
    t=time.time()
    c = closure(group)
    ours = [n for n in c if n.split('.')[0] in ('ansible','jinja2','markupsafe','yaml','ioc')]
    raw, comp, missing = size(ours)
    byroot={}
    for n in ours: byroot[n.split('.')[0]]=byroot.get(n.split('.')[0],0)+1
    print(group, len(ours), byroot, raw, comp, 'missing', len(missing), round(time.time()-t,1))
