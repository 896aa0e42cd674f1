#!/usr/bin/env python3
"""Distributed runs against single-process runs on random programs.

    dist_diff.py --redfox PATH --mpirun "mpirun -np 3 ..." [--lang classic|biz]
                 [--count N] [--seed S]

Each program of the random-program generators (tests/differential: gen.py,
gen_biz.py; program i has seed S*100000 + i, as run.py numbers them) runs
as `redfox run prog.lql --output DIR` in one process and under the MPI
launcher; the two must exit alike and write byte-identical files. A biz
program's stdout (no --output) must agree too. The single-process runs
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


def check(single, dist, seed, lang, extra):
    program = diff_run.GENERATORS[lang](seed)
    work = tempfile.mkdtemp(prefix="rfdist%d_" % seed)
    try:
        path = diff_run.write_program(program, work)[0]
        rc1, f1, _ = outputs(single, path, os.path.join(work, "one"))
        rc2, f2, err2 = outputs(dist, path, os.path.join(work, "dist"), extra)
        problems = []
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
    a = ap.parse_args()
    single = [os.path.abspath(a.redfox)]
    dist = shlex.split(a.mpirun) + single
    passed, failed = 0, 0
    for i in range(a.count):
        seed = diff_run.program_seed(a.seed, i)
        problems = check(single, dist, seed, a.lang, a.dist_arg)
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
