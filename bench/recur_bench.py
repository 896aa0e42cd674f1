#!/usr/bin/env python3
"""Recursion benchmark (issue 14): process wall time, best of N, of
`redfox run PROG --input edge=GRAPH --count` for one or more redfox
binaries side by side, on the chain-reachability case (high diameter, tiny
deltas; its chain is generated into .data/, never committed) and on TC/SG
of shared graphs (big deltas, which must not get slower).

    python3 bench/recur_bench.py                         # build/redfox
    python3 bench/recur_bench.py --bin /tmp/redfox.base --bin build/redfox
    python3 bench/recur_bench.py --cases chain100k,tc:OL.cedge --repeat 5

The machine may be shared: best of --repeat (default 3) damps the noise;
the answers' hashes (from --count) must agree across binaries, else the
row says MISMATCH.
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPHS = os.path.join(os.path.dirname(ROOT), "shared", "data", "graphs")
DATA = os.path.join(ROOT, ".data")

PROGRAMS = {
    "tc": ("programs/tc.lql", "edge"),
    "sg": ("programs/same_generation.lql", "edge"),
    "reach": ("programs/reach.lql", "e"),
}
DEFAULT_CASES = ("chain10k,chain100k,tc:OL.cedge,tc:cal.cedge,tc:TG.cedge,sg:OL.cedge,sg:cal.cedge,"
                 "sg:TG.cedge,sg:p2p-Gnutella04,tc:CA-HepTh,sg:wing,sg:fe_sphere")


def chain_file(edges):
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, f"chain{edges}.tsv")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.writelines(f"{i}\t{i + 1}\n" for i in range(edges))
    return path


def case_command(case):
    """(program, input pred, input file) of a case name, or None if its graph is missing."""
    m = re.fullmatch(r"chain(\d+)(k?)", case)
    if m:
        n = int(m.group(1)) * (1000 if m.group(2) else 1)
        return PROGRAMS["reach"][0], "e", chain_file(n)
    query, graph = case.split(":", 1)
    path = os.path.join(GRAPHS, graph + ".tsv")
    if not os.path.exists(path):
        return None
    prog, pred = PROGRAMS[query]
    return prog, pred, path


def run_once(binary, prog, pred, path, extra):
    cmd = [binary, "run", prog, "--input", f"{pred}={path}", "--count"] + extra
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip()[-400:]}")
    m = re.search(r"\((\d+) tuples, hash ([0-9a-f]+)\)", res.stdout)
    return wall, (m.group(1), m.group(2)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", action="append", help="redfox binary (repeatable; default build/redfox)")
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="comma list: chainN[k] (reach over an N-edge chain) or QUERY:GRAPH (tc, sg)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    bins = args.bin or [os.path.join(ROOT, "build", "redfox")]
    extra = [f"--backend={args.backend}"]
    print(f"{'case':28} {'rows':>10} " + " ".join(f"{os.path.basename(os.path.dirname(b)) + '/' + os.path.basename(b):>22}" for b in bins))
    for case in args.cases.split(","):
        spec = case_command(case)
        if spec is None:
            print(f"{case:28} (graph missing, skipped)")
            continue
        best, answers = [float("inf")] * len(bins), set()
        for _ in range(args.repeat):   # binaries interleaved: a shared machine's load hits them alike
            for i, b in enumerate(bins):
                wall, ans = run_once(b, *spec, extra)
                best[i] = min(best[i], wall)
                answers.add(ans)
        rows = next(iter(answers))[0] if len(answers) == 1 and None not in answers else "MISMATCH"
        print(f"{case:28} {rows:>10} " + " ".join(f"{t:>20.3f} s" for t in best), flush=True)


if __name__ == "__main__":
    sys.exit(main())
