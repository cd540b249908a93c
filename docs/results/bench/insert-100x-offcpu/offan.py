import sys, collections, re
path=sys.argv[1]; depth=int(sys.argv[2]) if len(sys.argv)>2 else 4
samples=[]; cur=None
for line in open(path):
    if not line.startswith('\t') and line.strip():
        p=line.split()
        cur={'comm':p[0],'tid':p[1],'t':float(p[2].rstrip(':')),'f':[]}; samples.append(cur); continue
    if cur is not None and line.strip():
        parts=line.strip().split(' ',1)
        if len(parts)==2: cur['f'].append(parts[1].replace(' (inlined)',''))
skip=re.compile(r'^(__schedule|schedule|__x64|do_syscall|entry_SYSCALL|__GI|std::|core::|parking_lot|lock_api|<parking_lot|<lock_api|<core|<std|alloc::|<alloc|syscall|futex|__futex|do_futex|__x64_sys|schedule_timeout|io_schedule|\[unknown\]|fractaldb::tree::poison|<fractaldb::tree::poison|x64_sys|__do_sys|do_sched_yield|__sched_yield|exit_to_user|irqentry|asm_|__cond_resched|preempt_schedule|_raw)')
by_tid=collections.Counter(s['tid'] for s in samples)
print('switches by tid:', by_tid.most_common(10))
for tid,n in by_tid.most_common(6):
    c=collections.Counter()
    for s in samples:
        if s['tid']!=tid: continue
        kind='other'
        fs=' '.join(s['f'][:12])
        if 'sched_yield' in fs: kind='yield(spin)'
        elif 'futex' in fs: kind='futex'
        elif 'fdatasync' in fs or 'fsync' in fs or 'jbd2' in fs: kind='fsync'
        elif 'io_schedule' in fs or 'blkdev' in fs or 'iomap_dio' in fs or 'rw_verify' in fs or 'pread' in fs or 'pwrite' in fs: kind='io'
        elif 'exit_to_user' in fs or 'irqentry' in fs or 'preempt' in fs: kind='preempt'
        top=[f for f in s['f'] if not skip.match(f)][:depth]
        c[(kind,' <- '.join(x[:60] for x in top))]+=1
    print(f'\n== tid {tid}: {n} switches')
    for (k,t),v in c.most_common(12): print(f'{v:6d} {100*v/n:5.1f}% {k:12} {t}')
