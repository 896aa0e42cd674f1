#!/usr/bin/env python3
"""Checks bench/iter_profile.py on a trace of a known loop: reachability over
a chain of N edges from node 0 takes N + 1 iterations (the last finds
nothing new), each adding one node; the script must find that many
iterations, the deltas (1 row each but the last), the relation's final size
and the loop's kernels.

    python3 tests/bench/test_iter_profile.py build/redfox
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 40
PROGRAM = """
e(x, y) -> int32(x), int32(y).
reach(x) -> int32(x).
reach(0).
reach(y) <- reach(x), e(x, y).
@output(reach).
""" + "".join("e(%d, %d).\n" % (i, i + 1) for i in range(N))


def main():
    redfox = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "chain.lql")
        trace = os.path.join(d, "chain.json")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        subprocess.run([redfox, "run", prog, "--backend=cpu", "--count", "--profile", trace],
                       check=True, capture_output=True)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "iter_profile.py"), trace,
                              "--every", "10"], check=True, capture_output=True, text=True).stdout
        m = re.search(r"loop (\S+): (\d+) iterations", out)
        if not m or int(m.group(2)) != N + 1:
            failures.append("expected %d iterations, got: %s" % (N + 1, m.group(0) if m else out))
        m = re.search(r"delta rows: first (\d+), median (\d+), last (\d+); relation at the end (\d+)", out)
        if not m or m.groups() != ("1", "1", "0", str(N)):
            failures.append("expected deltas 1, 1, 0 and %d rows added, got: %s" % (N, m.group(0) if m else out))
        if not re.search(r"^\s+(JOIN|FUSED|DIFF|UNION) \S+\s+[\d.]+ ms\s+%d calls" % (N + 1), out, re.M):
            failures.append("no loop kernel with %d calls in:\n%s" % (N + 1, out))
        if "fit: iteration us" not in out:
            failures.append("no fit in:\n" + out)
    for f in failures:
        print("FAIL:", f)
    print("iter_profile: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
