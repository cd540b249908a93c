import sys, collections
sys.path.insert(0,'/work/main/docs/results/bench/insert-grid-58023ac/scripts')
from stacks import load
stacks,user=load(sys.argv[1])
# inclusive share of markers across all samples (any thread)
marks=sys.argv[2:]
n=len(stacks)
for m in marks:
    k=sum(1 for s in stacks if any(m in f for f in s))
    print(f"{100*k/n:5.1f}% {m}")
