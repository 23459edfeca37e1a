#!/usr/bin/env python3
"""Self instructions per request of a callgrind dump, grouped by area (docs/performance.md).

    scripts/callgrind_stages.py CALLGRIND_OUT REQUESTS [TOP]

Each function goes to the first area whose pattern matches its object, file or demangled name; with TOP, the
TOP costliest functions of each area are listed too. Also prints the inclusive cost of llhttp_execute by caller.
"""
import sys, re, collections, subprocess
path, req = sys.argv[1], int(sys.argv[2])
names={}; files={}; objs={}
selfc=collections.Counter(); fninfo={}
cur=None; curfile=None; curobj=None; skip_next=False
# caller->callee inclusive for llhttp split
callinc=collections.Counter(); pending=None
def idname(table, rest):
    m=re.match(r"\((\d+)\)(?: (.*))?", rest)
    if m:
        if m.group(2): table[m.group(1)]=m.group(2)
        return m.group(1)
    table[rest]=rest; return rest
for line in open(path, errors='replace'):
    line=line.rstrip('\n')
    if skip_next:
        skip_next=False
        p=line.split()
        if len(p)>=2 and pending: callinc[(cur,pending)]+=int(p[1])
        continue
    if line.startswith('ob='): curobj=idname(objs,line[3:]); continue
    if line.startswith('cob='): idname(objs,line[4:]); continue
    if line.startswith('fl='): curfile=idname(files, line[3:]); continue
    if line.startswith(('fi=','fe=')): idname(files,line[3:]); continue
    if line.startswith('fn='):
        cur=idname(names,line[3:]); fninfo.setdefault(cur,(curfile,curobj)); continue
    if line.startswith('cfn='): pending=idname(names,line[4:]); continue
    if line.startswith(('cfi=','cfl=')): idname(files,line[4:]); continue
    if line.startswith('calls='): skip_next=True; continue
    if line and (line[0].isdigit() or line[0] in '+-*') and cur is not None:
        p=line.split()
        if len(p)>=2: selfc[cur]+=int(p[1])
ids=list(selfc)
dem=dict(zip(ids,subprocess.run(['swift','demangle','--simplified'],input="\n".join(names[i] for i in ids),capture_output=True,text=True).stdout.split('\n')))
rules=[
 ("transcode (JSONTranscoder, 4 KB of JSON)", r"JSONTranscoder|TranscodePass|JSONWord|FieldTable|ResourceMapper|JSONValueRenderer|CJSONScan"),
 ("llhttp (both parsers)", r"llhttp"),
 ("authentication (session cache, token digest)", r"Authentication|SessionManager|SessionCache|Session\.swift|Crypto|TokenKey|SessionDigest|SlotIndex|MemorySessionStore|COpenSSL|sha256|SHA256|libcrypto|HMAC"),
 ("request and trace ids", r"RequestID|TraceContext|RequestTrace|getrandom|arc4random"),
 ("upstream request build (CallFields, serialize)", r"CallFields|UpstreamConnection\.serialize|HeadWriter|UpstreamRequest|QueryString"),
 ("upstream client (pool, connection, answer parse)", r"UpstreamHTTPClient|UpstreamConnection|UpstreamResponseParser|LoopTransport|DirectusClient|DirectusItems|UpstreamResponse|UpstreamTransport|CircuitBreaker|DirectusError"),
 ("client side (server: read, parse, write)", r"HTTPConnection|HTTPRequestAssembler|ServerWorker|HeaderBlock|HTTPHeaders|HTTPRequest|HTTPResponse|HeadBytes|HTTPServer|RequestFraming|HTTPMethod"),
 ("gateway pipeline (route, stages, cache, metrics, log)", r"Gateway|EdgeStages|Endpoint|Router|RouteTable|ResourceHandlers|ResourceCache|MicroCache|CacheKey|PolicyStage|Policy|Authorization|RequestContext|Metrics|AccessLog|CORSPolicy|TokenBuckets|RateLimit|ClientAddress|ErrorRenderer|ItemIDStage|BodyLimit|SchemaWatch|StatsSampler"),
 ("event loop (libevent, EventLoop, work queue)", r"libevent|EventLoop|LoopWorkQueue|event_|evmap|epoll|MonotonicInstant|FixedDateFormat|clock_gettime"),
 ("task and continuation machinery (Swift runtime)", r"swift_task|swift_job|swift_continuation|AsyncTask|StackAllocator|TaskAllocator|withStatusRecordLock|runJob|swift::|Executor|pthread_mutex|pthread_getspecific|swift_getActive|TaskGroup|flagAsAndEnqueue|swift_task_switch"),
 ("retain/release", r"swift_retain|swift_release|swift_bridgeObject|doDecrementSlow|swift_isUniquelyReferenced|swift_unknownObject|swift_nonatomic"),
 ("malloc/free and object alloc", r"malloc|free|jemalloc|je_|swift_allocObject|swift_deallocObject|swift_slowAlloc|swift_slowDealloc|swift_deallocClassInstance|_swift_release_dealloc|deallocating_deinit|posix_memalign|calloc|realloc|sdallocx|swift_allocBox|swift_deallocBox"),
 ("memcpy/memmove/other libc", r"memcpy|memmove|memset|memchr|strlen|strcspn|libc"),
]
buckets=collections.Counter(); detail=collections.defaultdict(list)
for i in ids:
    f,o=fninfo.get(i,(None,None))
    key=f"{objs.get(o,'?').split('/')[-1]} {files.get(f,'?').split('/')[-1]} {dem[i].split('(')[0]}"
    for label,rx in rules:
        if re.search(rx,key):
            buckets[label]+=selfc[i]; detail[label].append((selfc[i],dem[i])); break
    else:
        buckets["other (stdlib, Foundation, unnamed)"]+=selfc[i]; detail["other (stdlib, Foundation, unnamed)"].append((selfc[i],f"{objs.get(o,'?').split('/')[-1]}:{dem[i]}"))
tot=sum(selfc.values())
print(f"total: {tot/req:,.0f} instructions per request ({req} requests)")
for label,c in buckets.most_common():
    print(f"{c/req:9,.0f}  {100*c/tot:5.1f} %  {label}")
# llhttp split by caller
ll=[i for i in ids if 'llhttp_execute' in names[i]]
for (caller,callee),c in callinc.items():
    if callee in ll:
        print(f"   llhttp_execute from {dem.get(caller,names.get(caller))[:90]}: {c/req:,.0f}")
if len(sys.argv)>3:
    for label in detail:
        print("\n##",label)
        for c,n in sorted(detail[label],reverse=True)[:int(sys.argv[3])]:
            print(f"{c/req:8,.0f}  {n[:150]}")
