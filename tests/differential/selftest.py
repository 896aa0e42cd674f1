#!/usr/bin/env python3
"""Hand-checked cases for the oracle (and the printer), so the differential
suite's reference is itself tested. Each expected answer below was worked
out by hand. Run: python3 selftest.py  (exit 0 = all good)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lql import (Pred, Var, Const, Wild, Bin, Atom, Compare, Assign, Rule,  # noqa: E402
                 Program, to_text, format_value, parse_field)
import lql     # noqa: E402
import gen     # noqa: E402
import oracle  # noqa: E402

x, y, z, n, d, s = (Var(c) for c in "xyznds")
failures = []


def check(name, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (name, got, want))


def prog(preds, rules):
    p = Program()
    p.preds = preds
    p.rules = rules
    return p


def pred(name, types, facts=(), functional=False):
    p = Pred(name, types, functional)
    p.facts = list(facts)
    return p


# Transitive closure of the chain 1->2->3->4 plus a cycle 5<->6.
edge = pred("edge", ["int32", "int32"], [(1, 2), (2, 3), (3, 4), (5, 6), (6, 5)])
path = pred("path", ["int32", "int32"])
for nonlinear in (False, True):
    second = Atom("path", [y, z]) if nonlinear else Atom("edge", [y, z])
    r = oracle.evaluate(prog([edge, path], [
        Rule("path", [x, y], [Atom("edge", [x, y])]),
        Rule("path", [x, z], [Atom("path", [x, y]), second])]))
    check("tc nonlinear=%s" % nonlinear, r["path"],
          {(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4), (5, 6), (6, 5), (5, 5), (6, 6)})

# Thesis Listing 3.1: even/odd by mutual recursion over next.
number = pred("number", ["int32"], [(i,) for i in range(6)])
nxt = pred("next", ["int32", "int32"], [(i, i + 1) for i in range(5)])
even = pred("even", ["int32"], [(0,)])
odd = pred("odd", ["int32"])
m = Var("m")
r = oracle.evaluate(prog([number, nxt, even, odd], [
    Rule("even", [n], [Atom("number", [n]), Atom("next", [m, n]), Atom("odd", [m])]),
    Rule("odd", [n], [Atom("next", [m, n]), Atom("even", [m])])]))
check("even", r["even"], {(0,), (2,), (4,)})
check("odd", r["odd"], {(1,), (3,), (5,)})

# Out-degree by count with a wildcard; keyless count/total over empty input.
deg = pred("deg", ["int32", "int64"], functional=True)
empty = pred("empty", ["int32"])
cnt = pred("cnt", ["int64"], functional=True)
tot = pred("tot", ["int32"], functional=True)
v = Var("v")
r = oracle.evaluate(prog([edge, empty, deg, cnt, tot], [
    Rule("deg", [x, n], [Atom("edge", [x, Wild()])], agg=("count", n, None)),
    Rule("cnt", [n], [Atom("empty", [v])], agg=("count", n, None)),
    Rule("tot", [n], [Atom("empty", [v])], agg=("total", n, v))]))
check("out-degree", r["deg"], {(1, 1), (2, 1), (3, 1), (5, 1), (6, 1)})
check("count over empty", r["cnt"], {(0,)})
check("total over empty", r["tot"], set())

# total counts distinct bindings of ALL body variables: x=1 has y in {2,3}
# both with weight 10, so total(w) is 20, not 10.
wt = pred("wt", ["int32", "int32", "int32"], [(1, 2, 10), (1, 3, 10), (2, 2, 5)])
sm = pred("sm", ["int32", "int32"], functional=True)
mx = pred("mx", ["int32", "int32"], functional=True)
w = Var("w")
r = oracle.evaluate(prog([wt, sm, mx], [
    Rule("sm", [x, n], [Atom("wt", [x, y, w])], agg=("total", n, w)),
    Rule("mx", [x, n], [Atom("wt", [x, y, w])], agg=("min", n, y))]))
check("total distinct bindings", r["sm"], {(1, 20), (2, 5)})
check("min", r["mx"], {(1, 2), (2, 2)})

# Several aggregates in one rule: count/total/avg over bindings (x=1: two
# bindings of weight 10), min/max/count_distinct over values; avg is the
# exact total rounded once, then divided. Keyless over nothing: zeros when
# every aggregate counts, else no row.
multi = pred("multi", ["int32", "int64", "int32", "float64", "int64", "int32"])
r0, r1, r2, r3, r4 = (Var("r%d" % i) for i in range(5))
big = pred("big", ["int64"], [(9223372036854775807,), (9223372036854775806,), (5,)])
bavg = pred("bavg", ["float64"])
zc = pred("zc", ["int64", "int64"])
za = pred("za", ["int64", "float64"])
r = oracle.evaluate(prog([wt, multi, big, bavg, empty, zc, za], [
    Rule("multi", [x, r0, r1, r2, r3, r4], [Atom("wt", [x, y, w])],
         agg=[("count", r0, None), ("total", r1, w), ("avg", r2, w), ("count_distinct", r3, w),
              ("max", r4, y)]),
    Rule("bavg", [r0], [Atom("big", [v])], agg=[("avg", r0, v)]),
    Rule("zc", [r0, r1], [Atom("empty", [v])], agg=[("count", r0, None), ("count_distinct", r1, v)]),
    Rule("za", [r0, r1], [Atom("empty", [v])], agg=[("count", r0, None), ("avg", r1, v)])]))
check("several aggregates", r["multi"], {(1, 2, 20, 10.0, 1, 3), (2, 1, 5, 5.0, 1, 2)})
check("avg of big ints", r["bavg"], {(float(2 * 9223372036854775806 + 6) / 3,)})
check("keyless counts over empty", r["zc"], {(0, 0)})
check("keyless avg over empty", r["za"], set())
check("multi agg text", lql.rule_text(Rule("zc", [r0, r1], [Atom("empty", [v])],
                                           agg=[("count", r0, None), ("count_distinct", r1, v)]),
                                      prog([empty, zc], [])),
      "zc(r0, r1) <- agg<<r0 = count(), r1 = count_distinct(v)>> empty(v).")

# @order / @limit: the written rows (order columns with their directions,
# then the rest ascending; strings by code point, 'Z' < 'a'), then cut.
op = pred("op", ["string", "int32"])
rows = {("pear", 1), ("apple", 2), ("pear", 0), ("Zebra", 2)}
check("typed order", lql.output_rows(op, rows), [("Zebra", 2), ("apple", 2), ("pear", 0), ("pear", 1)])
op.order = [(0, True)]
check("desc strings, ties ascending", lql.output_rows(op, rows),
      [("pear", 0), ("pear", 1), ("apple", 2), ("Zebra", 2)])
op.order = [(1, True), (0, False)]
op.limit = 3
check("desc int, limit", lql.output_rows(op, rows), [("Zebra", 2), ("apple", 2), ("pear", 1)])
op.limit = 0
check("limit 0", lql.output_rows(op, rows), [])
op.output = True
op.limit = 10
text = to_text(prog([op], []))[0]
check("order text", [l for l in text.splitlines() if l.startswith("@")],
      ["@output(op).", "@order(op, desc(v1), v0).", "@limit(op, 10)."])


# int32 edges (checked: these fit), C division and remainder, int32+int64 promotion.
nums = pred("nums", ["int32", "int32"], [(2147483646, 1), (-7, 2), (7, -2), (-2147483647, -1)])
wide = pred("wide", ["int64"], [(3,)])
ar = pred("ar", ["int32", "int32", "int32", "int32"])
pr = pred("pr", ["int64"])
r = oracle.evaluate(prog([nums, wide, ar, pr], [
    Rule("ar", [x, Bin("+", x, y), Bin("/", x, y), Bin("%", x, y)], [Atom("nums", [x, y])]),
    Rule("pr", [d], [Atom("nums", [x, Const(1, "int32")]), Atom("wide", [z]),
                     Assign(d, Bin("+", x, z))])]))
check("int32 arithmetic", r["ar"], {
    (2147483646, 2147483647, 2147483646, 0),
    (-7, -5, -3, -1),
    (7, 5, -3, 1),
    (-2147483647, -2147483648, 2147483647, 0)})
check("int32+int64 promotes", r["pr"], {(2147483649,)})

# Checked arithmetic: a result outside the type is an Overflow (no wrap):
# 2147483647 + 1, INT_MIN / -1 (but INT_MIN % -1 is 0), int64 products.
for facts, expr, typ in [
        ([(2147483647, 1)], Bin("+", x, y), "int32"),
        ([(-2147483648, -1)], Bin("/", x, y), "int32"),
        ([(-2147483648, 1)], Bin("-", x, y), "int32"),
        ([(65536, 65536)], Bin("*", x, y), "int32"),
        ([(4294967296, 4294967296)], Bin("*", x, y), "int64")]:
    try:
        oracle.evaluate(prog([pred("ov", [typ, typ], facts), pred("ovq", [typ])], [
            Rule("ovq", [d], [Atom("ov", [x, y]), Assign(d, expr)])]))
        failures.append("overflow %r %s: no error" % (facts, expr.op))
    except oracle.Overflow:
        pass
r = oracle.evaluate(prog([pred("ov", ["int32", "int32"], [(-2147483648, -1)]), pred("ovq", ["int32"])], [
    Rule("ovq", [d], [Atom("ov", [x, y]), Assign(d, Bin("%", x, y))])]))
check("INT_MIN % -1", r["ovq"], {(0,)})

# Division by zero is a run-time error.
try:
    oracle.evaluate(prog([nums, pred("q", ["int32"])], [
        Rule("q", [d], [Atom("nums", [x, y]), Assign(d, Bin("/", x, Bin("-", y, y)))])]))
    failures.append("division by zero: no error")
except oracle.EvalError:
    pass

# Negation (also with a wildcard), comparisons, strings.
names = pred("names", ["string", "int32"], [("a", 1), ("b", 2), ("c", 3)])
banned = pred("banned", ["int32", "string"], [(2, "x")])
ok = pred("ok", ["string"])
r = oracle.evaluate(prog([names, banned, ok], [
    Rule("ok", [s], [Atom("names", [s, x]), Atom("banned", [x, Wild()], negated=True),
                     Compare("<", s, Const("c", "string"))])]))
check("negation+compare", r["ok"], {("a",)})

# Negation through recursion is reported.
try:
    oracle.evaluate(prog([names, ok, pred("bad", ["string"])], [
        Rule("ok", [s], [Atom("names", [s, x]), Atom("bad", [s], negated=True)]),
        Rule("bad", [s], [Atom("ok", [s])])]))
    failures.append("negation through recursion: not detected")
except oracle.NotStratified:
    pass

# Printing: precedence and negative literals, escapes.
e = Bin("-", x, Bin("-", y, Const(-3, "int32")))
p = prog([pred("t", ["int32", "string"], [(-1, 'q"\\\t\n')])], [])
text = to_text(p)[0]
check("fact text", text.splitlines()[1], 't(-1, "q\\"\\\\\\t\\n").')
from lql import expr_text  # noqa: E402
check("expr text", expr_text(e), "x - (y - (-3))")
check("expr text 2", expr_text(Bin("*", Bin("+", x, y), z)), "(x + y) * z")
check("output escape", format_value('a\tb\\c\n', "string"), "a\\tb\\\\c\\n")
check("output parse", parse_field("a\\tb\\\\c\\n", "string"), 'a\tb\\c\n')
for v, t in [("", "\\e"), ("#x#", "\\#x#"), ("\r", "\\r"), ("\\e", "\\\\e")]:
    check("output escape %r" % v, format_value(v, "string"), t)
    check("output parse %r" % t, parse_field(t, "string"), v)

# The generator's programs are all stratified and safe (oracle agrees).
for seed in range(300):
    g = gen.generate(seed)
    if g.expect == "compile_error":
        continue
    try:
        oracle.evaluate(g)
    except oracle.Overflow:
        pass  # edge values met by arithmetic: run.py expects the overflow
    except oracle.EvalError:
        if g.expect != "runtime_error":
            failures.append("seed %d: unexpected run-time error" % seed)
    except Exception as ex:  # noqa: BLE001
        failures.append("seed %d: %r" % (seed, ex))

# ---------------------------------------------------------------- typed (biz)
# Scalar semantics of docs/language.md, worked by hand.
import typed as T              # noqa: E402
import oracle_typed            # noqa: E402
import gen_biz                 # noqa: E402
from lql import Lit, Op, Call, Cond  # noqa: E402

day = T.parse_date_text
check("substr from 0", T.substr("abcdef", 0, 3), "ab")
check("substr before start", T.substr("abc", -1, 2), "")
check("substr clipped", T.substr("abc", 2, 100), "bc")
check("substr cuts a character", T.sbytes(T.substr("gr\u00fcn", 3, 1)), b"\xc3")
check("like no escape", T.like("a_b", "a\\_b"), False)
check("like _", T.like("ab", "_"), False)
check("like %", T.like("", "%"), True)
check("like bytes", T.like("\u00fc", "__"), True)
check("add_months clamps", T.format_date(T.add_months(day("1995-01-31"), 1)), "1995-02-28")
check("add_months leap", T.format_date(T.add_months(day("1996-01-31"), 1)), "1996-02-29")
check("add_years from Feb 29", T.format_date(T.add_months(day("1996-02-29"), 12)), "1997-02-28")
check("dec narrowing half away", T.convert(-2500, "decimal[3]", "decimal[0]"), -3)
check("dec narrowing", T.convert(1005, "decimal[3]", "decimal[1]"), 10)
# float64 -> decimal[s]: x * 10^s in float64 (2.675 * 100 is 267.5 there),
# then half away from zero; 1.005 * 100 is 100.49999999999999.
check("float to dec, one product", T.convert(2.675, "float64", "decimal[2]"), 268)
check("float to dec, one product 2", T.convert(1.005, "float64", "decimal[2]"), 100)
check("float to dec, half away", T.convert(0.125, "float64", "decimal[2]"), 13)
check("dec to int truncates", T.convert(-199, "decimal[2]", "int32"), -1)
check("dec text", (T.decimal_text(-5, 2), T.decimal_text(7, 0)), ("-0.05", "7"))
try:
    T.convert(92233720368547759, "int64", "decimal[2]")
    failures.append("int64 -> decimal[2] out of range: no error")
except T.EvalError as ex:
    check("int64 -> decimal range kind", ex.kind, "range")


def biz(preds, rules):
    p = prog(preds, rules)
    p.lang = "biz"
    return p


# decimals.lql's li: price * (1 - disc) is decimal[4], price * 0.5 decimal[3];
# a fraction literal meeting a decimal is exact (disc >= 0.06 - 0.01).
k, price, disc = Var("k"), Var("price"), Var("disc")
li = pred("li", ["int32", "decimal[2]", "decimal[2]"],
          [(1, 10000, 5), (2, 1250, 6), (3, 700, 10), (4, 123456, 4)])
rev = pred("rev", ["int32", "decimal[4]"])
half = pred("half", ["int32", "decimal[3]"])
q6 = pred("q6", ["int32"])
r = oracle.evaluate(biz([li, rev, half, q6], [
    Rule("rev", [k, Op("*", price, Op("-", Lit("int", 1), disc))], [Atom("li", [k, price, disc])]),
    Rule("half", [k, Op("*", price, Lit.frac("0.5"))], [Atom("li", [k, price, Wild()])]),
    Rule("q6", [k], [Atom("li", [k, Wild(), disc]),
                     Cond(Op(">=", disc, Op("-", Lit.frac("0.06"), Lit.frac("0.01")))),
                     Cond(Op("<=", disc, Op("+", Lit.frac("0.06"), Lit.frac("0.01"))))])]))
check("decimal product", r["rev"], {(1, 950000), (2, 117500), (3, 63000), (4, 11851776)})
check("decimal times fraction literal", r["half"], {(1, 50000), (2, 6250), (3, 3500), (4, 617280)})
check("exact fraction literals", r["q6"], {(1,), (2,)})

# total is exact (the language.md example), its overflow a fault; avg of
# decimals is the exact total over count * 10^s.
ti = pred("ti", ["int32"], [(2147483647,), (1,), (-5,)])
td = pred("td", ["decimal[2]"], [(T.DEC_MAX,), (1,)])
tq = pred("tq", ["int32"], functional=True)
tdq = pred("tdq", ["decimal[2]"], functional=True)
aq = pred("aq", ["float64"], functional=True)
av = pred("av", ["decimal[2]"], [(1,), (2,)])
r = oracle.evaluate(biz([ti, tq, av, aq], [
    Rule("tq", [v], [Atom("ti", [x])], agg=[("total", v, x)]),
    Rule("aq", [v], [Atom("av", [x])], agg=[("avg", v, x)])]))
check("exact total", r["tq"], {(2147483643,)})
check("avg of decimals", r["aq"], {(0.015,)})
try:
    oracle.evaluate(biz([td, tdq], [Rule("tdq", [v], [Atom("td", [x])], agg=[("total", v, x)])]))
    failures.append("decimal total overflow: no error")
except T.EvalError as ex:
    check("decimal total overflow kind", ex.kind, "dec_overflow")

# if() evaluates only the branch taken: a guarded division does not fault.
gz = pred("gz", ["int32", "int32"], [(9, 0), (9, 4)])
gq = pred("gq", ["int32", "int32"])
r = oracle.evaluate(biz([gz, gq], [
    Rule("gq", [x, Call("if", [Op("!=", y, Lit("int", 0)), Op("/", x, y), Lit("int", -1)])],
         [Atom("gz", [x, y])])]))
check("guarded division", r["gq"], {(9, -1), (9, 2)})

# The business generator's programs: well typed, and fault-free where they
# are meant to be (the boundary cases may fault: run.py checks those).
for seed in range(150):
    g = gen_biz.generate(seed)
    if g.expect == "compile_error":
        continue
    try:
        oracle.evaluate(g)
    except T.EvalError:
        if g.expect == "ok":
            failures.append("biz seed %d: unexpected run-time error" % seed)
    except Exception as ex:  # noqa: BLE001
        failures.append("biz seed %d: %r" % (seed, ex))

for f in failures:
    print("FAIL", f)
print("selftest: %d failures" % len(failures))
sys.exit(1 if failures else 0)
