#!/usr/bin/env python3
"""--join=auto's run-time choice (issue 9): on the CPU backend with its
default ratio, triangle listing on a sparse uniform graph (few 2-paths)
must run the binary plan and on a skewed R-MAT graph the multiway join,
as --stats reports; explain --plan and --ir show the choice and both
plans, --profile has a slice for the choice; the answers equal
--join=binary's and --join=wcoj's, also from a compiled .rfx. A recursive rule with a cyclic body chooses in every
iteration of its loop (the delta changes), with the same answers whichever
branch RF_WCOJ_AUTO_RATIO forces. The multiway join's second variable
order: explain --ir shows it, --stats says which order ran (the second on
the R-MAT graph, the planned one on the uniform graph), the answers are
the same either way. Graphs from bench/graphgen.c (small:
the whole test takes about a second).

    wcoj_auto_choice.py --redfox build/redfox --graphgen build/tests/bench/rf_graphgen
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIANGLES = os.path.join(ROOT, "programs", "triangles.lql")

# p grows by paths whose endpoints c also joins: a cyclic body read from
# the delta in each iteration
RECURSIVE = """e(x, y) -> int32(x), int32(y).
c(x, y) -> int32(x), int32(y).
p(x, y) -> int32(x), int32(y).
@input(e, "e.tsv").
@output(p).
c(x, z) <- e(x, y), e(y, z).
c(x, y) <- e(x, y).
p(x, y) <- e(x, y), x < 40.
p(x, z) <- p(x, y), e(y, z), c(x, z).
"""

failures = []


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        failures.append("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout, r.stderr


def choices(stderr):
    """[(wcoj runs, binary runs, last branch)] of --stats' join choice lines."""
    out = []
    for m in re.finditer(r"join choice .*: wcoj (\d+)x, binary (\d+)x;.*-> (\w+)", stderr):
        out.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return out


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--graphgen", required=True)
    a = ap.parse_args()
    rf = a.redfox
    env = {"RF_WCOJ_AUTO_RATIO": ""}   # the backend's default ratio
    with tempfile.TemporaryDirectory() as tmp:
        graphs = {"uniform": ["uniform", "20000", "8000", "1"], "rmat": ["rmat", "11", "20000", "1"]}
        want = {"uniform": "binary", "rmat": "wcoj"}
        for name, args in graphs.items():
            path = os.path.join(tmp, name + ".tsv")
            subprocess.run([a.graphgen] + args + ["-o", path], check=True)
            base = [rf, "run", TRIANGLES, "--input", "edge=" + path, "--count", "--backend=cpu"]
            out_auto, err = run(base + ["--join=auto", "--stats"], env)
            got = choices(err)
            check(got == [(1, 0, "wcoj")] if want[name] == "wcoj" else got == [(0, 1, "binary")],
                  "%s triangles: --join=auto chose %s, expected %s" % (name, got, want[name]))
            for join in ("binary", "wcoj"):
                out, _ = run(base + ["--join=" + join])
                check(out == out_auto, "%s triangles: --join=auto and --join=%s answers differ" % (name, join))
        # a multiway join's second variable order (hir.h alt_order): explain --ir shows it; with a
        # margin of 0.9 the R-MAT graph's estimates (z last ~2.7e5 tests, x last ~2.0e5) take the
        # second, the uniform graph's (~2.0e3 both) keep the planned one; answers the same
        for name, second in (("rmat", 1), ("uniform", 0)):
            base = [rf, "run", TRIANGLES, "--input", "edge=" + os.path.join(tmp, name + ".tsv"), "--count",
                    "--backend=cpu", "--join=wcoj"]
            out_est, err = run(base + ["--stats"], dict(env, RF_WCOJ_ORDER="", RF_WCOJ_ORDER_MARGIN="0.9"))
            want_line = "multiway joins with a second variable order: %d ran in the planned order, %d in the second" % (
                1 - second, second)
            check(want_line in err, "%s triangles: --stats does not say '%s':\n%s" % (name, want_line, err))
            for order in ("planned", "alt"):
                out, _ = run(base, dict(env, RF_WCOJ_ORDER=order))
                check(out == out_est, "%s triangles: RF_WCOJ_ORDER=%s answers differ" % (name, order))
        # explain shows the choice and both plans
        plan, _ = run([rf, "explain", "--plan", TRIANGLES])
        check("if rows(uedge join uedge on ($1 = $0)) grown over 3 variables > ratio x 3 atoms x" in plan and
              "goto auto0.wcoj else goto auto0.binary" in plan and "MultiJoin" in plan and "MapJoin" in plan,
              "explain --plan does not show the run-time choice and both plans:\n" + plan)
        ir, _ = run([rf, "explain", "--ir", TRIANGLES])
        check(re.search(r"if rows\(uedge join uedge on \(\$1 = \$0\)\) grown over 3 variables .* jump block \d+ \(wcoj\) "
                        r"else block \d+ \(binary\)", ir) is not None and "MULTIJOIN" in ir,
              "explain --ir does not show the run-time choice:\n" + ir)
        check("MULTIJOIN[vars=3, or order $2 $1 $0]" in ir or "MULTIJOIN[vars=3, count, or order $2 $1 $0]" in ir,
              "explain --ir does not show the second variable order:\n" + ir)
        # --profile: a slice for the choice, with its numbers
        trace = os.path.join(tmp, "trace.json")
        run([rf, "run", TRIANGLES, "--input", "edge=" + os.path.join(tmp, "rmat.tsv"), "--count", "--backend=cpu",
             "--profile", trace], env)
        with open(trace) as fh:
            events = json.load(fh)
        events = events["traceEvents"] if isinstance(events, dict) else events
        slices = [e for e in events if e.get("cat") == "join choice"]
        check(len(slices) == 1 and slices[0]["args"]["chose"] == "wcoj" and
              slices[0]["args"]["first_join_rows"] > 0, "--profile: join choice slices %s" % slices)
        # a compiled program chooses as well
        rfx = os.path.join(tmp, "triangles.rfx")
        run([rf, "compile", TRIANGLES, "-o", rfx])
        rmat = os.path.join(tmp, "rmat.tsv")
        out_rfx, err = run([rf, "run", rfx, "--input", "edge=" + rmat, "--count", "--backend=cpu", "--stats"], env)
        out_src, _ = run([rf, "run", TRIANGLES, "--input", "edge=" + rmat, "--count", "--backend=cpu"], env)
        check(out_rfx == out_src and choices(err) == [(1, 0, "wcoj")], "the .rfx run differs from the source run")
        # the recursive rule: a choice every iteration, any branch the same
        with open(os.path.join(tmp, "rec.lql"), "w") as fh:
            fh.write(RECURSIVE)
        with open(os.path.join(tmp, "uniform.tsv")) as src, open(os.path.join(tmp, "e.tsv"), "w") as dst:
            for i, line in enumerate(src):
                if i == 600:
                    break
                x, y = line.split()
                dst.write("%d\t%d\n" % (int(x) % 300, int(y) % 300))
        rec = [rf, "run", os.path.join(tmp, "rec.lql"), "--count", "--backend=cpu"]
        ref, _ = run(rec + ["--join=binary"])
        for ratio, branch in (("", None), ("0", "wcoj"), ("1e30", "binary")):
            out, err = run(rec + ["--join=auto", "--stats"], {"RF_WCOJ_AUTO_RATIO": ratio})
            got = choices(err)
            iters = re.search(r"loop \S+ \(block \d+\): (\d+) iterations", err)
            check(out == ref, "recursive rule (ratio '%s'): answers differ from --join=binary" % ratio)
            check(len(got) == 1 and iters and got[0][0] + got[0][1] == int(iters.group(1)) and
                  (branch is None or got[0][2] == branch),
                  "recursive rule (ratio '%s'): choices %s over %s iterations" %
                  (ratio, got, iters.group(1) if iters else "?"))
    for f in failures:
        print("FAIL " + f)
    print("--join=auto choice: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
