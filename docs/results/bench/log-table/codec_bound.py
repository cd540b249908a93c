"""What block codecs reach on the log table's rows (docs/benchmarks-sql.md,
"the log table's bound"): 50,000 rows of logtable.rs's distributions laid
out as fractaldb rows (key, header, length-prefixed fields), cut into
blocks as basements are, compressed by zstd at several levels, xz, zstd
with a trained dictionary, and with the fields stored column by column.
Prints bytes per row. Needs `pip install zstandard`.
"""
import random, zstandard, lzma, struct
random.seed(7)
AG=["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/58.0.3029.110 Safari/537.36",
"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_12_5) AppleWebKit/603.2.4 (KHTML, like Gecko) Version/10.1.1 Safari/603.2.4",
"Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:54.0) Gecko/20100101 Firefox/54.0",
"Mozilla/5.0 (iPhone; CPU iPhone OS 10_3_2 like Mac OS X) AppleWebKit/603.2.4 (KHTML, like Gecko) Version/10.0 Mobile/14F89 Safari/602.1",
"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)","curl/7.52.1","python-requests/2.18.1",
"Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko"]
P=["/","/index.html","/api/v1/orders","/api/v1/users","/api/v1/items","/search","/static/js/app.js","/static/css/site.css","/img/logo.png","/checkout","/cart","/login","/logout","/product"]
W="user session cache miss hit upstream timeout retry order payment token expired queued worker db query slow ok redirect auth failed served".split()
R=["-","https://www.google.com/","https://www.bing.com/","https://news.ycombinator.com/","https://example.com/","https://t.co/x1y2z3"]
def pick(items,w): return random.choices(items,w)[0]
ts=1496275200000
def row(i):
    global ts
    ts+=random.randint(0,40)
    host="web%02d.dc%d.example.com"%(random.randint(1,24),random.randint(1,3))
    m=pick(["GET","POST","PUT","DELETE"],[80,15,3,2])
    p=random.choice(P)
    if p.startswith("/api") or p=="/product": p+="/%d"%random.randint(1,500000)
    if random.random()<0.3: p+="?q=%s&page=%d"%(random.choice(W),random.randint(1,20))
    st=int(pick(["200","301","304","404","500","503"],[80,4,8,5,2,1]))
    nb=random.randint(200,90000); ref=random.choice(R); ag=random.choice(AG)
    ip="%d.%d.%d.%d"%(random.randint(1,223),random.randint(0,255),random.randint(0,255),random.randint(1,254))
    lvl=pick(["INFO","WARN","ERROR","DEBUG"],[70,15,5,10])
    words=" ".join(random.choice(W) for _ in range(random.randint(3,12)))
    msg="2017-06-01T00:00:%02d.%03dZ %s [%s] req=%016x %s %s -> %d in %dms: %s"%((ts//1000)%60,ts%1000,lvl,host.split('.')[0],random.getrandbits(64),m,p,st,random.randint(1,3000),words)
    key=struct.pack(">I",i)
    rec=struct.pack("<qii",ts,st,nb)
    for s in (host,m,p,ref,ag,ip,msg):
        b=s.encode(); rec+=struct.pack("<H",len(b))+b
    return key+struct.pack("<BQ",1,i)+struct.pack("<I",len(rec))+rec
N=50000
rows=[row(i) for i in range(N)]
raw=sum(len(r) for r in rows); print("raw B/row",raw/N)
def blocks(sz):
    out=[];cur=b""
    for r in rows:
        if len(cur)+len(r)>sz and cur: out.append(cur);cur=b""
        cur+=r
    out.append(cur); return out
for sz in (16384,32768,65536,131072):
    bl=blocks(sz)
    res=[]
    for lvl in (1,3,6,9,19):
        c=zstandard.ZstdCompressor(level=lvl)
        res.append((lvl,sum(len(c.compress(b)) for b in bl)/N))
    xz=sum(len(lzma.compress(b,preset=2)) for b in bl)/N
    d=zstandard.train_dictionary(65536,bl[:200] if len(bl)>200 else bl)
    cd=zstandard.ZstdCompressor(level=3,dict_data=d)
    dd=sum(len(cd.compress(b)) for b in bl)/N
    print(sz, " ".join("z%d=%.1f"%r for r in res), "xz2=%.1f"%xz, "zdict3=%.1f"%dd)
print("fields stored in columns (zstd level, bytes a row)")
# build pax blocks directly
def paxblocks(sz):
    out=[];cur=[];n=0
    for r in rows:
        if n+len(r)>sz and cur: out.append(cur);cur=[];n=0
        cur.append(r);n+=len(r)
    out.append(cur)
    res=[]
    for rs in out:
        cols={}
        for r in rs:
            key=r[:13]; rest=r[17:]
            fields=[key, rest[:16]]
            pos=16
            for k in range(7):
                l=struct.unpack("<H",rest[pos:pos+2])[0]; fields.append(rest[pos:pos+2+l]); pos+=2+l
            for k,f in enumerate(fields): cols.setdefault(k,[]).append(f)
        res.append(b"".join(b"".join(v) for v in cols.values()))
    return res
for sz in (16384,65536):
    bl=paxblocks(sz)
    for lvl in (1,3,9,19):
        c=zstandard.ZstdCompressor(level=lvl)
        print(sz,lvl,"%.1f"%(sum(len(c.compress(b)) for b in bl)/N))
