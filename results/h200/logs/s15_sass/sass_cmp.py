import re, sys, hashlib
def load(f):
    t = open(f).read()
    out = {}
    for sec in re.split(r'\n(?=\s*\.section\s+\.text\.)', t):
        head = sec.strip().split('\n')[0]
        if '.text.' not in head: continue
        name = head.split('.text.')[1].split(',')[0]
        name = re.sub(r'_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+', 'ANON', name)
        sec = re.split(r'\n//-+ \.(?!text)', sec)[0]
        sec = '\n'.join(l for l in sec.split('\n') if not l.startswith('//-'))
        body = re.sub(r'_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+', 'ANON', sec)
        body = re.sub(r'\.L_x_\d+', '.L', body)
        body = re.sub(r'/\*[0-9a-f]{4,}\*/', '', body)
        body = re.sub(r'\$__internal_\d+_\$', '$int$', body)
        out[name] = hashlib.sha1(body.encode()).hexdigest()
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
same = [k for k in a if k in b and a[k] == b[k]]
diff = [k for k in a if k in b and a[k] != b[k]]
print('before', len(a), 'after', len(b), 'identical', len(same), 'different', len(diff))
for k in diff: print('  DIFF', k[:150])
for k in b:
    if k not in a: print('  NEW', k[:150])
for k in a:
    if k not in b: print('  GONE', k[:150])
