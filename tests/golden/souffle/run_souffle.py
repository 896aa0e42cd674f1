#!/usr/bin/env python3
"""Tests of the Soufflé dialect (docs/souffle.md), run by ctest:

    run_souffle.py --redfox PATH twins|native|errors|cli

twins   every program of ../../../programs/*.lql that Soufflé can express
        has a twin NAME.dl here; both run on the same facts and must write
        byte-identical output files (the .lql's --output DIR/PRED.tsv, the
        .dl's -D DIR/PRED.csv), and the same set of them.
native  Soufflé programs of the kind its users write (native/*.dl:
        transitive closure, same generation, points-to analysis, a program
        with aggregates and strings), run as Soufflé users type it
        (`redfox run prog.dl -F in -D out`) on random facts written as
        Soufflé reads them; every output is compared with what a small
        Python oracle below computes independently (Soufflé itself is not
        installable here).
errors  a table of snippets, each one unsupported or wrong construct, and
        the exact `file:line:col: error: message` it must give.
cli     the command line: -F/-D spellings, -D -, IO=stdout, .printsize,
        outputs written whole or not at all, usage errors.
Ends with `N passed, M failed`; exit 1 if anything failed.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PROGRAMS = os.path.join(ROOT, "programs")
NATIVE = os.path.join(HERE, "native")

failures = []
passes = 0


def check(cond, what):
    global passes
    if cond:
        passes += 1
    else:
        failures.append(what)
        print("FAIL " + what)


def run(redfox, args, cwd=None, check_rc=None):
    p = subprocess.run([redfox] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if check_rc is not None and p.returncode != check_rc:
        print("  %s -> exit %d\n%s" % (" ".join(args), p.returncode, err))
    return p.returncode, out, err


# ---------------------------------------------------------------- twins

def test_twins(redfox):
    twins = sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".dl"))
    check(len(twins) >= 7, "twins: expected the 7 twins of programs/*.lql, found %d" % len(twins))
    for name in twins:
        lql = os.path.join(PROGRAMS, name + ".lql")
        check(os.path.exists(lql), "twins: %s.dl has no programs/%s.lql" % (name, name))
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "lql"), os.path.join(tmp, "dl")
            rc1, _, _ = run(redfox, ["run", lql, "--output", a], check_rc=0)
            rc2, _, _ = run(redfox, ["run", os.path.join(HERE, name + ".dl"), "-F",
                                     os.path.join(PROGRAMS, "data"), "-D", b], check_rc=0)
            check(rc1 == 0 and rc2 == 0, "twins: %s: both runs succeed" % name)
            if rc1 or rc2:
                continue
            got_a = sorted(f[:-4] for f in os.listdir(a))
            got_b = sorted(f[:-4] for f in os.listdir(b))
            check(got_a == got_b and got_a, "twins: %s: same outputs (%s vs %s)" % (name, got_a, got_b))
            for pred in got_a:
                with open(os.path.join(a, pred + ".tsv"), "rb") as fa, \
                        open(os.path.join(b, pred + ".csv"), "rb") as fb:
                    da, db = fa.read(), fb.read()
                check(da == db and da, "twins: %s: %s byte-identical (%d vs %d bytes)"
                      % (name, pred, len(da), len(db)))


# --------------------------------------------------------------- native

def fixpoint(rules, facts):
    """Naive evaluation: rules is a function from the current database to
    new tuples per relation; repeats until nothing changes."""
    db = {k: set(v) for k, v in facts.items()}
    while True:
        new = rules(db)
        changed = False
        for k, v in new.items():
            cur = db.setdefault(k, set())
            if not v <= cur:
                cur |= v
                changed = True
        if not changed:
            return db


def write_facts(path, rows, delim="\t"):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(delim.join(str(x) for x in r) + "\n")


def read_output(path, types, delim="\t"):
    rows = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(delim) if types else []
            row = []
            for t, x in zip(types, fields):
                row.append(int(x) if t == "n" else float(x) if t == "f" else x)
            rows.add(tuple(row))
    return rows


def oracle_tc(rng, d):
    edges = {(rng.randrange(40), rng.randrange(40)) for _ in range(90)}
    write_facts(os.path.join(d, "edge.facts"), sorted(edges))

    def rules(db):
        return {"path": {(x, y) for (x, z) in db["path"] for (z2, y) in db["edge"] if z == z2} | db["edge"]}
    db = fixpoint(rules, {"edge": edges, "path": set()})
    return {"path": ("nn", db["path"])}, {"path": len(db["path"])}


NAMES = ["ann", "bob", "cy", "dora", "eve", "fay", "gus", "hal", "ivy", "jan", "kim", "lou",
         "max", "ned", "oli", "pam", "quin", "ray", "sue", "tom", "una", "vic", "wes", "xia"]


def oracle_sg(rng, d):
    parents = set()
    people = NAMES[:]
    # a forest: each person after the first three has a parent before it
    for i in range(3, len(people)):
        parents.add((people[rng.randrange(i)], people[i]))
    for _ in range(6):
        i = rng.randrange(3, len(people))
        parents.add((people[rng.randrange(i)], people[i]))
    write_facts(os.path.join(d, "parent.facts"), sorted(parents))

    def rules(db):
        par = db["parent"]
        sg = {(x, y) for (p, x) in par for (q, y) in par if p == q and x != y}
        sg |= {(x, y) for (a, x) in par for (a2, b) in db["sg"] if a == a2 for (b2, y) in par if b == b2}
        return {"sg": sg}
    db = fixpoint(rules, {"parent": parents, "sg": set()})
    # kin: the equivalence classes of sg, every pair within a class
    cls = {}
    for x, y in sorted(db["sg"]):
        merged = cls.get(x, {x}) | cls.get(y, {y})
        for z in merged:
            cls[z] = merged
    kin = {(a, b) for members in cls.values() for a in members for b in members}
    return {"sg": ("ss", db["sg"]), "kin": ("ss", kin)}, {}


def oracle_points_to(rng, d):
    vs = ["v%d" % i for i in range(25)]
    hs = ["h%d" % i for i in range(8)]
    fs = ["f", "g"]
    alloc = {(rng.choice(vs), rng.choice(hs)) for _ in range(10)}
    assign = {(rng.choice(vs), rng.choice(vs)) for _ in range(20)}
    load = {(rng.choice(vs), rng.choice(vs), rng.choice(fs)) for _ in range(12)}
    store = {(rng.choice(vs), rng.choice(fs), rng.choice(vs)) for _ in range(12)}
    write_facts(os.path.join(d, "alloc.facts"), sorted(alloc))
    write_facts(os.path.join(d, "assign.facts"), sorted(assign))
    write_facts(os.path.join(d, "load.facts"), sorted(load))
    write_facts(os.path.join(d, "store.csv"), sorted(store), delim=",")

    def rules(db):
        vpt = set(alloc)
        vpt |= {(to, h) for (to, fr) in assign for (v, h) in db["vpt"] if v == fr}
        hpt = {(h1, f, h2) for (b, f, fr) in store for (v1, h1) in db["vpt"] if v1 == b
               for (v2, h2) in db["vpt"] if v2 == fr}
        vpt |= {(to, h2) for (to, b, f) in load for (v, h1) in db["vpt"] if v == b
                for (g1, f2, h2) in db["hpt"] if g1 == h1 and f2 == f}
        return {"vpt": vpt, "hpt": hpt}
    db = fixpoint(rules, {"vpt": set(), "hpt": set()})
    alias = {(a, b) for (a, h) in db["vpt"] for (b, h2) in db["vpt"] if h == h2 and a != b}
    return ({"vpt": ("ss", db["vpt"]), "alias": ("ss", alias, "alias.tsv")},
            {"hpt": len(db["hpt"])})


def oracle_payroll(rng, d):
    depts = ["eng", "ops", "sales", "exec"]
    units = depts + ["legal"]            # legal has nobody: count and sum 0
    emp = set()
    for n in NAMES + ["Jo", "Jake", "Anand", "Joanna"]:
        emp.add((n, rng.choice(depts), rng.randrange(1000, 9000, 50), rng.choice([1.0, 2.0, 2.5, 3.5, 4.0, 4.5])))
    write_facts(os.path.join(d, "emp.facts"), sorted(emp))
    write_facts(os.path.join(d, "unit.facts"), [(u,) for u in units])
    by = {u: [e for e in emp if e[1] == u] for u in units}
    out = {}
    out["headcount"] = ("sn", {(u, len(by[u])) for u in units})
    payroll = {u: sum(e[2] for e in by[u]) for u in units}
    out["payroll"] = ("sn", set(payroll.items()))
    top = {u: max(e[2] for e in by[u]) for u in units if by[u]}
    out["top"] = ("sn", set(top.items()))
    out["lowest"] = ("sn", {(u, min(e[2] for e in by[u])) for u in units if by[u]})
    out["avg_rating"] = ("sf", {(u, sum(e[3] for e in by[u]) / len(by[u])) for u in units if by[u]})
    best = {(e[1], e[0]) for e in emp if top.get(e[1]) == e[2]}
    out["best"] = ("ss", best)
    out["tag"] = ("ss", {(e[0], e[1] + "/" + e[0][0:3]) for e in emp})
    out["long_name"] = ("sn", {(e[0], len(e[0])) for e in emp if len(e[0]) > 5})
    out["has_an"] = ("s", {(e[0],) for e in emp if "an" in e[0]})
    out["j_name"] = ("s", {(e[0],) for e in emp if e[0].startswith("J")})
    out["staff"] = ("n", {(len(emp),)})
    out["raise"] = ("sn", {(e[0], e[2] + payroll[e[1]] // 100) for e in emp})
    out["rich"] = ("s", {(e[0],) for e in emp if e[2] >= 5000 or e[1] == "exec"})
    best_names = {b[1] for b in best}
    # rank: how many staff earn more (the aggregate takes s from outside)
    out["rank"] = ("sn", {(e[0], sum(1 for f in emp if f[2] > e[2])) for e in emp})
    out["unrated"] = ("s", {(e[0],) for e in emp if e[3] < 2.5 and e[0] not in best_names})
    out["label"] = ("ss", {(e[0], "%s#%d" % (e[0], e[2] - 5000)) for e in emp})
    out["digits"] = ("sn", {(e[0], int(str(e[2])[0:2]) + 1) for e in emp})
    return out, {}


def test_native(redfox):
    oracles = {"tc": oracle_tc, "sg": oracle_sg, "points_to": oracle_points_to, "payroll": oracle_payroll}
    for name, oracle in sorted(oracles.items()):
        for seed in (1, 2):
            rng = random.Random(seed)
            with tempfile.TemporaryDirectory() as tmp:
                facts, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
                os.mkdir(facts)
                expected, sizes = oracle(rng, facts)
                rc, stdout, _ = run(redfox, ["run", os.path.join(NATIVE, name + ".dl"), "-F", facts, "-D", out],
                                    check_rc=0)
                check(rc == 0, "native: %s (seed %d) runs" % (name, seed))
                if rc:
                    continue
                for pred, spec in sorted(expected.items()):
                    types, rows = spec[0], spec[1]
                    fname = spec[2] if len(spec) > 2 else pred + ".csv"
                    path = os.path.join(out, fname)
                    got = read_output(path, types) if os.path.exists(path) else None
                    if got is not None and "f" in types:
                        got = {tuple(round(x, 9) if isinstance(x, float) else x for x in r) for r in got}
                        rows = {tuple(round(x, 9) if isinstance(x, float) else x for x in r) for r in rows}
                    check(got == rows, "native: %s (seed %d): %s: %d rows expected, got %s%s"
                          % (name, seed, pred, len(rows), "no file" if got is None else len(got),
                             "" if got is None or got == rows else
                             " (missing %s, extra %s)" % (sorted(rows - got)[:3], sorted(got - rows)[:3])))
                want_sizes = "".join("%s\t%d\n" % kv for kv in sizes.items())
                check(stdout == want_sizes, "native: %s (seed %d): .printsize prints %r, got %r"
                      % (name, seed, want_sizes, stdout))
                check(len(os.listdir(out)) == len(expected),
                      "native: %s: only the .output files are written (%s)" % (name, sorted(os.listdir(out))))


# --------------------------------------------------------------- errors

DECLS = ".decl p(x: number)\n.decl q(x: number)\n"

# (program text, expected first error line; {f} is the file name)
ERRORS = [
    ("#include \"other.dl\"\n", "{f}:1:1: error: preprocessor directive '#include' is not supported: Soufflé "
     "runs the C preprocessor over its input and Red Fox does not; run `cpp -P` on the program first"),
    ("#define N 3\n", "{f}:1:1: error: preprocessor directive '#define' is not supported"),
    (".comp Graph {\n  .decl e(a: number)\n  e(1).\n}\n.decl p(x: number)\n",
     "{f}:1:1: error: '.comp': components (.comp) are not supported"),
    (".init g = Graph\n", "{f}:1:1: error: '.init': component instances (.init) are not supported"),
    (".type R = [a: number, b: number]\n", "{f}:1:11: error: '[': records ([...]) are not supported"),
    (DECLS + "p(x) :- q(x), y = [x, x], y = y.\n", "{f}:3:19: error: '[': records ([...]) are not supported"),
    (DECLS + "p(x) :- q(x), x = nil.\n", "{f}:3:19: error: 'nil': records (nil) are not supported"),
    (".type T = A {x: number} | B {}\n",
     "{f}:1:13: error: '{{': algebraic data types (.type T = Branch {{...}}) are not supported"),
    (DECLS + "p(x) :- q(x), x = $A(1).\n", "{f}:3:19: error: '$': '$' (autoincrement, or an algebraic data "
     "type's branch $Name(...)) is not supported"),
    (DECLS + "p(x) :- q(y), x = $.\n", "{f}:3:19: error: '$'"),
    (DECLS + "p(x) :- q(y), x = autoinc().\n", "{f}:3:19: error: 'autoinc' is not supported"),
    (".decl p(x: number) choice-domain x\n",
     "{f}:1:20: error: 'choice-domain': choice-domain is not supported"),
    (".functor f(x: number): number\n",
     "{f}:1:1: error: '.functor': user-defined functors (.functor) are not supported"),
    (DECLS + "p(x) :- q(y), x = @f(y).\n",
     "{f}:3:19: error: '@': user-defined functors (@name(...)) are not supported"),
    (".pragma \"magic-transform\" \"*\"\n", "{f}:1:1: error: '.pragma': .pragma is not supported"),
    (DECLS + "p(x) :- q(x).\n.plan 0: (1)\n", "{f}:4:1: error: '.plan': query plans (.plan) are not supported"),
    (DECLS + "p(x) <= p(y) :- q(x), q(y), x < y.\n",
     "{f}:3:6: error: '<=': subsumptive rules (a <= b :- ...) are not supported"),
    (".decl p(x: number) inline\n", "{f}:1:20: error: 'inline': inline relations are not supported"),
    (".limitsize p(n=10)\n", "{f}:1:1: error: '.limitsize': .limitsize is not supported"),
    (".lattice L<number> {}\n", "{f}:1:1: error: '.lattice': lattices (.lattice) are not supported"),
    (".override r\n", "{f}:1:1: error: '.override': .override (components) is not supported"),
    (DECLS + "p(x) :- q(y), x = y band 1.\n", "{f}:3:21: error: 'band': bitwise and logical operators"),
    (DECLS + "p(x) :- q(y), x = y ^ 2.\n",
     "{f}:3:21: error: the power operator '^' is not supported (Red Fox has no exponentiation)"),
    (DECLS + "p(x) :- q(y), x = as(y, number).\n",
     "{f}:3:19: error: 'as': type casts as(x, T) are not supported"),
    (DECLS + "p(x) :- q(x), x = to_number(1).\n", "{f}:3:19: error: 'to_number' expects (string), found (int)"),
    (DECLS + "p(x) :- q(x), x = ord(\"a\").\n", "{f}:3:19: error: 'ord' is not supported"),
    (DECLS + "p(x) :- q(y), x = range(1, y).\n", "{f}:3:19: error: 'range' is not supported"),
    (DECLS + "p(x) :- q(y), x = foo(y).\n", "{f}:3:19: error: unknown functor 'foo'"),
    (".decl p(x: symbol)\np(s) :- p(s), match(\"[a-z]+\", s).\n",
     "{f}:2:21: error: match: only a constant pattern of plain characters, '.', '.*' and '.+' is supported"),
    (DECLS + ".input p(IO=sqlite, dbname=\"x.db\")\n", "{f}:3:21: error: unsupported parameter 'dbname' of .input"),
    (DECLS + ".input p(IO=stdin)\n", "{f}:3:13: error: IO=stdin is not supported (supported: file)"),
    (DECLS + ".input p(delimiter=\"|\")\n",
     "{f}:3:20: error: unsupported delimiter for .input: Red Fox reads tab- and comma-separated facts only"),
    (DECLS + ".output p(headers=true)\n", "{f}:3:11: error: unsupported parameter 'headers' of .output"),
    (DECLS + ".output r\n", "{f}:3:9: error: unknown relation 'r'"),
    (".decl p(x: blah)\n", "{f}:1:12: error: unknown type 'blah'"),
    (".type U = number | symbol\n.decl p(x: U)\n",
     "{f}:1:20: error: union type 'U' mixes number and symbol values: Red Fox unions need one base type"),
    (".type A <: B\n.type B <: A\n.decl p(x: A)\n", "{f}:1:7: error: type 'A' is defined in terms of itself"),
    (".decl p(x: number) output\n", "{f}:1:20: error: 'output' as a qualifier of .decl is not supported"),
    (".decl p(x: number, y: symbol) eqrel\n",
     "{f}:1:31: error: 'eqrel' needs a binary relation whose two attributes have one type"),
    (DECLS + "p(x) :- q(x), n = count : { q(y) ; q(x) }, n > 1.\n",
     "{f}:3:19: error: ';' (disjunction) inside an aggregate's body is not supported"),
    (DECLS + "p(x) :- x = count : { q(y), y < z }, z = count : { q(_) }.\n",
     "{f}:3:13: error: variable 'z' is used in the aggregate and outside it, but neither an atom inside "
     "the aggregate nor the rest of the body (without its aggregates) binds it"),
    (DECLS + "p(x) :- x = count : { q(z) }, z < 1.\n",
     "{f}:3:13: error: variable 'z' of the aggregate is not bound outside it"),
    (DECLS + "p(n) :- n = sum y : { q(y), c = count : { q(_) }, c > 0 }.\n",
     "{f}:3:13: error: count or sum inside another aggregate's body is not supported"),
    (DECLS + "p(count : { q(_) }).\n", "{f}:3:1: error: an aggregate in a fact is not supported"),
    (DECLS + "p(x) :- q(x), contains(\"a\").\n", "{f}:3:15: error: 'contains' takes 2 arguments, found 1"),
    (DECLS + "p(x) :- q(x)\n", "{f}:3:13: error: syntax error: unexpected end of input, expected '.' or ';'"),
    (DECLS + "p(x) :- q(x) r(x).\n", "{f}:3:14: error: syntax error: unexpected 'r'"),
    (DECLS + "p(x) :- !(x = 1), q(x).\n", "{f}:3:13: error: syntax error: unexpected '=', expected ')' or an operator"),
    (".type T\n.decl p(x: T)\n", "{f}:1:7: error: .type T needs '<: base' or '= types'"),
    (DECLS + "p(x) :- q(y), x = max(" + ", ".join(["y"] * 16) + ").\n",
     "{f}:3:19: error: this max(...) expands into more than 4096 operations"),
    (DECLS + "p(x) :- q(y), x = cat(" + ", ".join(['"a"'] * 250) + ").\n",
     "{f}:3:19: error: expression nested too deeply (more than 200 levels)"),
    (DECLS + "p(x), q(x) :- " + "(p(x) ; q(x)), " * 10 + "p(x).\n",
     "{f}:3:1: error: this rule expands into more than 1024 rules (heads times disjuncts)"),
    (DECLS + "p(x) :- " + "(p(x) ; q(x)), " * 11 + "p(x).\n",
     "{f}:3:160: error: this body expands into more than 1024 disjuncts (each ';' multiplies them)"),
    # the checker's errors come through with Soufflé locations
    (DECLS + "p(x) :- q(y).\n", "{f}:3:3: error: head variable 'x' is not bound in the body"),
    (DECLS + "p(x) :- q(x), !p(x).\n", "{f}:3:15: error: negation through recursion: p -> p"),
    (DECLS + "p(x) :- q(x), r(x).\n", "{f}:3:15: error: unknown predicate 'r'"),
    (".decl p(x: number)\n.decl s(x: symbol)\np(x) :- s(x).\n",
     "{f}:3:3: error: type mismatch: expected int64, found string"),
    (DECLS + ".decl p(x: symbol)\n", "{f}:3:7: error: relation 'p' is declared twice"),
]


def test_errors(redfox):
    with tempfile.TemporaryDirectory() as tmp:
        for i, (text, want) in enumerate(ERRORS):
            name = "e%02d.dl" % i
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
            rc, out, err = run(redfox, ["check", name], cwd=tmp)
            first = next((l for l in err.splitlines() if ": error: " in l), "")
            want = want.format(f=name)
            check(rc == 1 and first.startswith(want),
                  "errors: %r\n  wanted (exit 1) %s\n  got (exit %d) %s" % (text, want, rc, first or err))


# ------------------------------------------------------------------ cli

def test_cli(redfox):
    with tempfile.TemporaryDirectory() as tmp:
        facts = os.path.join(tmp, "facts")
        os.mkdir(facts)
        write_facts(os.path.join(facts, "edge.facts"), [(1, 2), (2, 3)])
        prog = os.path.join(tmp, "tc.dl")
        with open(prog, "w") as f:
            f.write(".decl edge(x: number, y: number)\n.input edge\n"
                    ".decl path(x: number, y: number)\n.output path\n.printsize edge\n"
                    "path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n")
        want = "1\t2\n1\t3\n2\t3\n"
        for i, args in enumerate([["-F", facts, "-D", "o%d"], ["-F" + facts, "-Do%d"],
                                  ["--fact-dir=" + facts, "--output-dir=o%d"],
                                  ["--fact-dir", facts, "--output-dir", "o%d"]]):
            args = [a.replace("%d", str(i)) for a in args]
            rc, out, err = run(redfox, ["run", prog] + args, cwd=tmp)
            path = os.path.join(tmp, "o%d" % i, "path.csv")
            got = open(path).read() if os.path.exists(path) else None
            check(rc == 0 and got == want and out == "edge\t2\n",
                  "cli: %s writes path.csv and prints the size (exit %d, %r, %r, %s)" % (args, rc, got, out, err))
        # defaults: facts and outputs in the current folder
        shutil.copy(os.path.join(facts, "edge.facts"), os.path.join(tmp, "edge.facts"))
        rc, out, err = run(redfox, ["run", "tc.dl"], cwd=tmp)
        check(rc == 0 and open(os.path.join(tmp, "path.csv")).read() == want,
              "cli: default -F and -D are the current folder (%d %s)" % (rc, err))
        # -D - prints as Soufflé does
        rc, out, err = run(redfox, ["run", prog, "-F", facts, "-D", "-"], cwd=tmp)
        check(out == "---------------\npath\n===============\n" + want + "===============\nedge\t2\n",
              "cli: -D - prints Soufflé's block, got %r" % out)
        # IO=stdout, filename=, delimiter=
        with open(os.path.join(tmp, "io.dl"), "w") as f:
            f.write(".decl edge(x: number, y: number)\n.input edge(IO=file, filename=\"e.csv\", delimiter=\",\")\n"
                    ".output edge(IO=stdout)\n.output edge(filename=\"sub.txt\", delimiter=\";\")\n")
        write_facts(os.path.join(facts, "e.csv"), [(5, 6), (7, 8)], delim=",")
        rc, out, err = run(redfox, ["run", "io.dl", "-F", facts, "-D", "o9"], cwd=tmp)
        sub = os.path.join(tmp, "o9", "sub.txt")
        check(rc == 0 and out == "---------------\nedge\n===============\n5\t6\n7\t8\n===============\n"
              and os.path.exists(sub) and open(sub).read() == "5;6\n7;8\n",
              "cli: IO=stdout, filename=, delimiter= (exit %d, %r, %s)" % (rc, out, err))
        # whole or nothing: a run-time error leaves no output file behind
        with open(os.path.join(tmp, "dz.dl"), "w") as f:
            f.write(".decl edge(x: number, y: number)\n.input edge\n.decl ok(x: number)\n.output ok\n"
                    ".decl bad(x: number)\n.output bad\nok(x) :- edge(x, _).\nbad(z) :- edge(x, y), z = x / (y - 3).\n")
        rc, out, err = run(redfox, ["run", "dz.dl", "-F", facts, "-D", "dz"], cwd=tmp)
        check(rc == 2 and "division by zero" in err and not os.path.exists(os.path.join(tmp, "dz")),
              "cli: a failed run writes no file and leaves no folder (exit %d, %s)" % (rc, err))
        os.mkdir(os.path.join(tmp, "dz2"))
        os.mkdir(os.path.join(tmp, "dz2", "bad.csv"))        # a folder in the way of one output
        rc, out, err = run(redfox, ["run", "dz.dl", "-F", facts, "-D", "dz2"], cwd=tmp)
        check(rc == 2 and sorted(os.listdir(os.path.join(tmp, "dz2"))) == ["bad.csv"],
              "cli: an output that cannot be written leaves the others unwritten (exit %d, %s, %s)"
              % (rc, err, os.listdir(os.path.join(tmp, "dz2"))))
        # a missing fact file names it
        rc, out, err = run(redfox, ["run", prog, "-F", os.path.join(tmp, "nowhere")], cwd=tmp)
        check(rc == 2 and "edge.facts" in err, "cli: missing fact file (exit %d, %s)" % (rc, err))
        # --count works on .dl programs too
        rc, out, err = run(redfox, ["run", prog, "-F", facts, "--count"], cwd=tmp)
        check(rc == 0 and out.startswith("# path (3 tuples, hash ") and out.count("\n") == 1, "cli: --count (%d %r %s)" % (rc, out, err))
        # -F/-D are for .dl programs
        lql = os.path.join(PROGRAMS, "tc.lql")
        rc, out, err = run(redfox, ["run", lql, "-D", "x"], cwd=tmp)
        check(rc == 64 and "are for Soufflé programs" in err, "cli: -D with a .lql is a usage error (%d)" % rc)
        rc, out, err = run(redfox, ["run", prog, "-F"], cwd=tmp)
        check(rc == 64 and "option -F needs a value" in err, "cli: -F without a value (%d, %s)" % (rc, err))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redfox", required=True)
    ap.add_argument("what", choices=["twins", "native", "errors", "cli"])
    a = ap.parse_args()
    {"twins": test_twins, "native": test_native, "errors": test_errors, "cli": test_cli}[a.what](
        os.path.abspath(a.redfox))
    print("%d passed, %d failed" % (passes, len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
