# Samples /proc/PID/io (read syscalls, bytes read from disk) of the bench child every second:
# python3 iosample.py io.txt, while `fractaldb bench insert point-get` runs. Lines: unix time, syscr, read_bytes.
import os, time, sys
out=open(sys.argv[1],'w')
t0=time.time()
while True:
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            cmd=open(f'/proc/{p}/cmdline','rb').read()
            if b'bench-child' not in cmd: continue
            io=dict(l.split(': ') for l in open(f'/proc/{p}/io').read().split('\n') if l)
            out.write(f"{time.time():.2f} {io['syscr']} {io['read_bytes']}\n"); out.flush()
        except Exception: pass
    time.sleep(1)
