#!/usr/bin/env python3
"""Process wall time of `redfox run` under --backend=auto (issue 14).

What a user waits for: the whole command, from exec to exit (device
start-up, parsing, the run, outputs, teardown), with the default
--backend=auto against variants given as environment settings, e.g. the
device started before the run (RF_DEVICE_ARRIVING=off, as before the
arriving device) and the CPU backend (--backend=cpu). Every variant must
give the same answer (--count's hashes) or the row says MISMATCH.

    python3 bench/auto_wall.py --redfox build-dev/redfox --graphs-dir .data/graphs \\
        [--graphs wing,OL.cedge] [--queries tc,sg] [--repeat 3] \\
        [--variants "first=RF_DEVICE_ARRIVING=off,cpu=--backend=cpu"]

A variant is NAME=SETTING[;SETTING...], where a setting is VAR=VALUE (an
environment variable) or an option starting with --. The first column is
the default (auto, nothing set); ratios are each variant's wall over it.
The variants of a row take turns; the fastest of --repeat runs counts.
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = {"tc": "programs/tc.lql", "sg": "programs/same_generation.lql", "triangles": "programs/triangles.lql"}


def run(redfox, prog, graph, settings, timeout):
    env = dict(os.environ)
    opts = []
    for s in settings:
        if s.startswith("--"):
            opts.append(s)
        elif "=" in s:
            k, v = s.split("=", 1)
            env[k] = v
    cmd = [redfox, "run", os.path.join(ROOT, prog), "--input", "edge=" + graph, "--count"] + opts
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    wall = time.time() - t0
    if r.returncode != 0:
        return None, "exit %d" % r.returncode
    return wall, tuple(sorted(re.findall(r"^# (\S+) \((\d+) tuples, hash ([0-9a-f]+)\)", r.stdout, re.M)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", default=os.path.join(ROOT, "build", "redfox"))
    ap.add_argument("--graphs-dir", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "graphs"))
    ap.add_argument("--graphs", default=None, help="comma list of names (default: every .tsv there)")
    ap.add_argument("--queries", default="tc,sg")
    ap.add_argument("--variants", default="first=RF_DEVICE_ARRIVING=off,cpu=--backend=cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()
    names = a.graphs.split(",") if a.graphs else sorted(
        f[:-4] for f in os.listdir(a.graphs_dir) if f.endswith(".tsv"))
    variants = [("auto", [])] + [(v.split("=", 1)[0], v.split("=", 1)[1].split(";"))
                                 for v in a.variants.split(",") if v]
    dev = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip() \
        if subprocess.run(["sh", "-c", "command -v nvidia-smi"], capture_output=True).returncode == 0 else ""
    print("# auto_wall %s; %s; %d host cores" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                 dev.splitlines()[0] if dev else "no GPU", os.cpu_count()))
    cols = ["query", "graph"] + ["%s s" % n for n, _ in variants] + ["%s/auto" % n for n, _ in variants[1:]] + ["answer"]
    print(" | ".join(cols))
    print("|".join(["---"] * len(cols)))
    bad = False
    for q in a.queries.split(","):
        for g in names:
            path = os.path.join(a.graphs_dir, g + ".tsv")
            best, answers = {}, set()
            for _ in range(a.repeat):
                for n, settings in variants:
                    if isinstance(best.get(n), str):
                        continue
                    w, h = run(a.redfox, PROGRAMS[q], path, settings, a.timeout)
                    if w is None:
                        best[n] = h
                        continue
                    best[n] = min(best.get(n, w), w)
                    answers.add(h)
            fmt = lambda x: "%.3f" % x if isinstance(x, float) else str(x)
            row = [q, g] + [fmt(best.get(n)) for n, _ in variants]
            base = best.get("auto")
            for n, _ in variants[1:]:
                v = best.get(n)
                row.append("%.2f" % (v / base) if isinstance(v, float) and isinstance(base, float) else "-")
            mismatch = len(answers) > 1
            bad |= mismatch
            row.append("MISMATCH" if mismatch else ("%s rows" % next(iter(answers))[0][1] if answers else "-"))
            print(" | ".join(row))
            sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
