#!/usr/bin/env python3
"""Multiway joins under MPI against one process: random cyclic programs of
tests/differential/wcoj_diff.py (and each one's counting variant, whose
MULTIJOIN counts its bindings) run with --join=wcoj and --join=auto in one
process and under the launcher; --count's output (row counts and hashes)
must be byte-identical, and --join=auto's statistic (the binary plan's
first join's rows, --stats) the same number. On GPUs: --mpirun '' --dist-arg=--gpus --dist-arg=2
--backend gpu (the one-process runs on one GPU).

    wcoj_dist.py --redfox build/redfox --mpirun "mpirun -np 3 ..." [--count N] [--seed S]
                 [--dist-arg ARG]... [--backend cpu|gpu]
"""
import argparse
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "differential"))
import wcoj_diff  # noqa: E402  (random programs and the counting variant)


# --stats: "join choice stratumS (block B): ... binary plan's first join J rows"
FIRST_JOIN = re.compile(r"join choice (\S+ \(block \d+\)).*?binary plan's first join (\d+) rows")


class Args:
    def __init__(self, redfox, backend):
        self.redfox = redfox
        self.backend = backend


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dist-arg", action="append", default=[],
                    help="an argument of the distributed run after the program (--gpus 2: --dist-arg=--gpus --dist-arg=2)")
    ap.add_argument("--backend", default="cpu", help="the one-process runs' backend (cpu or gpu)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.count):
            graph, fset = wcoj_diff.random_graph(rng), wcoj_diff.random_graph(rng)
            tern = sorted({(rng.randint(0, 6), rng.randint(0, 6), rng.randint(0, 6)) for _ in range(12)})
            q = wcoj_diff.make_query(rng)
            prog = os.path.join(tmp, "q%d.lql" % i)
            with open(prog, "w") as fh:
                fh.write(wcoj_diff.program_text(graph, tern, fset, q))
            # writes q<i>_count.lql (and checks its counts in one process)
            problem = wcoj_diff.count_problem(Args(a.redfox, a.backend), prog, graph, tern, fset, q, [0])
            if problem:
                failures += 1
                print("FAIL program %d (seed %d), one process: %s" % (i, a.seed, problem))
            for p in (prog, prog[:-4] + "_count.lql"):
                for join in ("wcoj", "auto"):
                    cmd = [a.redfox, "run", p, "--join=" + join, "--count"]
                    if join == "auto":   # and the statistic it chose by, counted alike
                        cmd.append("--stats")
                    one = subprocess.run(cmd + ["--backend=" + a.backend], capture_output=True, text=True,
                                         timeout=120)
                    dist = subprocess.run(shlex.split(a.mpirun) + cmd + a.dist_arg, capture_output=True, text=True,
                                          timeout=120)
                    counted = [FIRST_JOIN.findall(r.stderr) for r in (one, dist)]
                    if counted[0] != counted[1]:
                        failures += 1
                        print("FAIL program %d (seed %d) %s: --join=auto's first join counted %s in one process, %s "
                              "under the launcher" % (i, a.seed, os.path.basename(p), counted[0], counted[1]))
                    if one.returncode or dist.returncode or one.stdout != dist.stdout:
                        failures += 1
                        print("FAIL program %d (seed %d) %s --join=%s: one process %r (exit %d), under the launcher "
                              "%r (exit %d) %s\n%s" % (i, a.seed, os.path.basename(p), join, one.stdout,
                                                     one.returncode, dist.stdout, dist.returncode,
                                                     dist.stderr.strip()[:400], open(p).read()))
    print("multiway joins under the launcher: %d programs, %d failed" % (a.count, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
