#!/usr/bin/env python3
"""Independent check of the ring golden files, written from ring/SPEC.md only
(Python standard library, no Go code involved).

Usage: python3 testdata/verify_golden.py   (from the ring directory)
Exits non-zero and names the first mismatching line on failure.
"""
import hashlib
import json
import sys
import uuid

VNODES = 128


def H(b: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "big")


def token(node: uuid.UUID, i: int) -> int:
    return H(node.bytes + i.to_bytes(4, "big"))


def build(members):
    entries = sorted({(token(m, i), m.bytes) for m in set(members) for i in range(VNODES)})
    return entries


def replicas(entries, point, n):
    start = next((k for k, (t, _) in enumerate(entries) if t >= point), 0)
    out = []
    for s in range(len(entries)):
        node = entries[(start + s) % len(entries)][1]
        if node not in out:
            out.append(node)
        if len(out) == n:
            break
    return [str(uuid.UUID(bytes=b)) for b in out]


def main():
    assert token(uuid.UUID(int=1), 0) == 15258524739324641029
    assert token(uuid.UUID(int=1), 1) == 3611124066911778106
    assert H(b"user:42") == 15647646390214308482
    assert H(b"") == 16476032584258269876

    for n, line in enumerate(open("testdata/tokens.golden", encoding="utf-8"), 1):
        if line.startswith("#"):
            continue
        node, i, tok = line.split()
        if token(uuid.UUID(node), int(i)) != int(tok):
            sys.exit(f"tokens.golden:{n}: mismatch")

    members = None
    entries = None
    for n, line in enumerate(open("testdata/placement.golden", encoding="utf-8"), 1):
        if n == 1:
            members = [uuid.UUID(s) for s in line.split("ring of ", 1)[1].strip().split(", ")]
            entries = build(members)
            continue
        if line.startswith("#"):
            continue
        kind, key, point, owner, r3, r5 = line.rstrip("\n").split("\t")
        kind, key = json.loads(kind), json.loads(key)
        p = H((kind + "/" + key).encode("utf-8"))
        if p != int(point):
            sys.exit(f"placement.golden:{n}: point mismatch")
        if replicas(entries, p, 1) != [owner]:
            sys.exit(f"placement.golden:{n}: owner mismatch")
        if replicas(entries, p, 3) != r3.split(",") or replicas(entries, p, 5) != r5.split(","):
            sys.exit(f"placement.golden:{n}: replicas mismatch")
    print("golden files match the Python reference")


if __name__ == "__main__":
    main()
