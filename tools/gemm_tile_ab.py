#!/usr/bin/env python3
"""A/B table of the Hopper GEMM's tile width (AGOQ_WG_TILE_N) from agoq run experiments/gemm_wg.json
outputs named gemm_wg_r{ROUND}_tn{VALUE}.json in one folder (VALUE 256, 192, auto; rounds 1 and 2):
vs_cublas of every plain point per value and round, each value's summary, and the points where 192
beats 256 in both rounds by more than 0.02. The twelfth session's run: results/h200/logs/
s12_callE_9b97292/ (unpack gemm_wg_ab_json.tgz there first).

usage: python3 tools/gemm_tile_ab.py DIR
"""
import json,sys,glob,os,statistics as st
d=sys.argv[1]
runs={}
for f in glob.glob(os.path.join(d,"gemm_wg_r*_tn*.json")):
    b=os.path.basename(f)[:-5]; r=int(b.split("_")[2][1:]); v=b.split("_tn")[1]
    recs=json.load(open(f))['records']
    runs[(r,v)]={(x['case'],x.get('n',x.get('bytes'))):x for x in recs if x.get('vs_cublas') is not None}
vals=sorted({v for _,v in runs}, key=lambda v: {"256":0,"192":1,"auto":2}[v])
keys=sorted(runs[(1,"256")].keys())
print("case\ttokens\t"+"\t".join(f"{v} r1\t{v} r2" for v in vals))
summ={v:[] for v in vals}
for k in keys:
    row=[]
    for v in vals:
        for r in (1,2):
            x=runs.get((r,v),{}).get(k); row.append("%.3f"%x['vs_cublas'] if x else "-")
            if x: summ[v].append((k,r,x['vs_cublas']))
    print(k[0]+"\t"+str(k[1])+"\t"+"\t".join(row))
for v in vals:
    s=[x for _,_,x in summ[v]]
    print(v, "n=%d min %.2f median %.3f max %.2f  <0.90: %d"%(len(s),min(s),st.median(s),max(s),sum(x<0.9 for x in s)/2))
# per point: 192 vs 256 mean of rounds
print("points where 192 beats 256 in both rounds by >0.02:")
for k in keys:
    a=[runs[(r,"256")][k]['vs_cublas'] for r in (1,2)]; b=[runs[(r,"192")][k]['vs_cublas'] for r in (1,2)]
    if all(bb>aa+0.02 for aa,bb in zip(a,b)): print("  ",k, ["%.3f"%x for x in a], ["%.3f"%x for x in b])
