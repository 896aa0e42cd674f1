#!/usr/bin/env python3
"""Every legal select plan, forced, gives the same answers.

    selplan_forced.py --redfox PATH [--backend cpu|gpu] [--case NAME]

Takes a golden case (default weaver_selplan: filters with a conjunct that
faults where an earlier one does not hold), lists every plan the guard
allows for each of its filters (`redfox explain --select-plans`), and runs
the case once per plan with RF_WEAVE_SELPLAN set to it: stdout must equal
the case's .out byte for byte (rows and their order) and the run must
succeed (the division never meets y = 0). A forced plan names a number of
conjuncts and applies to the filters with that many, so plans are taken
per conjunct count, the union over the filters that have it. Then plans
the guard forbids (the faulting conjunct moved before y != 0, or joined
by &) must stop the run with status 2 and the guard's message, and a
malformed plan with a parse message.

On the CPU a plan's order is applied (& and | run as &&: row at a time);
on the GPU the generated kernels follow the plan (groups branch-free,
early outs, row-id kernels for |), RF_CUDA_CODEGEN=1 so that the plain
MAP and JOIN are generated too, and a run without a forced plan must
report the plans it chose (--stats, "select plan of").
Ends with `N plans ok` or the failures; exit 1 if anything failed.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.normpath(os.path.join(HERE, "..", "golden", "cases"))


def run(cmd, env_extra, cwd):
    env = dict(os.environ)
    env.pop("RF_WEAVE_SELPLAN", None)
    env.update(env_extra)
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--case", default="weaver_selplan")
    a = ap.parse_args()
    a.redfox = os.path.abspath(a.redfox)
    prog = a.case + ".lql"
    with open(os.path.join(CASES, a.case + ".out"), encoding="utf-8") as f:
        want = f.read()
    base = {"RF_CUDA_CODEGEN": "1"} if a.backend == "gpu" else {}
    rc, out, err = run([a.redfox, "explain", "--select-plans", prog], {}, CASES)
    if rc != 0:
        print(f"FAIL: explain --select-plans: exit {rc}: {err.strip()}")
        return 1
    by_n = {}   # conjunct count -> plans (first seen order)
    for line in out.splitlines():
        if not line or line.startswith("#"):
            continue
        _, n, plan = line.split("\t")
        plans = by_n.setdefault(int(n), [])
        if plan not in plans:
            plans.append(plan)
    if len(by_n) < 2 or sum(len(v) for v in by_n.values()) < 10:
        print(f"FAIL: expected several filters with many plans, got {by_n}")
        return 1
    cmd = [a.redfox, "run", prog, f"--backend={a.backend}"]
    fails = []
    count = 0
    for n in sorted(by_n):
        for plan in by_n[n]:
            rc, out, err = run(cmd, dict(base, RF_WEAVE_SELPLAN=plan), CASES)
            count += 1
            if rc != 0 or out != want:
                fails.append(f"plan {plan} ({n} conjuncts): exit {rc}, "
                             f"{'same' if out == want else 'DIFFERENT'} answers; {err.strip()[-300:]}")
    # Forbidden and malformed plans: errors that say why, no answers.
    bad = [("1&&0&&2", "can fault"),          # the division before y != 0
           ("0&1&&2", "not &"),               # the division sharing y != 0's group
           ("0&&2&&1&&3", "can fault"),      # x % y before y != 0 (the 4-conjunct filter)
           ("0&&1&&", "expected a conjunct number")]
    for plan, why in bad:
        rc, out, err = run(cmd, dict(base, RF_WEAVE_SELPLAN=plan), CASES)
        count += 1
        if rc != 2 or "RF_WEAVE_SELPLAN" not in err or why not in err:
            fails.append(f"forbidden plan {plan}: exit {rc} (want 2), stderr: {err.strip()[-300:]}")
    if a.backend == "gpu":
        rc, out, err = run(cmd + ["--stats"], base, CASES)
        count += 1
        if rc != 0 or out != want or "select plan of" not in err or "chosen: sampled sel" not in err:
            fails.append(f"chosen plans: exit {rc}, {'same' if out == want else 'DIFFERENT'} answers, "
                         f"no 'select plan of ... chosen' in --stats: {err.strip()[-500:]}")
        else:
            print("\n".join(l for l in err.splitlines() if "select plan of" in l))
    for f in fails:
        print("FAIL: " + f)
    if fails:
        print(f"{len(fails)} of {count} runs failed")
        return 1
    print(f"{count} plans ok ({a.backend}: " + ", ".join(f"{len(v)} of {n} conjuncts" for n, v in sorted(by_n.items()))
          + ", forbidden ones refused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
