#!/usr/bin/env python3
"""Checks bench/rfbench.py against the redfox it is given: variants parsing,
the --stats kernel lines, the SORT roles from `explain --ir` (their names
must match the --stats lines'), and the query time breakdown.

    python3 tests/bench/test_rfbench.py build/redfox
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import rfbench  # noqa: E402

# A probe sort (x re-keyed by its second column, read only by the join as
# its first input), a build-side sort, and a sort feeding an aggregate.
PROGRAM = """
e(x, y) -> int32(x), int32(y).
w(y, c) -> int32(y), int32(c).
e(1, 2). e(2, 3). e(3, 4). e(4, 2). e(5, 3).
w(2, 10). w(3, 20). w(4, 30).
j(x, c) -> int32(x), int32(c).
j(x, c) <- e(x, y), w(y, c), c > 10.
s[] = t -> int64(t).
s[] = t <- agg<<t = total(c)>> j(_, c).
@output(j).
@output(s).
"""

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}")


def main():
    redfox = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "redfox")

    v = rfbench.parse_variants(None)
    check(len(v) == 1 and v[0].name == "" and v[0].args == [] and v[0].environ() is None, "default variant")
    v = rfbench.parse_variants("fused=,unfused=--no-fuse --threads 2,forced=RF_WEAVE_FORCE=all --x")
    check([x.name for x in v] == ["fused", "unfused", "forced"], "variant names")
    check(v[1].args == ["--no-fuse", "--threads", "2"], "variant arguments")
    check(v[2].env == {"RF_WEAVE_FORCE": "all"} and v[2].args == ["--x"], "variant environment")
    check(v[2].environ()["RF_WEAVE_FORCE"] == "all", "variant environ()")
    for bad in ("nameless", "a=,a=--x", "=--x", ","):
        try:
            rfbench.parse_variants(bad)
            check(False, f"variants '{bad}' accepted")
        except ValueError:
            pass

    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "p.lql")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        ir = subprocess.run([redfox, "explain", "--ir", "--no-fuse", prog], capture_output=True, text=True)
        check(ir.returncode == 0, f"explain --ir: {ir.stderr}")
        roles = rfbench.sort_roles(ir.stdout)
        check(sorted(roles.values()).count("probe") == 1, f"one probe sort in {roles}")
        check("agg" in roles.values(), f"a sort before the aggregate in {roles}")
        run = subprocess.run([redfox, "run", prog, "--backend=cpu", "--count", "--stats"],
                             capture_output=True, text=True)
        check(run.returncode == 0, f"run: {run.stderr}")
        ks = rfbench.kernel_lines(run.stderr)
        table_lines = [ln for ln in run.stderr.splitlines() if ln[:3] == "  " + ln[2:3] and ln[2:3].isdigit()]
        check(len(ks) == len(table_lines) and ks, f"{len(ks)} kernel lines parsed of {len(table_lines)}")
        for k in ks:
            if k["op"] == "SORT":
                check((k["block"], k["out"]) in roles, f"SORT {k['out']} of block {k['block']} not in explain")
        b = rfbench.breakdown(run.stderr, roles)
        check(b is not None, "breakdown parsed")
        if b:
            parts = sum(b[c] for c in rfbench.CATEGORIES) + b["output"] + b["rest"]
            check(abs(parts - b["query"]) < 1e-9, "breakdown parts add up to the query time")
            check(b["sort.probe"] + b["sort.agg"] <= b["sort"] + 1e-9, "sort roles within sort")
            check(b["query"] > 0 and b["load"] >= 0, "query and load times")
        text = rfbench.breakdown_table("t", [("p", b), ("missing", None)])
        check("| sum (1) |" in text and "| missing |" in text, "breakdown table rows")
    print("test_rfbench: %s" % ("ok" if not failures else f"{failures} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
