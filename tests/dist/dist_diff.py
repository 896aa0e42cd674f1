#!/usr/bin/env python3
"""Distributed runs against single-process runs on random programs.

    dist_diff.py --redfox PATH --mpirun "mpirun -np 3 ..." [--lang classic|biz]
                 [--count N] [--seed S] [--per-rank N]

Each program of the random-program generators (tests/differential: gen.py,
gen_biz.py; program i has seed S*100000 + i, as run.py numbers them) runs
as `redfox run prog.lql --output DIR` in one process and under the MPI
launcher; the two must exit alike and write byte-identical files. A biz
program's stdout (no --output) must agree too. With --per-rank N the
distributed run writes per rank (--output-per-rank): the N parts of each
output, their lines together, must be the one-process file's (the
programs' @limit directives dropped: per rank they are refused). The single-process runs
are themselves checked against the oracle by tests/differential.
Ends with `N passed, M failed`; exit status 1 if anything failed.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "differential"))

import run as diff_run  # noqa: E402


def outputs(cmd, path, outdir, extra=()):
    """Exit status, {file: bytes}, stderr of one run into outdir."""
    os.mkdir(outdir)
    p = subprocess.run(cmd + ["run", path, "--output", outdir] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    files = {}
    for name in sorted(os.listdir(outdir)):
        with open(os.path.join(outdir, name), "rb") as f:
            files[name] = f.read()
    return p.returncode, files, p.stderr.decode("utf-8", "replace")


def stdout_of(cmd, path, extra=()):
    p = subprocess.run(cmd + ["run", path] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout


def per_rank_problems(f1, f2, parts):
    """Each one-process file NAME.tsv against NAME.part-K-of-N.tsv, K = 1..N:
    the parts' lines, together, are the file's (as multisets)."""
    problems = []
    names = {n[:-len(".tsv")] for n in f1}
    want = {"%s.part-%d-of-%d.tsv" % (n, k, parts) for n in names for k in range(1, parts + 1)}
    if set(f2) != want:
        problems.append("per-rank files %s, expected %s" % (sorted(f2), sorted(want)))
        return problems
    for n in sorted(names):
        got = b"".join(f2["%s.part-%d-of-%d.tsv" % (n, k, parts)] for k in range(1, parts + 1))
        if sorted(got.splitlines()) != sorted(f1[n + ".tsv"].splitlines()):
            problems.append("%s: the per-rank parts' rows differ" % n)
    return problems


def check(single, dist, seed, lang, extra, parts=0):
    program = diff_run.GENERATORS[lang](seed)
    work = tempfile.mkdtemp(prefix="rfdist%d_" % seed)
    try:
        path = diff_run.write_program(program, work)[0]
        if parts:
            # per rank, an output with @limit is refused (run_dist.sh checks
            # that): the limits go, so that every program is compared
            with open(path) as fh:
                lines = [ln for ln in fh if not ln.lstrip().startswith("@limit(")]
            with open(path, "w") as fh:
                fh.writelines(lines)
        rc1, f1, _ = outputs(single, path, os.path.join(work, "one"))
        rc2, f2, err2 = outputs(dist, path, os.path.join(work, "dist"),
                                list(extra) + (["--output-per-rank"] if parts else []))
        problems = []
        if parts:
            if rc1 != rc2:
                problems.append("exit %d in one process, %d with --output-per-rank; stderr:\n%s" % (rc1, rc2, err2))
            elif rc1 == 0:
                problems += per_rank_problems(f1, f2, parts)
            return problems
        if rc1 != rc2:
            problems.append("exit %d in one process, %d distributed; stderr:\n%s" % (rc1, rc2, err2))
        for name in sorted(set(f1) | set(f2)):
            if f1.get(name) != f2.get(name):
                problems.append("%s differs" % name)
        if lang == "biz" and rc1 == 0 and not problems:
            if stdout_of(single, path) != stdout_of(dist, path, extra):
                problems.append("stdout differs")
        return problems
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--mpirun", required=True, help="the launcher's command line, before the program ('' for none)")
    ap.add_argument("--dist-arg", action="append", default=[],
                    help="an argument of the distributed run after the program (--gpus 2: --dist-arg=--gpus --dist-arg=2)")
    ap.add_argument("--lang", choices=sorted(diff_run.GENERATORS), default="classic")
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-rank", type=int, default=0, metavar="N",
                    help="the distributed runs write per rank (--output-per-rank) over N ranks: the parts' "
                         "rows together must be the one-process file's (@limit directives dropped)")
    a = ap.parse_args()
    single = [os.path.abspath(a.redfox)]
    dist = shlex.split(a.mpirun) + single
    passed, failed = 0, 0
    for i in range(a.count):
        seed = diff_run.program_seed(a.seed, i)
        problems = check(single, dist, seed, a.lang, a.dist_arg, a.per_rank)
        if problems:
            failed += 1
            print("FAIL %s program seed %d (run.py --lang %s --print %d):\n  %s" %
                  (a.lang, seed, a.lang, seed, "\n  ".join(problems)))
        else:
            passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
