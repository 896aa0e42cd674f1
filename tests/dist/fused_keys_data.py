#!/usr/bin/env python3
"""The inputs of tests/dist/fused_keys.lql, written into DIR (r.tsv,
big.tsv, small.tsv): run_dist.sh and run_gpus.sh run it on the same rows.

    python3 tests/dist/fused_keys_data.py DIR
"""
import os
import random
import sys


def main():
    out = sys.argv[1]
    r = random.Random(3)
    with open(os.path.join(out, "r.tsv"), "w") as f:
        for _ in range(5000):
            print(r.randrange(3000), r.randrange(40), sep="\t", file=f)
    r = random.Random(4)
    with open(os.path.join(out, "big.tsv"), "w") as f:
        for _ in range(6000):
            print(r.randrange(500), r.randrange(50), r.randrange(1000), sep="\t", file=f)
    with open(os.path.join(out, "small.tsv"), "w") as f:
        for s in range(0, 50, 3):
            print(s, "n%d" % s, sep="\t", file=f)


if __name__ == "__main__":
    main()
