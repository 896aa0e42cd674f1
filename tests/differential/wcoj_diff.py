#!/usr/bin/env python3
"""Worst-case-optimal joins against binary joins and a brute-force oracle.

Random cyclic queries (triangle, 4-cycle, 5-cycle, 4-clique, diamond and
random patterns, with constants, repeated variables, filters, ternary
atoms, negated atoms, projections and expressions in the head) over random
small graphs. Each program runs with --join=binary and --join=wcoj: the
outputs must be byte-identical, and equal to what a brute-force evaluator
here computes; the wcoj run must really use a MultiJoin (explain --plan).
It also runs with --join=auto three times: as it chooses, and with
RF_WCOJ_AUTO_RATIO=0 and =1e30, which force the run-time choice to the
multiway join and to the binary plan; each output must be byte-identical
to the binary one, and --stats must report the forced branch.
Known triangle counts are checked on graphs whose count is computed here
by another method (adjacency-set intersection). Each program is also run
counting rows (keyless count()s): of q (no output), of qa, the bindings of
q's positive atoms (its head their variables in order of appearance), and
of q's body written in the aggregate (the distinct bindings of all its
variables), which a MULTIJOIN counts without making them
(`MULTIJOIN[..., count]`); each count must be the oracle's, with --join=wcoj, --join=auto and
RF_WCOJ_COUNT=0 (the bindings made and counted); so must the triangle
counts with the listing not an output.

    wcoj_diff.py --redfox build/redfox [--count N] [--seed S] [--backend cpu|gpu]
                 [--env NAME=VALUE]... [--jobs J]

With --backend gpu and no usable device it says so and exits 0 (skipped).
--env sets variables for the redfox runs (RF_GPU_LFTJ_BUDGET=1 forces the
GPU join's rounds down to single bindings; RF_GPU_LFTJ=host its host path).
"""
import argparse
import concurrent.futures
import itertools
import os
import random
import subprocess
import sys
import tempfile

RELS = {"e": 2, "f": 2, "t": 3}


def random_graph(rng):
    n = rng.randint(3, 9)
    m = rng.randint(n, 3 * n)
    edges = set()
    for _ in range(m):
        x, y = rng.randint(0, n), rng.randint(0, n)
        edges.add((x, y))
        if rng.random() < 0.6:
            edges.add((y, x))   # often both directions: more cycles
    return sorted(edges)


def pattern(rng):
    """A cyclic edge pattern over variables 0..k-1: a list of (u, v)."""
    kind = rng.choice(["triangle", "cycle4", "cycle5", "clique4", "diamond", "random"])
    if kind == "triangle":
        return [(0, 1), (1, 2), (0, 2)]
    if kind == "cycle4":
        return [(0, 1), (1, 2), (2, 3), (3, 0)]
    if kind == "cycle5":
        return [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    if kind == "clique4":
        return [(a, b) for a, b in itertools.combinations(range(4), 2)]
    if kind == "diamond":
        return [(1, 2), (0, 1), (0, 2), (1, 3), (2, 3)]
    k = rng.randint(3, 5)
    ring = [(i, (i + 1) % k) for i in range(k)]
    extra = [(a, b) for a, b in itertools.combinations(range(k), 2) if rng.random() < 0.3]
    return ring + extra


def make_query(rng):
    """Returns (atoms, negs, filters, head): atoms/negs are (rel, args) with
    args variable names or int constants; filters python-evaluable and
    Datalog-printable pairs; head a list of (text, pyexpr)."""
    edges = pattern(rng)
    k = max(max(e) for e in edges) + 1
    names = ["v%d" % i for i in range(k)]
    atoms = []
    for (a, b) in edges:
        rel = rng.choice(["e", "e", "f"])
        if rng.random() < 0.3:
            a, b = b, a
        atoms.append((rel, [names[a], names[b]]))
    if rng.random() < 0.25:   # a ternary atom over three of the variables
        vs = rng.sample(names, 3)
        atoms.append(("t", vs))
    if rng.random() < 0.2:    # a constant
        atoms.append(("e", [rng.choice(names), rng.randint(0, 4)]))
    if rng.random() < 0.15:   # a repeated variable
        v = rng.choice(names)
        atoms.append(("f", [v, v]))
    rng.shuffle(atoms)
    negs = []
    if rng.random() < 0.2:
        negs.append(("f", rng.sample(names, 2)))
    filters = []
    for _ in range(rng.randint(0, 2)):
        a, b = rng.sample(names, 2)
        op = rng.choice(["<", "!=", "<=", "<", "= 1 +"])   # `a = 1 + b`: an equality, not an assignment
        filters.append((a, op, b))
    head_vars = names[:]
    if rng.random() < 0.3 and len(head_vars) > 3:
        head_vars.remove(rng.choice(head_vars))
    head = [(v, v) for v in head_vars]
    if rng.random() < 0.2:
        a, b = rng.sample(names, 2)
        head.append(("%s + %s" % (a, b), "%s + %s" % (a, b)))
    return atoms, negs, filters, head


def program_text(graph, tern, fset, q):
    atoms, negs, filters, head = q
    lines = ["e(x, y) -> int32(x), int32(y).", "f(x, y) -> int32(x), int32(y).",
             "t(x, y, z) -> int32(x), int32(y), int32(z).",
             "q(%s) -> %s." % (", ".join("c%d" % i for i in range(len(head))),
                               ", ".join("int32(c%d)" % i for i in range(len(head)))),
             "@output(q)."]
    for (x, y) in graph:
        lines.append("e(%d, %d)." % (x, y))
    for (x, y) in fset:
        lines.append("f(%d, %d)." % (x, y))
    for row in tern:
        lines.append("t(%d, %d, %d)." % row)
    body = ["%s(%s)" % (r, ", ".join(str(a) for a in args)) for r, args in atoms]
    body += ["!%s(%s)" % (r, ", ".join(str(a) for a in args)) for r, args in negs]
    body += ["%s %s %s" % f for f in filters]
    lines.append("q(%s) <- %s." % (", ".join(h for h, _ in head), ", ".join(body)))
    return "\n".join(lines) + "\n"


def oracle(graph, tern, fset, q):
    atoms, negs, filters, head = q
    data = {"e": set(graph), "f": set(fset), "t": set(tern)}
    names = sorted({a for _, args in atoms for a in args if isinstance(a, str)})
    out = set()

    def extend(i, env):
        if i == len(atoms):
            for r, args in negs:
                if tuple(env[a] for a in args) in data[r]:
                    return
            for a, op, b in filters:
                x, y = env[a], env[b]
                if not {"<": x < y, "!=": x != y, "<=": x <= y, "= 1 +": x == 1 + y}[op]:
                    return
            out.add(tuple(eval(p, {}, dict(env)) for _, p in head))
            return
        r, args = atoms[i]
        for row in data[r]:
            env2 = dict(env)
            ok = True
            for a, v in zip(args, row):
                if isinstance(a, int):
                    ok = a == v
                elif a in env2:
                    ok = env2[a] == v
                else:
                    env2[a] = v
                if not ok:
                    break
            if ok:
                extend(i + 1, env2)

    assert names
    extend(0, {})
    return out


ENV = dict(os.environ)


def run(redfox, prog, join, backend, extra=(), env=None):
    r = subprocess.run([redfox, "run", prog, "--join=" + join, "--backend=" + backend] + list(extra),
                       capture_output=True, text=True, timeout=120, env=dict(ENV, **(env or {})))
    return r.returncode, r.stdout, r.stderr


# --join=auto with the ratio forcing each branch: (RF_WCOJ_AUTO_RATIO, the
# branch --stats must report where the first join makes any row)
FORCED = (("0", "wcoj"), ("1e30", "binary"))


def auto_problem(redfox, prog, backend, binary_out):
    """None, or what went wrong with --join=auto on prog; also returns the
    branches that ran (for the summary)."""
    ran = set()
    for ratio, want in ((None, None),) + FORCED:
        rc, out, err = run(redfox, prog, "auto", backend, ["--stats"],
                           {"RF_WCOJ_AUTO_RATIO": ratio} if ratio else None)
        if rc != 0:
            return "--join=auto (ratio %s): exit %d: %s" % (ratio, rc, err.strip()), ran
        if out != binary_out:
            return "--join=auto (ratio %s) and binary outputs differ" % ratio, ran
        for line in err.splitlines():
            if "join choice" in line:
                got = line.rsplit("-> ", 1)[1].split()[0]
                first = int(line.split("first join ")[1].split()[0])
                ran.add(got)
                if want and first > 0 and got != want:
                    return "RF_WCOJ_AUTO_RATIO=%s ran %s, not %s" % (ratio, got, want), ran
    return None, ran


def parse_rows(text, pred):
    rows, cur = set(), None
    for line in text.splitlines():
        if line.startswith("# "):
            cur = line.split()[1]
            continue
        if cur == pred and line:
            rows.add(tuple(int(x) for x in line.split("\t")))
    return rows


def count_problem(a, prog, graph, tern, fset, q, counted):
    """Counting rows must give the oracle's count: of q's rows (q no output)
    and of the bindings of q's positive atoms (qa, its head their variables
    in order of appearance: a MULTIJOIN's listing, which it counts)."""
    atoms = q[0]
    names = []
    for _, args in atoms:
        for x in args:
            if isinstance(x, str) and x not in names:
                names.append(x)
    want_q = len(oracle(graph, tern, fset, q))
    want_a = len(oracle(graph, tern, fset, (atoms, [], [], [(v, v) for v in names])))
    want_d = len(oracle(graph, tern, fset, (atoms, q[1], q[2], [(v, v) for v in names])))
    with open(prog) as fh:
        text = fh.read().replace("@output(q).", "nq[] = n -> int64(n).\nna[] = n -> int64(n).\n"
                                 "nd[] = n -> int64(n).\nqa(%s) -> %s.\n@output(nq).\n@output(na).\n"
                                 "@output(nd).\n" %
                                 (", ".join(names), ", ".join("int32(%s)" % v for v in names)))
    body = ["%s(%s)" % (r, ", ".join(str(x) for x in args)) for r, args in atoms]
    text += "qa(%s) <- %s.\n" % (", ".join(names), ", ".join(body))
    text += "nq[] = n <- agg<<n = count()>> q(%s).\n" % ", ".join("c%d" % i for i in range(len(q[3])))
    text += "na[] = n <- agg<<n = count()>> qa(%s).\n" % ", ".join(names)
    # the count of the body's bindings, the body written in the aggregate
    body += ["!%s(%s)" % (r, ", ".join(str(x) for x in args)) for r, args in q[1]]
    body += ["%s %s %s" % f for f in q[2]]
    text += "nd[] = n <- agg<<n = count()>> %s.\n" % ", ".join(body)
    cprog = prog[:-4] + "_count.lql"
    with open(cprog, "w") as fh:
        fh.write(text)
    ir = subprocess.run([a.redfox, "explain", "--ir", cprog, "--join=wcoj"], capture_output=True, text=True).stdout
    counted[0] += ", count]" in ir
    for join, env in (("wcoj", None), ("auto", None), ("binary", None), ("wcoj", {"RF_WCOJ_COUNT": "0"})):
        rc, out, err = run(a.redfox, cprog, join, a.backend, env=env)
        got = (parse_rows(out, "nq"), parse_rows(out, "na"), parse_rows(out, "nd"))
        if rc != 0 or got != ({(want_q,)}, {(want_a,)}, {(want_d,)}):
            return "its row counts (--join=%s%s): %s, expected %d, %d and %d %s" % (
                join, " RF_WCOJ_COUNT=0" if env else "", got, want_q, want_a, want_d, err.strip())
    return None


def triangle_count(graph):
    adj = {}
    for x, y in graph:
        if x != y:
            adj.setdefault(x, set()).add(y)
            adj.setdefault(y, set()).add(x)
    n = 0
    for x in adj:
        for y in adj[x]:
            if y > x:
                n += sum(1 for z in adj[x] & adj[y] if z > y)
    return n


def check_program(a, tmp, i, graph, fset, tern, q):
    """One random program: (problem or None, planned a MultiJoin, the
    branches --join=auto ran, counted by a MULTIJOIN)."""
    prog = os.path.join(tmp, "q%d.lql" % i)
    with open(prog, "w") as fh:
        fh.write(program_text(graph, tern, fset, q))
    plan = subprocess.run([a.redfox, "explain", "--plan", prog, "--join=wcoj"], capture_output=True,
                          text=True).stdout
    rb, ob, eb = run(a.redfox, prog, "binary", a.backend)
    rw, ow, ew = run(a.redfox, prog, "wcoj", a.backend)
    expect = oracle(graph, tern, fset, q)
    problem, ran, counted = None, set(), [0]
    if rb != 0 or rw != 0:
        problem = "exit %d / %d: %s %s" % (rb, rw, eb.strip(), ew.strip())
    elif ob != ow:
        problem = "binary and wcoj outputs differ"
    elif parse_rows(ow, "q") != expect:
        problem = "outputs differ from the oracle's %d rows" % len(expect)
    elif "MultiJoin" not in plan:
        problem = "--join=wcoj planned no MultiJoin"
    else:
        problem, ran = auto_problem(a.redfox, prog, a.backend, ob)
    if not problem:
        problem = count_problem(a, prog, graph, tern, fset, q, counted)
    if problem:
        problem = "FAIL program %d (seed %d): %s\n%s" % (i, a.seed, problem, open(prog).read())
    return problem, "MultiJoin" in plan, ran, counted[0]


def check_triangles(a, tmp, tri_count, i):
    """The known triangle count of random graph i, six ways: the failures' lines."""
    graph = random_graph(random.Random(a.seed * 1000 + i))
    path = os.path.join(tmp, "g%d.tsv" % i)
    with open(path, "w") as fh:
        fh.writelines("%d\t%d\n" % e for e in graph)
    fails = []
    for prog, join, env in [(a.triangles, "wcoj", None), (a.triangles, "auto", None),
                            (a.triangles, "binary", None), (tri_count, "wcoj", None),
                            (tri_count, "auto", None), (tri_count, "wcoj", {"RF_WCOJ_COUNT": "0"})]:
        rc, out, err = run(a.redfox, prog, join, a.backend, ["--input", "edge=" + path], env)
        got = parse_rows(out, "ntriangles")
        want = {(triangle_count(graph),)}
        if rc != 0 or got != want:
            fails.append("FAIL triangle count of graph %d (%s, --join=%s%s): %s, expected %s %s" %
                         (i, os.path.basename(prog), join, " RF_WCOJ_COUNT=0" if env else "", got, want,
                          err.strip()))
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=1,
                    help="programs checked at once (each run is a redfox process; default 1)")
    ap.add_argument("--triangles", default=os.path.join(os.path.dirname(__file__), "..", "..", "programs",
                                                        "triangles.lql"))
    a = ap.parse_args()
    for kv in a.env:
        k, _, v = kv.partition("=")
        ENV[k] = v
    if a.backend == "gpu" and a.jobs > 1:
        # processes sharing one device: each would map half the memory it
        # finds free into its pool at start (docs/design.md), and eight
        # starting together ran the device out of memory
        ENV.setdefault("RF_CUDA_POOL_PRIME", "off")
    if a.backend == "gpu":
        rc, _, err = run(a.redfox, a.triangles, "wcoj", "gpu")
        if rc != 0:
            print("skipped: no usable GPU (%s)" % err.strip().splitlines()[-1] if err.strip() else "?")
            return 0
    rng = random.Random(a.seed)
    # every program drawn first, in order, so a seed names the same
    # programs whatever --jobs is
    problems = []
    for i in range(a.count):
        graph = random_graph(rng)
        fset = random_graph(rng)
        tern = sorted({(rng.randint(0, 6), rng.randint(0, 6), rng.randint(0, 6)) for _ in range(12)})
        problems.append((i, graph, fset, tern, make_query(rng)))
    failures = 0
    used_multijoin = 0
    auto_ran = {"wcoj": 0, "binary": 0}
    counted = 0
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        # the triangle count with the listing no output: counted bindings
        tri_count = os.path.join(tmp, "triangle_count.lql")
        with open(a.triangles) as fh, open(tri_count, "w") as out:
            out.write(fh.read().replace("@output(triangle).", ""))
        results = pool.map(lambda t: check_program(a, tmp, t[0], t[1], t[2], t[3], t[4]), problems)
        for problem, multijoin, ran, n_counted in results:
            used_multijoin += multijoin
            counted += n_counted
            for b in ran:
                auto_ran[b] += 1
            if problem:
                failures += 1
                print(problem)
        # known triangle counts, by another method
        for fails in pool.map(lambda i: check_triangles(a, tmp, tri_count, i), range(10)):
            failures += len(fails)
            for line in fails:
                print(line)
        if counted == 0:
            failures += 1
            print("FAIL no program counted its bindings in a MULTIJOIN")
        # both branches of --join=auto's choice must have run on some program
        for b, n in auto_ran.items():
            if n == 0:
                failures += 1
                print("FAIL --join=auto never ran its %s branch" % b)
    print("%d programs (%d with a MultiJoin, %d counted by one; --join=auto ran wcoj on %d, binary on %d), "
          "10 triangle counts, %d failed" % (a.count, used_multijoin, counted, auto_ran["wcoj"],
                                              auto_ran["binary"], failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
