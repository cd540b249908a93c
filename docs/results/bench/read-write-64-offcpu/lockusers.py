import sys, collections
sys.path.insert(0,'/work/main/docs/results/bench/insert-grid-58023ac/scripts')
from stacks import load
stacks,user=load(sys.argv[1])
n=len(stacks); c=collections.Counter(); tot=0
for s in stacks:
    idx=[i for i,f in enumerate(s) if f.startswith('parking_lot') or f.startswith('<parking_lot') or f.startswith('lock_api') or f.startswith('<lock_api')]
    if not idx: continue
    tot+=1
    j=max(idx)+1
    while j<len(s) and (s[j].startswith('core::') or s[j].startswith('<core') or s[j].startswith('std::')): j+=1
    c[' <- '.join(x[:80] for x in s[j:j+2])]+=1
print(f"parking_lot inclusive {100*tot/n:.1f}%")
for k,v in c.most_common(20): print(f"{100*v/n:5.1f}% {k}")
