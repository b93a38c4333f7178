# Tables of tools/device_ab_pending.sh's archive: python3 tools/ab_pending_table.py DIR (the
# prologue's vs_cublas_quant and median ms per variant and round; the reduce core's copy ratio per
# AGOQ_RED_LD; our GEMM's vs_cublas per AGOQ_WG_CLUSTER run and per AGOQ_WG_STREAMK run).
import glob
import json
import math
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels_vs_torch import intercept  # noqa: E402
D=sys.argv[1]


def summary(table, base, variants, higher=True):
    """Per variant against base over the points both have: the geometric mean of the ratio of
    their round means (> 1: the variant is better) and the points where every round of the
    variant beats every round of base."""
    for v in variants:
        logs, wins, n = [], 0, 0
        for k, row in table.items():
            b, x = row.get(base), row.get(v)
            if not b or not x:
                continue
            n += 1
            mb, mx = sum(b) / len(b), sum(x) / len(x)
            logs.append(math.log(mx / mb if higher else mb / mx))
            wins += (min(x) > max(b)) if higher else (max(x) < min(b))
        if n:
            print('  %s vs %s: geomean %.3f over %d points, better in every round at %d' %
                  (v, base, math.exp(sum(logs) / n), n, wins))
# prologue
rows={}
for f in sorted(glob.glob(D+'/deq_*_r*.json')):
    v,r=os.path.basename(f)[4:-5].rsplit('_',1)
    for rec in json.load(open(f))['records']:
        if 'vs_cublas_quant' in rec:
            key=(rec['case'],rec['bytes']>>20)
            rows.setdefault(key,{}).setdefault(v,[]).append((rec['vs_cublas_quant'],rec['median_ms']))
# the sixteenth session's H100 run had def = table and arith; later runs def = arith and table
vs=[v for v in ['def','table','ah','arith','bufs','bufso'] if any(v in r for r in rows.values())]
print('prologue vs_cublas_quant (ms) per round')
print('case MiB | '+' | '.join(vs))
for k in sorted(rows):
    print(k[0],k[1],'|',' | '.join(' '.join('%.3f(%.3f)'%x for x in rows[k].get(v,[])) for v in vs))
summary({k: {v: [x[0] for x in r] for v, r in row.items()} for k, row in rows.items()}, 'def', vs[1:])
# reduce
red={}
for f in sorted(glob.glob(D+'/ld*_r*.json')):
    v,r=os.path.basename(f)[2:-5].split('_')
    for rec in json.load(open(f))['records']:
        if rec.get('case')=='grad_reduce':
            red.setdefault((rec['format'],rec['bytes']>>20),{}).setdefault(v,[]).append(rec['copy_ratio'])
print('reduce copy ratio per round')
for k in sorted(red):
    print(k[0],k[1],'|',' | '.join('ld%s '%v+' '.join('%.3f'%x for x in red[k][v]) for v in sorted(red[k])))
summary(red, '0', ['1', '2'])
# clusters: cl{1,2,2b,1b}.json (plain GEMMs, vs_cublas), clepi{1,2all,2allb,1b}.json (residual and
# fused forward GEMMs: vs_cublas, or vs_cublas_quant for the fused copies)
def cluster_table(prefix, runs, title):
    cl = {}
    for v in runs:
        f = '%s/%s%s.json' % (D, prefix, v)
        if not os.path.exists(f):
            continue
        for rec in json.load(open(f))['records']:
            r = rec.get('vs_cublas_quant', rec.get('vs_cublas'))
            if r is not None:
                cl.setdefault((rec['case'], rec['bytes'] >> 20), {})[v] = r
            if 'vs_own_quant' in rec:  # the fused copy against our GEMM + the standalone quantizer
                cl.setdefault((rec['case'] + ' own', rec['bytes'] >> 20), {})[v] = rec['vs_own_quant']
    print(title)
    for k in sorted(cl):
        print(k[0], k[1], '|', ' '.join('%.3f' % cl[k][v] if v in cl[k] else '-' for v in runs))
    # a run named X and a repeat named Xb are the two rounds of arm X; the first run's arm is the base
    arm = lambda v: v[:-1] if v.endswith('b') and v[:-1] in runs else v
    arms = list(dict.fromkeys(arm(v) for v in runs))
    rounds = {k: {a: [row[v] for v in runs if arm(v) == a and v in row] for a in arms}
              for k, row in cl.items() if not k[0].endswith(' own')}
    summary(rounds, arms[0], arms[1:])
cluster_table('cl', ['1', '2', '2b', '1b'], 'GEMM vs_cublas per AGOQ_WG_CLUSTER run (1, 2, 2, 1)')
cluster_table('clepi', ['1', '2all', '2allb', '1b'], 'GEMM vs_cublas(_quant) per AGOQ_WG_CLUSTER run (1, 2all, 2all, 1)')
# sk: the seventeenth session's runs 0, 1, 1, 0 (then =1 split everywhere); from the eighteenth 0, all, 1, 1, all, 0
sk = ['0', 'all', '1', '1b', 'allb', '0b'] if os.path.exists(D + '/skall.json') else ['0', '1', '1b', '0b']
cluster_table('sk', sk, 'GEMM vs_cublas(_quant) per AGOQ_WG_STREAMK run (%s)' % ', '.join(sk))
cluster_table('half', ['0', '1', '1b', '0b'], 'GEMM vs_cublas(_quant) per AGOQ_WG_FAST_EPI run (0, 1, 1, 0)')
# skws: step_llama2_7b.json with AGOQ_WG_STREAMK=1 and =0: step time and device memory per point
if os.path.exists(D + '/step7b_sk1.json') and os.path.exists(D + '/step7b_sk0.json'):
    on, off = (json.load(open('%s/step7b_sk%d.json' % (D, v)))['records'] for v in (1, 0))
    logs = [math.log(a['step_ms'] / b['step_ms']) for a, b in zip(on, off)]
    print('step_llama2_7b =1 / =0: step time geomean %.4f over %d points' % (math.exp(sum(logs) / len(logs)), len(logs)))
    print('  cuda_used_bytes =1 - =0 (MiB) per point:',
          ' '.join('%.0f' % ((a['cuda_used_bytes'] - b['cuda_used_bytes']) / 2**20) for a, b in zip(on, off)))
# rkeep: keep<v>[b][_c<cols>].json, the RMSNorm backward's copy ratio per AGOQ_RMS_KEEP value v
# (nineteenth session 0, 1, 1b, 0b; since the twentieth 0, 2, 2b, 0b at 4096 and 8192 columns)
kp = {}
for f in sorted(glob.glob(D + '/keep*.json')):
    m = re.match(r'keep(\d)b?(?:_c(\d+))?\.json$', os.path.basename(f))
    if m:
        for rec in json.load(open(f))['records']:
            key = (rec['case'], rec.get('format', ''), m.group(2) or '4096', rec['bytes'] >> 20)
            kp.setdefault(key, {}).setdefault(m.group(1), []).append(rec['copy_ratio'])
if kp:
    print('RMSNorm backward copy ratio per AGOQ_RMS_KEEP value (case, format, columns, MiB)')
    for k in sorted(kp):
        print(*k, '|', ' | '.join('%s: %s' % (v, ' '.join('%.3f' % x for x in kp[k][v])) for v in sorted(kp[k])))
    summary(kp, '0', sorted({v for row in kp.values() for v in row} - {'0'}))
# rpg: step7b_rpg{64,0,0b,64b}.json, the step's norm_bwd time and step time per AGOQ_RMS_RPG run
rp = {}
for v in ['64', '0', '0b', '64b']:
    f = '%s/step7b_rpg%s.json' % (D, v)
    if os.path.exists(f):
        for rec in json.load(open(f))['records']:
            row = rp.setdefault((rec['name'], rec['seq']), {})
            row.setdefault('norm_bwd ' + v.rstrip('b'), []).append(rec['op_ms']['norm_bwd'])
            row.setdefault('step ' + v.rstrip('b'), []).append(rec['step_ms'])
if rp:
    print('step_llama2_7b norm_bwd ms (all calls) and step ms per AGOQ_RMS_RPG run (64, unset, unset, 64)')
    for k in sorted(rp):
        print(*k, '|', ' | '.join('%s: %s' % (v, ' '.join('%.3f' % x for x in rp[k][v])) for v in sorted(rp[k])))
    for what in ('norm_bwd', 'step'):
        sub = {k: {'64': r[what + ' 64'], '0': r[what + ' 0']} for k, r in rp.items() if what + ' 64' in r and what + ' 0' in r}
        print(' ', what, end='')
        summary(sub, '64', ['0'], higher=False)
# adamw (a5084ea's part, removed after its run, results/h100/logs/s20_a5084ea/): adamw<LUT><GRID>[b].json,
# the step's optimizer time (op_ms) per AGOQ_ADAMW_LUT / _GRID
aw = {}
for f in sorted(glob.glob(D + '/adamw[01][01]*.json')):
    v = os.path.basename(f)[5:7]
    for rec in json.load(open(f))['records']:
        aw.setdefault((rec['name'], rec['seq']), {}).setdefault(v, []).append(rec['op_ms']['optimizer'])
if aw:
    print('optimizer ms per AGOQ_ADAMW_LUT, AGOQ_ADAMW_GRID (00 = before, 11 = default), two rounds')
    for k in sorted(aw):
        print(*k, '|', ' | '.join('%s: %s' % (v, ' '.join('%.3f' % x for x in aw[k][v])) for v in sorted(aw[k])))
    summary(aw, '00', ['10', '01', '11'], higher=False)
# stage: stage{new,old,oldb,newb}.json (the batched table staging against the binaries before it):
# median ms per run, per (case, format, MiB), and per (case, format) the fixed cost a call: the
# intercept of a least-squares line through (elements, ms) from 64 MiB
st = {}
for v in ['new', 'mid', 'old', 'oldb', 'midb', 'newb']:
    f = '%s/stage%s.json' % (D, v)
    if os.path.exists(f):
        for rec in json.load(open(f))['records']:
            if rec.get('case') != 'copy_d2d':
                key = (rec['case'], rec.get('format', ''), rec['bytes'] >> 20)
                st.setdefault(key, {}).setdefault(v.rstrip('b'), []).append((rec['n'], rec['median_ms']))
if st:
    print('median ms per run (new [mid] old old [mid] new) per case, format, MiB')
    for k in sorted(st):
        print(*k, '|', ' | '.join('%s: %s' % (v, ' '.join('%.4f' % x[1] for x in st[k][v])) for v in sorted(st[k])))
    for v in [v for v in ['old', 'mid', 'new'] if any(v in row for row in st.values())]:
        fits = {}
        for k, row in st.items():
            if k[2] >= 64 and v in row:
                fits.setdefault(k[:2], []).extend(row[v])
        print('fixed cost a call (us), %s:' % v,
              ', '.join('%s %s %.1f' % (c, f, 1e3 * intercept(pts)[0]) for (c, f), pts in sorted(fits.items()) if len(pts) >= 4))
    runs = {v for row in st.values() for v in row}
    summary({k: {v: [x[1] for x in r] for v, r in row.items()} for k, row in st.items()}, 'old',
            [v for v in ['mid', 'new'] if v in runs], higher=False)
    if 'mid' in runs:
        summary({k: {v: [x[1] for x in r] for v, r in row.items()} for k, row in st.items()}, 'mid', ['new'], higher=False)


def step_table(pattern, vs, title):
    """grad_store ms and step ms per (policy, seq) of experiments/step_llama2_7b.json runs."""
    rows = {}
    for v in vs:
        f = pattern % (D, v)
        if os.path.exists(f):
            for rec in json.load(open(f))['records']:
                rows.setdefault((rec['name'], rec['seq']), {})[v] = (rec['op_ms']['grad_store'], rec['step_ms'])
    if rows:
        print(title)
        for k in sorted(rows):
            print(*k, '|', ' | '.join('%s: %.3f %.2f' % (v, *rows[k][v]) for v in sorted(rows[k])))


step_table('%s/stagestep_%s.json', ['new', 'old'], 'step_llama2_7b grad_store ms and step ms, new | old')
# lut32: lq{new,old,oldb,newb}.json (the quantizers against the previous binaries) and
# lg{0,1,1b,0b}.json (AGOQ_G8_LUT32): copy ratio per run, per (case, format, MiB)
# vrep: lv{16,32,32b,16b}.json (AGOQ_G8_VREP); vdec: vd{1,0,2,2b,0b,1b}.json (AGOQ_G8_VDEC)
for prefix, vs, base in [('lq', ['new', 'old', 'oldb', 'newb'], 'old'), ('lg', ['0', '1', '1b', '0b'], '0'),
                         ('lv', ['16', '32', '32b', '16b'], '16'), ('vs', ['new', 'old', 'oldb', 'newb'], 'old'),
                         ('vd', ['1', '0', '2', '2b', '0b', '1b'], '0')]:
    t = {}
    for v in vs:
        f = '%s/%s%s.json' % (D, prefix, v)
        if os.path.exists(f):
            for rec in json.load(open(f))['records']:
                if rec.get('case') != 'copy_d2d':
                    key = (rec['case'], rec.get('format', ''), rec['bytes'] >> 20)
                    t.setdefault(key, {}).setdefault(v.rstrip('b'), []).append(rec['copy_ratio'])
    if t:
        print('%s: copy ratio per run (%s) per case, format, MiB' % (prefix, ' / '.join(vs)))
        for k in sorted(t):
            print(*k, '|', ' | '.join('%s: %s' % (v, ' '.join('%.3f' % x for x in t[k][v])) for v in sorted(t[k])))
        summary(t, base, [v for v in sorted({v for row in t.values() for v in row}) if v != base])
step_table('%s/lutstep_%s.json', ['0', '1'], 'step_llama2_7b grad_store ms and step ms, AGOQ_G8_LUT32 0 | 1')
