#!/usr/bin/env python3
"""The random programs of gen.py (the classic family) in both dialects.

    souffle_twins.py --redfox PATH [--count N] [--seed S] [--keep DIR]

For each generated program, `souffle_text` writes it in the Soufflé dialect
(docs/souffle.md); redfox runs the LogiQL text (`--output A`) and the
Soufflé text (`-F DIR -D B`) and every output must hold the same rows . @order
and @limit have no Soufflé spelling: both dialects run the program without
them (and the rows are compared as sorted lines).
Programs that Soufflé cannot say the same way are skipped, and so are the
ones whose LogiQL run fails (their faults, such as int32 overflow, are the
differential suite's business: Soufflé's number is Red Fox's int64 here):
  - invalid programs (they are meant to fail);
  - count_distinct (no Soufflé aggregate);
  - an aggregation whose group key is an expression, or a variable no atom
    of the body binds (Soufflé's correlated aggregate needs it inside);
  - a keyless `total` (Soufflé's sum over nothing is 0, Red Fox's no row).
The run fails when any program compared differs, or when fewer than half
of them could be compared (so that the check cannot quietly vanish).
Ends with `N compared, M skipped, K failed`.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import gen
import lql
from lql import Atom, Compare, Assign, Var, Wild

SOUFFLE_TYPE = {"int32": "number", "int64": "number", "string": "symbol", "float64": "float"}
SOUFFLE_AGG = {"count": "count", "total": "sum", "min": "min", "max": "max", "avg": "mean"}


class Unsupported(Exception):
    pass


def arg_text(e):
    if isinstance(e, Wild):
        return "_"
    return lql.expr_text(e)


def literal_text(lit):
    if isinstance(lit, Atom):
        return ("!" if lit.negated else "") + "%s(%s)" % (lit.pred, ", ".join(arg_text(a) for a in lit.args))
    if isinstance(lit, Compare):
        return "%s %s %s" % (lql.expr_text(lit.a), lit.op, lql.expr_text(lit.b))
    if isinstance(lit, Assign):
        return "%s = %s" % (lit.var.name, lql.expr_text(lit.expr))
    raise Unsupported("literal %r" % type(lit).__name__)


def key_type(program, body, var):
    """The type of a group key: the column of a positive atom binding it."""
    for lit in body:
        if isinstance(lit, Atom) and not lit.negated:
            for i, a in enumerate(lit.args):
                if isinstance(a, Var) and a.name == var.name:
                    return program.pred(lit.pred).types[i]
    raise Unsupported("group key %s bound by no atom" % var.name)


def souffle_text(program):
    """The program in the Soufflé dialect, with its input files named as
    Soufflé reads them from -F. Raises Unsupported."""
    if program.expect != "ok":
        raise Unsupported("invalid program")
    lines = ["// generated: the Soufflé twin of a gen.py program"]
    for p in program.preds:
        attrs = ", ".join("c%d: %s" % (i, SOUFFLE_TYPE[t]) for i, t in enumerate(p.types))
        lines.append(".decl %s(%s)" % (p.name, attrs))
    for p in program.preds:
        for row in p.facts:
            vals = [lql.string_literal(v) if isinstance(v, str) else str(v) for v in row]
            lines.append("%s(%s)." % (p.name, ", ".join(vals)))
        if p.file_rows is not None:
            if p.file_format == "csv":
                lines.append('.input %s(filename="%s", delimiter=",")' % (p.name, p.file_name))
            else:
                lines.append('.input %s(filename="%s")' % (p.name, p.file_name))
    outputs = [p.name for p in program.preds if p.output]
    if not outputs:   # LogiQL's default: every predicate defined by rules
        outputs = sorted({r.head for r in program.rules}, key=lambda n: [p.name for p in program.preds].index(n))
    lines.extend(".output %s" % n for n in outputs)
    nkeys = 0
    for r in program.rules:
        body = ", ".join(literal_text(l) for l in r.body)
        if not r.agg:
            lines.append("%s(%s) :- %s." % (r.head, ", ".join(arg_text(a) for a in r.head_args), body))
            continue
        n = len(r.agg)
        keys = r.head_args[:len(r.head_args) - n]
        for k in keys:
            if not isinstance(k, Var):
                raise Unsupported("group key expression")
        parts = []
        for fn, result, arg in r.agg:
            if fn not in SOUFFLE_AGG:
                raise Unsupported(fn)
            if fn == "total" and not keys:
                raise Unsupported("keyless total")
            target = (" " + lql.expr_text(arg)) if arg is not None else ""
            parts.append("%s = %s%s : { %s }" % (result.name, SOUFFLE_AGG[fn], target, body))
        head = "%s(%s)" % (r.head, ", ".join(a.name for a in r.head_args))
        if keys:
            # The groups: the keys' values where the body holds (Soufflé's
            # aggregate takes its group from the variables bound outside it).
            kname = "groups%d" % nkeys
            nkeys += 1
            ktypes = [key_type(program, r.body, k) for k in keys]
            lines.append(".decl %s(%s)" % (kname, ", ".join("c%d: %s" % (i, SOUFFLE_TYPE[t])
                                                            for i, t in enumerate(ktypes))))
            kargs = ", ".join(k.name for k in keys)
            lines.append("%s(%s) :- %s." % (kname, kargs, body))
            lines.append("%s :- %s(%s), %s." % (head, kname, kargs, ", ".join(parts)))
        else:
            lines.append("%s :- %s." % (head, ", ".join(parts)))
    return "\n".join(lines) + "\n", outputs


def sorted_lines(path):
    with open(path, "rb") as f:
        return sorted(f.read().split(b"\n"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="copy the folder of every failing program here")
    a = ap.parse_args()
    compared = skipped = 0
    failed = []
    for i in range(a.count):
        pseed = a.seed * 100000 + i
        program = gen.generate(pseed)
        for p in program.preds:
            p.order = p.limit = None
        try:
            text, outputs = souffle_text(program)
        except Unsupported:
            skipped += 1
            continue
        with tempfile.TemporaryDirectory() as work:
            lql_path = os.path.join(work, "prog.lql")
            with open(lql_path, "w", encoding="utf-8") as f:
                f.write(lql.to_text(program)[0])
            with open(os.path.join(work, "prog.dl"), "w", encoding="utf-8") as f:
                f.write(text)
            for p in program.preds:
                if p.file_rows is not None:
                    with open(os.path.join(work, p.file_name), "w", encoding="utf-8") as f:
                        f.write(lql.input_file_text(p))
            r1 = subprocess.run([a.redfox, "run", "--backend=cpu", lql_path, "--output", os.path.join(work, "A")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            if r1.returncode != 0:
                skipped += 1
                continue
            r2 = subprocess.run([a.redfox, "run", "--backend=cpu", os.path.join(work, "prog.dl"), "-F", work,
                                 "-D", os.path.join(work, "B")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            problems = []
            if r2.returncode != 0:
                problems.append("the .dl run failed (exit %d): %s" % (r2.returncode,
                                                                     r2.stderr.decode("utf-8", "replace")[:2000]))
            else:
                for name in outputs:
                    pa = os.path.join(work, "A", name + ".tsv")
                    pb = os.path.join(work, "B", name + ".csv")
                    if not os.path.exists(pb):
                        problems.append("%s: no %s.csv" % (name, name))
                    elif sorted_lines(pa) != sorted_lines(pb):
                        problems.append("%s: rows differ" % name)
            compared += 1
            if problems:
                failed.append(pseed)
                print("FAIL program seed %d:\n  %s\n---- prog.dl\n%s" % (pseed, "\n  ".join(problems), text))
                if a.keep:
                    shutil.copytree(work, os.path.join(a.keep, str(pseed)))
    print("%d compared, %d skipped, %d failed" % (compared, skipped, len(failed)))
    if compared * 2 < a.count:
        print("FAIL: fewer than half of the programs were compared")
        sys.exit(1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
