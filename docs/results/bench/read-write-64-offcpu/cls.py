import sys, collections, re
sys.path.insert(0,'/work/main/docs/results/bench/insert-grid-58023ac/scripts')
from stacks import load
stacks,_=load(sys.argv[1])
skip=re.compile(r'^(parking_lot|lock_api|core::|std::|alloc::|<parking_lot|<lock_api|<core|<std|<alloc|syscall|__|futex|recv|send|read$|write$|pthread|epoll|\[unknown\]|_raw|do_|entry_|schedule|exit_to|x64|ksys|fsync|fdatasync|vfs|ext4|jbd2|<&|<fractaldb::tree::poison|fractaldb::tree::poison|tikv|_rjem|je_|libc)')
c=collections.Counter(); c2=collections.Counter(); n=0
for s in stacks:
    n+=1
    kind='?'
    for f in s:
        if 'park' in f or 'futex' in f: kind='park'; break
        if 'recv' in f or 'tcp_recvmsg' in f or 'sock_read' in f: kind='sock-recv'; break
        if 'sendto' in f or 'tcp_sendmsg' in f: kind='sock-send'; break
        if 'fdatasync' in f or 'fsync' in f: kind='fsync'; break
        if 'sched_yield' in f or 'yield_now' in f: kind='yield'; break
        if 'exit_to_user_mode' in f: kind='preempt'; break
    frames=[f for f in s if not skip.match(f) and 'kallsyms' not in f]
    top=' <- '.join(x[:70] for x in frames[:int(sys.argv[2]) if len(sys.argv)>2 else 2])
    c[kind]+=1; c2[(kind,top)]+=1
print(n)
for k,v in c.most_common(): print(f"{100*v/n:5.1f}% {k}")
for (k,t),v in c2.most_common(45): print(f"{100*v/n:5.1f}% {k:9} {t}")
