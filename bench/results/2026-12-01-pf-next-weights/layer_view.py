# One decoder layer of a decode-step timeline CSV (AGENTCOMPILE_TIMELINE): per launch, when its blocks
# started, when its first wait was released and when its blocks ended, from the first launch's first start.
#   python3 layer_view.py timeline.csv FIRST_LAUNCH_INDEX   (Qwen3-1.7B plan timeline: 51)
import gzip, csv, sys, collections
rows=list(csv.DictReader(gzip.open(sys.argv[1],'rt')))
L=[]
for r in rows:
    if not L or L[-1][0]!=r['kernel']: L.append((r['kernel'],[]))
    L[-1][1].append(r)
k0=int(sys.argv[2])
t0=None
for k,bl in L[k0:k0+6]:
    s=sorted(int(r['start_ns']) for r in bl); e=sorted(int(r['end_ns']) for r in bl)
    w=sorted(int(r['wait_ns']) for r in bl if int(r['wait_ns'])>=0)
    if t0 is None: t0=s[0]
    q=lambda a,p: (a[min(len(a)-1,int(p*len(a)))]-t0)/1000 if a else -1
    name=k.split('__')[0]+'/'+k.split('__')[3] + ('/'+k.split('__')[-2] if 'epi' in k else '')
    print(f"{name:32s} n={len(bl):5d} start p0 {q(s,0):6.2f} p50 {q(s,.5):6.2f} p90 {q(s,.9):6.2f} max {q(s,.999):6.2f} | wait p0 {q(w,0):6.2f} p50 {q(w,.5):6.2f} | end p0 {q(e,0):6.2f} p50 {q(e,.5):6.2f} max {q(e,.999):6.2f}")
