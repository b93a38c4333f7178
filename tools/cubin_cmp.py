# Compares each kernel's code (.text), parameter constants (.nv.constant0) and the sizes of its
# shared memory and attributes (.nv.shared, .nv.info) between two cubins (nvcc -cubin, sm_90a,
# the Makefile's device flags):
#   python3 tools/cubin_cmp.py [--code] [--rename REGEX=REPL] BEFORE.cubin AFTER.cubin
# (no disassembler needed: identical bytes, identical SASS). Exit 1 if a kernel differs or is new.
# --code: compare the code (.text) and shared size only, not the parameter constants (a
# parameter struct that grew at its end changes every kernel's .nv.constant0 size, not its code);
# --rename: applied to AFTER's kernel names before matching (a template argument appended with
# its default: --rename 'ELb0EEEv=EEEv').
import re, sys, struct
args = sys.argv[1:]
code_only = '--code' in args
renames = [args[i + 1].split('=', 1) for i, a in enumerate(args) if a == '--rename']
paths = [a for i, a in enumerate(args) if not a.startswith('--') and (i == 0 or args[i - 1] != '--rename')]
def sections(path):
    b = open(path, 'rb').read()
    shoff = struct.unpack_from('<Q', b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', b, 0x3A)
    hdrs = [struct.unpack_from('<IIQQQQIIQQ', b, shoff + i * shentsize) for i in range(shnum)]
    stro = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = b[stro + h[0]: b.index(b'\0', stro + h[0])].decode()
        for pre in ('.text.', '.nv.info.', '.nv.shared.', '.nv.constant0.'):
            if name.startswith(pre):  # a kernel's code, attributes, shared and parameter sizes
                k = name[len(pre):]
                # NOBITS (shared): the size alone; .nv.info: its size (its attributes name other
                # symbols by index, which shift when kernels come or go)
                data = b[h[4]: h[4] + h[5]] if h[1] != 8 and pre != '.nv.info.' else b''
                out.setdefault(k, {})[pre] = (h[5], data)
    if code_only:
        out = {k: {p: v[p] for p in v if p in ('.text.', '.nv.shared.')} for k, v in out.items()}
    return {k: v for k, v in out.items() if '.text.' in v}
def renamed(d):
    for pat, rep in renames:
        d = {re.sub(pat, rep, k): v for k, v in d.items()}
    return d
a, b = sections(paths[0]), renamed(sections(paths[1]))
same = [k for k in a if k in b and a[k] == b[k]]
diff = [k for k in a if k in b and a[k] != b[k]]
gone = [k for k in a if k not in b]
new = [k for k in b if k not in a]
print('kernels before %d, after %d: identical %d, differ %d, gone %d, new %d' % (len(a), len(b), len(same), len(diff), len(gone), len(new)))
for k in diff: print('differ', k)
for k in gone: print('gone', k)
for k in new: print('new', k)
sys.exit(1 if diff or new else 0)
