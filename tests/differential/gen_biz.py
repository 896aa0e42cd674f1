"""Random programs in the business-query language (docs/language.md):
date and decimal[s] columns next to int32, int64, float64, bool and string;
date arithmetic and calendar functions, decimal arithmetic with its scale
rules, conversions, string functions, if / && / || / not, expression
arguments of atoms, multi-aggregate rules over every type, @order/@limit.

`generate(seed)` builds an lql.Program (program.lang = "biz") from
random.Random(seed) only. Valid programs are fault-free BY CONSTRUCTION:
every expression is checked by an interval evaluation (`Abs`) over the
hull of the values each variable can take on ANY row (the planner may
evaluate an expression on a partial join, before another filter, or as a
join key), and rejected when some value in the box could overflow, divide
by zero, leave the date range, fail a checked conversion or give substr a
negative length. Float64 totals and averages only get values whose sum is
exact in any order (the engine adds in its row order).

Besides (program.expect):
  - "oracle": a boundary case appended (`boundary`): one rule evaluates a
    faulting-or-not expression (at the edge of int32, int64, decimal, the
    date range, a conversion, a zero divisor, a total) on every row of a
    small fact table, in its head, with nothing else in the body: the
    outcome is unambiguous and the oracle decides it (run-time error with
    exit 2 exactly when the oracle finds a fault, else the exact answer).
    Guarded cases (if(b != 0, a / b, 0), b != 0 && a / b > 1) are among
    them and must not fault;
  - "compile_error": one bad clause appended (`MUTATIONS`), the error line
    known.
"""

import random
from fractions import Fraction

import typed as T
from lql import (Pred, Var, Wild, Atom, Assign, Rule, Program, Lit, Op, Neg, Call, Paren, Cond,
                 TEST_FUNCTIONS)
import oracle_typed as OT

# ---------------------------------------------------------------- value pools

INT32_VALS = [-7, -3, -1, 0, 0, 1, 1, 2, 3, 5, 10, 42, 100, 1000]
INT32_EDGE = [2147483647, -2147483648, 65536, 1000000, -46341]
INT64_VALS = INT32_VALS + [5000000000, -4294967296]
INT64_EDGE = [9223372036854775807, -9223372036854775808, 3037000500, -9223372036854775807]
FLOAT_VALS = [-2.5, -1.0, 0.0, 0.25, 0.5, 1.0, 1.5, 3.75, 10.0, 100.0, 1024.5, 1e6]
FLOAT_INEXACT = [0.1, 0.3, 2.2, 1e-3, 1e20, -7.7]
DEC_TEXTS = ["-12.5", "0", "0.05", "0.06", "1", "7.25", "12.50", "100", "1234.56", "0.01",
             "-0.99", "99999.99", "2.5", "0.5", "-3"]
DATE_TEXTS = ["1992-01-01", "1994-01-01", "1995-01-31", "1995-03-15", "1996-02-29", "1996-12-31",
              "1997-06-30", "1998-12-01", "1970-01-01", "2000-02-29", "1999-12-31", "1995-03-31"]
DATE_EDGE = ["0001-01-01", "9999-12-31", "9999-12-15"]
STRINGS = ["PROMO BRUSHED BRASS", "forest green", "small", "a_b", "100%", "", "ab", "Ab", "abc",
           "x%y", "\u00fc", "gr\u00fcn", "tab\there", "#hash", "STANDARD TIN", "a", "BRASS"]
FILE_STRINGS = ["PROMO BRUSHED BRASS", "forest green", "small", "a_b", "100%", "ab", "Ab", "abc",
                "gr\u00fcn", "a", "BRASS"]
PATTERNS = ["%BRASS", "forest%", "%green%", "a_b", "a\\_b", "%", "_", "__", "sm_ll", "%a%", "100%",
            "%\u00fc%", "_\u00fc", "A%", "%%", "", "ab", "x%y", "%_"]
SCALES = [0, 1, 2, 2, 2, 2, 3, 4, 4, 6, 9, 12, 18]
COMPARISONS = ["=", "!=", "<", "<=", ">", ">="]
FQ = Fraction(1, 2 ** 16)      # float values that are multiples of this add exactly


def dec_words(s):
    """Decimal pool values exact at scale s and in range, as words."""
    out = []
    for t in DEC_TEXTS:
        w = Fraction(t) * 10 ** s
        if w.denominator == 1 and abs(w) <= T.DEC_MAX:
            out.append(int(w))
    return out or [0, 10 ** s]


POOLS = {}   # per program (Generator.__init__): a few values per type, so joins meet


def random_value(rng, t, plain=False, edge=0.08):
    pool = POOLS.get((t, plain))
    if pool and rng.random() < 0.8:
        return rng.choice(pool)
    return random_value1(rng, t, plain, edge)


def random_value1(rng, t, plain=False, edge=0.08):
    if t == "int32":
        return rng.choice(INT32_EDGE) if rng.random() < edge else rng.choice(INT32_VALS)
    if t == "int64":
        return rng.choice(INT64_EDGE) if rng.random() < edge else rng.choice(INT64_VALS)
    if t == "float64":
        return rng.choice(FLOAT_INEXACT) if rng.random() < 0.1 else rng.choice(FLOAT_VALS)
    if t == "bool":
        return rng.random() < 0.5
    if t == "string":
        return rng.choice(FILE_STRINGS if plain else STRINGS)
    if t == "date":
        return T.parse_date_text(rng.choice(DATE_EDGE) if rng.random() < edge / 2 else rng.choice(DATE_TEXTS))
    s = T.scale(t)
    if rng.random() < edge / 2:
        return rng.choice([T.DEC_MAX, -T.DEC_MAX, T.DEC_MAX // 7])
    return rng.choice(dec_words(s))


# ---------------------------------------------------------------- intervals

class MayFault(Exception):
    pass


class Abs:
    """What a value may be: its type, bounds (numbers, words, day numbers;
    None for strings and bools), whether a float is exact (a multiple of
    FQ, small), whether it is known nonzero (a guard)."""

    def __init__(self, typ, lo=None, hi=None, exact=False, nonzero=False, quantum=None):
        self.typ, self.lo, self.hi, self.exact, self.nonzero = typ, lo, hi, exact, nonzero
        # floats: a bound below every nonzero |value| (None: unknown);
        # ints, decimal words and dates: 1
        self.quantum = quantum if typ == "float64" else 1

    def has_bounds(self):
        return self.lo is not None

    def maxabs(self):
        return max(abs(self.lo), abs(self.hi))

    def __repr__(self):
        return "Abs(%s, %r, %r%s)" % (self.typ, self.lo, self.hi, ", exact" if self.exact else "")


def hull(a, b):
    if a is None:
        return b
    if not a.has_bounds() or not b.has_bounds():
        return Abs(a.typ)
    q = None if a.quantum is None or b.quantum is None else min(a.quantum, b.quantum)
    return Abs(a.typ, min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact, quantum=q)


def abs_of_values(t, vals):
    if t in ("string", "bool") or not vals:
        return Abs(t, 0, 0, True) if t not in ("string", "bool") else Abs(t)
    exact = all((Fraction(v) / FQ).denominator == 1 and abs(v) < 2 ** 20 for v in vals) \
        if t == "float64" else False
    nz = [abs(v) for v in vals if v != 0]
    return Abs(t, min(vals), max(vals), exact, quantum=min(nz) if nz else 1.0)


def exact_float(x):
    return (Fraction(x) / FQ).denominator == 1 and abs(x) < 2 ** 20


def aconv(m, frm, to):
    """A conversion applied to the bounds (every conversion is monotone)."""
    if frm == to or not m.has_bounds():
        return Abs(to, m.lo, m.hi, m.exact, m.nonzero) if frm == to else Abs(to)
    try:
        lo, hi = T.convert(m.lo, frm, to), T.convert(m.hi, frm, to)
    except T.EvalError:
        raise MayFault("conversion %s -> %s of %r" % (frm, to, m))
    exact = to == "float64" and exact_float(lo) and exact_float(hi) and \
        (frm in ("int32", "int64") or (frm == "float64" and m.exact))
    q = None
    if to == "float64":
        q = 1.0 if frm in ("int32", "int64") else 0.5 / 10 ** T.scale(frm) if T.is_dec(frm) else m.quantum
    # a nonzero int or decimal stays nonzero as a float or a wider decimal
    nz = m.nonzero and (to == "float64" or T.is_dec(to)) and frm != "float64"
    return Abs(to, lo, hi, exact, nz, quantum=q)


def checked(t, lo, hi, exact=False):
    if t == "float64":
        if max(abs(lo), abs(hi)) > 1e300:
            raise MayFault("float magnitude")
        return Abs(t, lo, hi, exact)
    if not (T.fits(t, lo) and T.fits(t, hi)):
        raise MayFault("%s [%r, %r]" % (t, lo, hi))
    return Abs(t, lo, hi)


def nonzero_guards(c, positive=True):
    """Variables known nonzero where condition c is true (positive) or false."""
    while isinstance(c, Paren):
        c = c.a
    if isinstance(c, Op):
        if positive and c.op == "&&":
            return nonzero_guards(c.a) | nonzero_guards(c.b)
        if not positive and c.op == "||":
            return nonzero_guards(c.a, False) | nonzero_guards(c.b, False)
        if c.op == ("!=" if positive else "="):
            a, b = c.a, c.b
            if isinstance(b, Var):
                a, b = b, a
            if isinstance(a, Var) and isinstance(b, Lit) and b.kind == "int" and b.value == 0:
                return {a.name}
    if isinstance(c, Call) and c.name == "not":
        return nonzero_guards(c.args[0], not positive)
    return set()


def refine(env, names):
    if not names:
        return env
    env = dict(env)
    for n in names:
        m = env[n]
        env[n] = Abs(m.typ, m.lo, m.hi, m.exact, True, m.quantum)
    return env


class AbsEval:
    """Interval evaluation mirroring oracle_typed.eval_as."""

    def __init__(self, vt):
        self.vt = vt

    def infer(self, e):
        return OT.infer(e, self.vt)

    def as_(self, e, want, env):
        t = T.concrete(self.infer(e), want)
        m = self.in_(e, t, env)
        if want is not None and t != want:
            m = aconv(m, t, want)
        return m

    def in_(self, e, t, env):
        if isinstance(e, Paren):
            return self.in_(e.a, t, env)
        if isinstance(e, Var):
            return env[e.name]
        if isinstance(e, Lit):
            v = OT.lit_value(e, t)
            if t in ("string", "bool"):
                return Abs(t)
            return Abs(t, v, v, t == "float64" and exact_float(v), v != 0,
                       quantum=abs(v) if v else 1.0)
        if isinstance(e, Neg):
            a = self.as_(e.a, t, env)
            if t == "float64":
                return checked(t, -a.hi, -a.lo, a.exact)
            return checked(t, -a.hi, -a.lo)
        if isinstance(e, Op):
            return self.op(e, t, env)
        if isinstance(e, Call):
            return self.call(e, t, env)
        raise TypeError(e)

    def op(self, e, t, env):
        op = e.op
        if op in ("&&", "||"):
            self.as_(e.a, "bool", env)
            self.as_(e.b, "bool", refine(env, nonzero_guards(e.a, op == "&&")))
            return Abs("bool")
        ta, tb = self.infer(e.a), self.infer(e.b)
        if op in OT.COMPARISONS:
            ct = T.concrete(T.compare_type(ta, tb))
            self.as_(e.a, ct, env)
            self.as_(e.b, ct, env)
            return Abs("bool")
        if "date" in (ta, tb):
            if ta == "date" and tb == "date":
                a, b = self.as_(e.a, "date", env), self.as_(e.b, "date", env)
                return Abs("int64", a.lo - b.hi, a.hi - b.lo)
            if ta == "date":
                d, n = self.as_(e.a, "date", env), self.as_(e.b, "int64", env)
            else:
                n, d = self.as_(e.a, "int64", env), self.as_(e.b, "date", env)
            if op == "-":
                n = Abs("int64", -n.hi, -n.lo)
            return checked("date", d.lo + n.lo, d.hi + n.hi)
        if op == "*" and T.is_dec(t):
            sa, sb = T.scale(ta), T.scale(tb)
            a, b = self.as_(e.a, T.dec(sa), env), self.as_(e.b, T.dec(sb), env)
            c = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
            return aconv(checked(T.dec(sa + sb), min(c), max(c)), T.dec(sa + sb), t)
        if op in ("/", "%") and T.is_dec(t) and self.infer(e) == "intlit":
            a, b = self.as_(e.a, "int64", env), self.as_(e.b, "int64", env)
            if b.lo <= 0 <= b.hi:
                raise MayFault("literal divisor 0")
            m = a.maxabs()
            return aconv(checked("int64", -m, m), "int64", t)
        a, b = self.as_(e.a, t, env), self.as_(e.b, t, env)
        if op in ("+", "-"):
            lo, hi = (a.lo + b.lo, a.hi + b.hi) if op == "+" else (a.lo - b.hi, a.hi - b.lo)
            return checked(t, lo, hi, a.exact and b.exact and t == "float64" and
                           exact_float(lo) and exact_float(hi))
        if op == "*":
            c = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
            return checked(t, min(c), max(c))
        # / and %: the divisor must not be 0
        zero_in = b.lo <= 0 <= b.hi
        if zero_in and not b.nonzero:
            raise MayFault("divisor may be 0")
        if t == "float64":
            if zero_in:
                if b.quantum is None:
                    raise MayFault("guarded float divisor of unknown magnitude")
                m = a.maxabs() / b.quantum
                return checked(t, -m, m) if op == "/" else checked(t, -a.maxabs(), a.maxabs())
            if op == "/":
                c = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
                return checked(t, min(c), max(c))
            m = min(a.maxabs(), b.maxabs())
            return checked(t, -m, m)
        lo_t = T.INT_RANGE[t][0]
        if op == "/":
            if a.lo == lo_t and b.lo <= -1 <= b.hi:
                raise MayFault("MIN / -1")
            m = a.maxabs()
            return checked(t, -m, m)
        m = min(a.maxabs(), max(b.maxabs() - 1, 0))
        return checked(t, -m, m)

    def call(self, e, t, env):
        name, args = e.name, e.args
        if name in ("int32", "int64", "float64", "decimal"):
            x = args[0]
            while isinstance(x, Paren):
                x = x.a
            xt = self.infer(x)
            if isinstance(x, Lit) and (xt == "intlit" or (T.is_frac(xt) and (
                    t == "float64" or (T.is_dec(t) and T.scale(xt) <= T.scale(t))))):
                return self.in_(x, t, env)
            frm = T.concrete(xt, T.dec(T.scale(xt)) if T.is_frac(xt) and T.is_dec(t) else None)
            return aconv(self.as_(x, frm, env), frm, t)
        if name == "if":
            c = args[0]
            self.as_(c, "bool", env)
            a = self.as_(args[1], t, refine(env, nonzero_guards(c, True)))
            b = self.as_(args[2], t, refine(env, nonzero_guards(c, False)))
            if not a.has_bounds() or not b.has_bounds():
                return Abs(t)
            return hull(a, b)
        if name == "not":
            self.as_(args[0], "bool", env)
            return Abs("bool")
        kinds, _ = OT.FUNCTIONS[name]
        ms = [self.as_(a, OT.KIND_TYPE[k], env) for a, k in zip(args, kinds)]
        if name in ("year", "month", "day"):
            d = ms[0]
            if name == "year":
                return Abs("int32", T.date_from_days(d.lo).year, T.date_from_days(d.hi).year)
            return Abs("int32", 1, 12 if name == "month" else 31)
        if name == "add_days":
            return checked("date", ms[0].lo + ms[1].lo, ms[0].hi + ms[1].hi)
        if name in ("add_months", "add_years"):
            d, n = ms
            k = 12 if name == "add_years" else 1
            if max(abs(n.lo), abs(n.hi)) * k > 120000:
                raise MayFault("months")
            lo = d.lo + min(n.lo * k * 31, n.lo * k * 28) - 4
            hi = d.hi + max(n.hi * k * 31, n.hi * k * 28) + 4
            return checked("date", lo, hi)
        if name == "substr":
            if ms[2].lo < 0:
                raise MayFault("substr length may be negative")
            return Abs("string")
        if name == "strlen":
            return Abs("int64", 0, 10 ** 6)
        return Abs(t)


# ---------------------------------------------------------------- rule builder

NUM_TYPES_BASE = ["int32", "int64", "float64"]


class Builder:
    """One rule body: bound variables with their types and Abs."""

    def __init__(self, gen):
        self.gen = gen
        self.rng = gen.rng
        self.body = []
        self.vt = {}        # variable -> type
        self.env = {}       # variable -> Abs
        self.atom_vars = []
        self.counter = 0
        self.size = 1       # bound on the number of bindings

    def fresh(self):
        self.counter += 1
        return "v%d" % self.counter

    def vars_of(self, t):
        return sorted(v for v, vt in self.vt.items() if vt == t and not v.startswith("$"))

    def types_bound(self):
        return sorted(set(t for v, t in self.vt.items()))

    def abs_ok(self, e, want=None):
        """Abs of e as want, or None when it may fault (or is ill typed)."""
        try:
            return AbsEval(self.vt).as_(e, want, self.env)
        except MayFault:
            return None
        except (T.TypeErr, OT.GenBug, KeyError):
            return None

    # -- atoms -------------------------------------------------------------

    def add_atom(self, pred, allow_wild=True, allow_expr=True):
        rng = self.rng
        args = []
        for col, t in enumerate(pred.types):
            roll = rng.random()
            existing = [v for v in self.vars_of(t) if v not in self.assigned()]
            if existing and roll < 0.3:
                v = rng.choice(existing)
                # a join: the variable's expressions may be evaluated on
                # either atom's rows (a filter on one atom runs before the join)
                self.env[v] = hull(self.env[v], pred.meta[col])
                args.append(Var(v))
            elif roll < 0.35 and (pred.facts or pred.file_rows):
                rows = list(pred.facts) + list(pred.file_rows or ())
                v = rng.choice(rows)[col]
                args.append(self.gen.literal_for(v, t))
            elif allow_wild and roll < 0.45:
                args.append(Wild())
            elif allow_expr and roll < 0.47 and self.vt:
                e = self.expr_for_column(t)
                args.append(e if e is not None else self.bind_fresh(t, pred.meta[col]))
            else:
                args.append(self.bind_fresh(t, pred.meta[col]))
        self.body.append(Atom(pred.name, args))
        self.size *= max(1, pred.size)

    def assigned(self):
        return set(l.var.name for l in self.body if isinstance(l, Assign))

    def bind_fresh(self, t, meta):
        v = self.fresh()
        self.vt[v] = t
        self.env[v] = meta
        self.atom_vars.append(v)
        return Var(v)

    def expr_for_column(self, t):
        """An expression argument `r(y + 1)`: compared with the column in
        the wider type (the column's values are cast too: checked by the
        caller through the equality's Abs)."""
        if self.rng.random() < 0.6:
            e = self.gen.identity_expr(self, t)
            if e is not None:
                return e
        e = self.gen.expr(self, t if t != "bool" else "bool", depth=1)
        if e is None or isinstance(e, (Var, Lit)):
            return None
        return e

    def add_negation(self, pred):
        rng = self.rng
        args = []
        for col, t in enumerate(pred.types):
            roll = rng.random()
            existing = self.vars_of(t)
            if existing and roll < 0.65:
                args.append(Var(rng.choice(existing)))
            elif roll < 0.75:
                args.append(self.gen.literal_for(random_value(rng, t), t))
            elif roll < 0.85 and self.vt:
                e = self.gen.expr(self, t, depth=1, widen=True)
                if isinstance(e, Var) and self.vt[e.name] != t:
                    e = Op("+", e, Lit("int", 0))    # !p(x + 0) widens x
                args.append(e if e is not None and self.abs_ok(e, t) else Wild())
            else:
                args.append(Wild())
        self.body.append(Atom(pred.name, args, negated=True))

    def check_atom_exprs(self):
        """Expression arguments of positive atoms become $k = expr
        filters: drop the ones whose comparison may fault."""
        for lit in self.body:
            if isinstance(lit, Atom) and not lit.negated:
                types = self.gen.program.pred(lit.pred).types
                for i, a in enumerate(lit.args):
                    if isinstance(a, (Var, Lit, Wild)):
                        continue
                    meta = self.gen.program.pred(lit.pred).meta[i]
                    tmp = "$t"
                    self.vt[tmp], self.env[tmp] = types[i], meta
                    ok = self.abs_ok(Op("=", Var(tmp), a), "bool")
                    del self.vt[tmp], self.env[tmp]
                    if ok is None:
                        lit.args[i] = Wild()


class Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.program = Program()
        self.program.lang = "biz"
        self.level = {}
        POOLS.clear()
        rng = self.rng
        for t in ["int32", "int64", "float64", "string", "date"] + [T.dec(s) for s in sorted(set(SCALES))]:
            for plain in (False, True):
                POOLS[(t, plain)] = [random_value1(rng, t, plain) for _ in range(rng.choice([3, 4, 5, 6]))]

    # -- literals ------------------------------------------------------------

    def literal_for(self, v, t):
        """A literal that is exactly value v of column type t (in an atom)."""
        if t == "string":
            return Lit("string", v)
        if t == "bool":
            return Lit("bool", v)
        if t == "date":
            return Lit.date(T.format_date(v))
        if t in ("int32", "int64"):
            return Lit("int", v)
        if t == "float64":
            if v == int(v) and abs(v) < 2 ** 31 and self.rng.random() < 0.3:
                return Lit("int", int(v))
            r = repr(v)
            return Lit("float", v, r) if "e" in r else Lit.frac(r)
        s = T.scale(t)
        text = T.decimal_text(v, s)
        if s == 0:
            return Lit("int", v)
        return Lit.frac(text)

    def num_literal(self, t, small=True):
        """A literal meant to meet a value of type t."""
        rng = self.rng
        if t in ("int32", "int64"):
            return Lit("int", rng.choice([0, 1, 2, 3, 7, 10, -1, -2, 100] if small else INT32_VALS))
        if t == "float64":
            r = rng.random()
            if r < 0.3:
                return Lit("int", rng.choice([0, 1, 2, 10, -3]))
            if r < 0.45:
                text = rng.choice(["1e3", "2.5e-1", "1e-3", "5e0"])
                return Lit("float", float(text), text)
            return Lit.frac(rng.choice(["0.5", "1.25", "2.0", "0.1", "100.00", "3.75"]))
        if T.is_dec(t):
            s = T.scale(t)
            r = rng.random()
            if r < 0.35 or s == 0:
                return Lit("int", rng.choice([v for v in [0, 1, 2, 3, 7, 10, -1] if abs(v) * 10 ** s <= T.DEC_MAX]))
            cands = [x for x in ["0.5", "0.05", "0.06", "1.25", "0.01", "12.50", "2.5", "0.1", "100.00"]
                     if len(x.partition(".")[2]) <= s and Fraction(x) * 10 ** s <= T.DEC_MAX]
            return Lit.frac(rng.choice(cands)) if cands else Lit("int", 1)
        if t == "date":
            return Lit.date(rng.choice(DATE_TEXTS))
        if t == "string":
            return Lit("string", rng.choice(STRINGS))
        if t == "bool":
            return Lit("bool", rng.random() < 0.5)
        raise ValueError(t)

    # -- expressions -----------------------------------------------------------

    def expr(self, b, t, depth=0, widen=False, allow_lit=False):
        """A random expression of type t over b's variables, fault-free on
        every row (None when no try worked). widen: a narrower type that
        widens to t is fine too."""
        for _ in range(6):
            st = t
            if widen and T.is_num(t):
                st = self.rng.choice([x for x in self.narrower(t)] + [t, t])
            e = self.build(b, st, depth, allow_lit)
            if e is None:
                continue
            try:
                ty = OT.infer(e, b.vt)
            except (T.TypeErr, OT.GenBug):
                continue
            if T.is_flex(ty) and not allow_lit:
                continue
            if not OT.assignable(e, ty, t):
                continue
            if b.abs_ok(e, t) is None:
                continue
            return e
        return None

    def identity_expr(self, b, t):
        """An expression equal to a variable, in another form or type (a
        join on a computed key: y + 0, int64(y), decimal[4](y), d + 0,
        concat(s, "")), comparable with type t."""
        rng = self.rng
        if T.is_num(t):
            vs = [v for v, u in b.vt.items() if T.is_num(u) and not v.startswith("$")]
        else:
            vs = [v for v, u in b.vt.items() if u == t and not v.startswith("$")]
        if not vs:
            return None
        y = Var(rng.choice(sorted(vs)))
        u = b.vt[y.name]
        if T.is_num(u):
            forms = [Op("+", y, Lit("int", 0)), Op("*", y, Lit("int", 1)), Op("-", y, Lit("int", 0)),
                     Call("float64", [y]), Call("decimal", [y], scale=rng.choice([2, 4])),
                     Neg(Neg(y)), Call("if", [Lit("bool", True), y, y])]
            if u in ("int32", "int64"):
                forms += [Call("int64", [y]), Op("/", y, Lit("int", 1)), Op("*", y, Lit.frac("1.0"))]
        elif u == "date":
            forms = [Op("+", y, Lit("int", 0)), Call("add_days", [y, Lit("int", 0)]),
                     Call("add_months", [y, Lit("int", 0)]), Op("-", Op("+", y, Lit("int", 3)), Lit("int", 3))]
        elif u == "string":
            forms = [Call("concat", [y, Lit("string", "")]), Call("substr", [y, Lit("int", 1), Lit("int", 1000)]),
                     Call("concat", [Call("substr", [y, Lit("int", 1), Lit("int", 1)]),
                                     Call("substr", [y, Lit("int", 2), Lit("int", 1000)])])]
        elif u == "bool":
            forms = [Call("not", [Call("not", [y])]), Op("&&", y, Lit("bool", True))]
        else:
            return None
        e = rng.choice(forms)
        return e if b.abs_ok(e) is not None else None

    def narrower(self, t):
        if t == "int64":
            return ["int32"]
        if t == "float64":
            return ["int32", "int64", "decimal[2]", "decimal[0]"]
        if T.is_dec(t):
            s = T.scale(t)
            return ["int32"] + [T.dec(x) for x in range(max(0, s - 2), s)]
        return []

    def leaf(self, b, t, allow_lit):
        rng = self.rng
        vs = b.vars_of(t)
        if rng.random() < 0.3 or not vs:
            # a narrower variable: widened where it meets t
            vs = vs + [v for n in self.narrower(t) for v in b.vars_of(n)]
        if vs and (rng.random() < 0.85 or not allow_lit):
            return Var(rng.choice(vs))
        if allow_lit or t in ("string", "bool", "date"):
            return self.num_literal(t)
        # a typed value without a variable: a conversion of another number
        nums = [v for v, vt in b.vt.items() if T.is_num(vt) and not v.startswith("$")]
        if nums and rng.random() < 0.7:
            x = Var(rng.choice(sorted(nums)))
            return Call("decimal", [x], scale=T.scale(t)) if T.is_dec(t) else Call(t, [x])
        if t == "float64":
            return Call("float64", [Lit("int", rng.choice([1, 2, -3]))])
        if T.is_dec(t):
            return Call("decimal", [self.num_literal(t)], scale=T.scale(t))
        return Call(t, [Lit("int", rng.choice([0, 1, 5, -2]))])

    def operand(self, b, t, depth):
        """An operand: a subexpression or, now and then, a literal or an
        expression of literals only (typed by what it meets)."""
        r = self.rng.random()
        if r < 0.06 and T.is_num(t):
            x, y = self.num_literal(t), self.num_literal(t)
            return Paren(Op(self.rng.choice(["+", "-", "*", "/", "%"]), x, y))
        if r < 0.3:
            return self.num_literal(t) if T.is_num(t) or t in ("date", "string", "bool") else None
        return self.build(b, t, depth + 1, False)

    def build(self, b, t, depth, allow_lit=False):
        rng = self.rng
        if depth >= 3 or rng.random() < 0.3:
            return self.leaf(b, t, allow_lit)
        if t == "bool":
            return self.bool_expr(b, depth)
        choices = ["if"] + {
            "int32": ["arith", "arith", "div", "neg", "cal", "cast"],
            "int64": ["arith", "arith", "div", "strlen", "datediff", "cast", "neg"],
            "float64": ["arith", "fdiv", "mixfrac", "cast", "neg", "fmod"],
            "date": ["dateadd", "dateadd", "months"],
            "string": ["substr", "substr", "concat"],
        }.get(t, ["decarith", "decarith", "decmul", "decmul", "cast", "neg"])
        kind = rng.choice(choices)
        if kind == "if":
            c = self.bool_expr(b, depth + 1)
            x = self.build(b, t, depth + 1)
            y = self.operand(b, t, depth) if rng.random() < 0.5 else self.build(b, t, depth + 1)
            if c is None or x is None or y is None:
                return None
            if rng.random() < 0.5:
                x, y = y, x
            return Call("if", [c, x, y])
        if kind == "arith":
            op = rng.choice(["+", "-", "*"])
            other = t if t != "int64" or rng.random() < 0.5 else "int32"
            x, y = self.build(b, t, depth + 1), self.operand(b, other, depth)
            if rng.random() < 0.5:
                x, y = y, x
            return None if x is None or y is None else Op(op, x, y)
        if kind == "div":
            x = self.build(b, t, depth + 1)
            if x is None:
                return None
            op = rng.choice(["/", "%"])
            r = rng.random()
            if r < 0.4:
                return Op(op, x, Lit("int", rng.choice([1, 2, 3, 7, -1, -2])))
            ints = b.vars_of(t)
            if not ints:
                return None
            y = Var(rng.choice(ints))
            if r < 0.7:   # guarded: if(y != 0, x / y, alt)
                alt = self.operand(b, t, depth) or Lit("int", 0)
                return Call("if", [Op("!=", y, Lit("int", 0)), Op(op, x, y), alt])
            return Op(op, x, Op("+", Op("*", y, Var(y.name)), Lit("int", 1)))
        if kind == "neg":
            x = self.build(b, t, depth + 1)
            return None if x is None else Neg(x)
        if kind == "cal":
            d = self.build(b, "date", depth + 1)
            return None if d is None else Call(rng.choice(["year", "month", "day"]), [d])
        if kind == "cast":
            src = rng.choice(["int32", "int64", "float64", "decimal[2]", "decimal[0]", "decimal[4]"] +
                             [x for x in b.types_bound() if T.is_num(x)])
            if src == t:
                return None
            x = self.build(b, src, depth + 1)
            if x is None:
                return None
            if T.is_dec(t):
                return Call("decimal", [x], scale=T.scale(t))
            return Call(t, [x])
        if kind == "strlen":
            s = self.build(b, "string", depth + 1)
            return None if s is None else Call("strlen", [s])
        if kind == "datediff":
            x, y = self.build(b, "date", depth + 1), self.build(b, "date", depth + 1)
            return None if x is None or y is None else Op("-", x, y)
        if kind == "fdiv":
            src = rng.choice(["float64", "decimal[2]", "int32", "decimal[1]"] +
                             [x for x in b.types_bound() if T.is_num(x)])
            x = self.build(b, src, depth + 1)
            other = rng.choice(["float64", src, "int64"] if src != "int32" and src != "int64"
                               else ["float64", "decimal[2]"])
            if x is None:
                return None
            if rng.random() < 0.4:
                y = self.num_literal(other if other != "int64" else "float64")
                if isinstance(y, Lit) and y.value == 0:
                    y = Lit.frac("0.5")
            else:
                yv = [v for v in b.vars_of(other)]
                if not yv:
                    return None
                y = Var(rng.choice(yv))
                if rng.random() < 0.6:
                    return Call("if", [Op("!=", y, Lit("int", 0)), Op("/", x, y),
                                       self.operand(b, "float64", depth) or Lit.frac("0.0")])
            return Op("/", x, y)
        if kind == "fmod":
            x = self.build(b, "float64", depth + 1)
            return None if x is None else Op("%", x, Lit.frac(rng.choice(["2.5", "0.75", "3.0"])))
        if kind == "mixfrac":
            src = rng.choice(["int32", "int64"])
            x = self.build(b, src, depth + 1)
            if x is None:
                return None
            y = Lit.frac(rng.choice(["0.5", "1.25", "0.1", "2.0"]))
            op = rng.choice(["+", "-", "*"])
            return Op(op, x, y) if rng.random() < 0.5 else Op(op, y, x)
        if kind == "dateadd":
            d = self.build(b, "date", depth + 1)
            n = self.operand(b, rng.choice(["int32", "int64"]), depth)
            if d is None or n is None:
                return None
            if isinstance(n, Lit) and n.kind != "int":
                n = Lit("int", 30)
            form = rng.randrange(4)
            if form == 0:
                return Op("+", d, n)
            if form == 1:
                return Op("+", n, d)
            if form == 2:
                return Op("-", d, n)
            return Call("add_days", [d, n])
        if kind == "months":
            d = self.build(b, "date", depth + 1)
            n = Lit("int", rng.choice([1, -1, 2, 12, -13, 3, 0, 25])) if rng.random() < 0.7 else \
                self.build(b, "int32", depth + 1)
            if d is None or n is None:
                return None
            return Call(rng.choice(["add_months", "add_years"]), [d, n])
        if kind == "substr":
            s = self.build(b, "string", depth + 1)
            start = Lit("int", rng.choice([1, 1, 2, 3, 0, -1, 5])) if rng.random() < 0.7 else \
                self.build(b, "int32", depth + 1)
            ln = Lit("int", rng.choice([0, 1, 2, 3, 10])) if rng.random() < 0.7 else \
                self.build(b, "int64", depth + 1)
            if s is None or start is None or ln is None:
                return None
            return Call("substr", [s, start, ln])
        if kind == "concat":
            x = self.build(b, "string", depth + 1)
            y = self.operand(b, "string", depth)
            return None if x is None or y is None else Call("concat", [x, y])
        if kind == "decarith":
            s = T.scale(t)
            op = rng.choice(["+", "-"])
            x = self.build(b, t, depth + 1)
            other = rng.choice([t, "int32", "int64"] + [T.dec(k) for k in range(max(0, s - 2), s)])
            y = self.operand(b, other, depth)
            if rng.random() < 0.5:
                x, y = y, x
            return None if x is None or y is None else Op(op, x, y)
        if kind == "decmul":
            s = T.scale(t)
            s1 = rng.randint(0, s)
            x = self.build(b, T.dec(s1), depth + 1)
            if s - s1 == 0 and rng.random() < 0.5:
                y = self.operand(b, rng.choice(["int32", "int64"]), depth)
            elif rng.random() < 0.3 and s - s1 > 0:
                y = Lit.frac("0." + "0" * (s - s1 - 1) + rng.choice("15"))
                y = Lit.frac(rng.choice([y.text, "1." + "0" * (s - s1 - 1) + "5"]))
            else:
                y = self.build(b, T.dec(s - s1), depth + 1)
            if x is None or y is None:
                return None
            return Op("*", x, y) if rng.random() < 0.5 else Op("*", y, x)
        return None

    def bool_expr(self, b, depth=0):
        rng = self.rng
        if depth >= 3:
            vs = b.vars_of("bool")
            return Var(rng.choice(vs)) if vs else Lit("bool", rng.random() < 0.95)
        kind = rng.choice(["cmp", "cmp", "cmp", "cmp", "str", "str", "and", "or", "not", "guard",
                           "boolvar", "eqjoin", "eqjoin"])
        if kind == "eqjoin":
            # a variable against another one in another form: a join key on
            # a computed column, or a filter
            vs = sorted(v for v in b.vt if not v.startswith("$"))
            if not vs:
                return None
            x = Var(rng.choice(vs))
            y = self.identity_expr(b, b.vt[x.name])
            if y is None:
                return None
            return Op("=", x, y) if rng.random() < 0.5 else Op("=", y, x)
        if kind == "cmp":
            types = b.types_bound() or ["int32"]
            t = rng.choice(types)
            if t == "bool":
                t = rng.choice(types)
            op = rng.choice(COMPARISONS + ["!=", "<=", ">="])
            x = self.build(b, t, depth + 1)
            if T.is_num(t):
                other = rng.choice([t, t, "int32", "int64", "float64", "decimal[2]", "decimal[1]"] +
                                   [x for x in types if T.is_num(x)])
            else:
                other = t
            y = self.operand(b, other, depth) if rng.random() < 0.6 else self.build(b, other, depth + 1)
            if x is None or y is None:
                return None
            if rng.random() < 0.5:
                x, y = y, x
            return Op(op, x, y)
        if kind == "str":
            s = self.build(b, "string", depth + 1) if b.vars_of("string") else None
            if s is None:
                return self.bool_expr(b, depth + 1) if depth < 2 else Lit("bool", True)
            fn = rng.choice(["like", "like", "starts_with", "ends_with", "contains"])
            if fn == "like" or rng.random() < 0.6:
                p = Lit("string", rng.choice(PATTERNS) if fn == "like" else
                        rng.choice(["BRASS", "a", "", "forest", "gr\u00fcn", "%", "b", "PROMO"]))
            else:
                p = self.build(b, "string", depth + 1)
                if p is None:
                    return None
            return Call(fn, [s, p])
        if kind in ("and", "or"):
            x, y = self.bool_expr(b, depth + 1), self.bool_expr(b, depth + 1)
            return None if x is None or y is None else Op("&&" if kind == "and" else "||", x, y)
        if kind == "not":
            x = self.bool_expr(b, depth + 1)
            return None if x is None else Call("not", [x])
        if kind == "guard":
            nums = [v for v, t in b.vt.items() if t in ("int32", "int64", "float64") or T.is_dec(t)]
            if not nums:
                return None
            y = Var(rng.choice(sorted(nums)))
            t = b.vt[y.name]
            x = self.build(b, rng.choice([t, "int32"] if t in ("int32", "int64") else [t, "float64"]),
                           depth + 1)
            if x is None:
                return None
            q = Op("/", x, y)
            c = Op(rng.choice(COMPARISONS), q, self.num_literal("float64" if t not in ("int32", "int64")
                                                                else t))
            if rng.random() < 0.5:
                return Op("&&", Op("!=", y, Lit("int", 0)), c)
            return Op("||", Op("=", y, Lit("int", 0)), c)
        vs = b.vars_of("bool")
        if vs:
            return Var(rng.choice(vs))
        return self.bool_expr(b, depth + 1) if depth < 2 else Lit("bool", True)

    def cond(self, b):
        """A condition literal."""
        e = self.expr(b, "bool", depth=0)
        if e is None:
            return None
        if isinstance(e, Call) and e.name == "not" and isinstance(e.args[0], Call) and \
                e.args[0].name in TEST_FUNCTIONS and self.rng.random() < 0.6:
            return Cond(e, bang=True)
        if isinstance(e, Op) and e.op == "&&" and self.rng.random() < 0.3:
            e = Paren(e)   # (c1 && c2): the expression, in parentheses
        return Cond(e)

    def assign(self, b):
        rng = self.rng
        t = rng.choice(b.types_bound() + ["int64", "float64", "decimal[2]", "date"])
        e = self.expr(b, t, depth=0)
        if e is None or isinstance(e, Var):
            return
        v = b.fresh()
        a = Assign(Var(v), e)
        a.flipped = rng.random() < 0.2
        b.body.append(a)
        b.vt[v] = OT.value_type(e, b.vt)
        b.env[v] = b.abs_ok(e, b.vt[v])

    # -- predicates ------------------------------------------------------------

    def column_type(self):
        rng = self.rng
        t = rng.choice(["int32", "int32", "int32", "int64", "string", "string", "date", "date",
                        "decimal", "decimal", "decimal", "float64", "bool"])
        if t == "decimal":
            return T.dec(rng.choice(SCALES))
        return t

    def make_edb(self, index):
        rng = self.rng
        arity = rng.choice([2, 2, 3, 3, 4])
        types = [self.column_type() for _ in range(arity)]
        if rng.random() < 0.5 and "int32" not in types:
            types[0] = "int32"
        name = "e%d" % index
        if index == 0 and rng.random() < 0.08:
            # a predicate named like a test function: `contains(a, b)` alone
            # in a body is its atom, the function only in an expression
            name = rng.choice(TEST_FUNCTIONS)
            types = ["string", "string"]
        p = Pred(name, types)
        p.typed_facts = True
        n = rng.randint(3, 8) if rng.random() < 0.95 else rng.randint(0, 1)
        if rng.random() < 0.15 and "bool" not in types:
            p.file_format = "csv" if rng.random() < 0.3 else "tsv"
            p.file_rows = sorted(set(tuple(random_value(rng, t, plain=True) for t in types)
                                     for _ in range(n)), key=lambda r: repr(r))
        else:
            p.facts = [tuple(random_value(rng, t) for t in types) for _ in range(n)]
        rows = set(map(tuple, p.facts)) | set(map(tuple, p.file_rows or ()))
        p.size = len(rows)
        p.meta = [abs_of_values(t, [r[i] for r in rows]) for i, t in enumerate(types)]
        p.output = rng.random() < 0.1
        return p

    def readable(self):
        return [p for p in self.program.preds if not getattr(p, "no_read", False)]

    def make_body(self, b, natoms=None, base_preds=None):
        rng = self.rng
        preds = base_preds or self.readable()
        edb = [p for p in preds if not p.name[0] in "pgt"]
        for _ in range(natoms or rng.choice([1, 1, 2, 2, 3])):
            b.add_atom(rng.choice(edb if edb and rng.random() < 0.5 else preds), allow_expr=True)
        if not b.vt:
            # every argument a literal or a wildcard: bind the first column
            atom = b.body[0]
            p = self.program.pred(atom.pred)
            atom.args[0] = b.bind_fresh(p.types[0], p.meta[0])
        b.check_atom_exprs()
        for _ in range(rng.choice([0, 0, 1, 1, 1, 2])):
            c = self.cond(b)
            if c is not None:
                b.body.append(c)
        self.merge_equalities(b)
        if rng.random() < 0.35:
            self.assign(b)
        if rng.random() < 0.25:
            b.add_negation(rng.choice(preds))
        if rng.random() < 0.3:
            self.shuffle(b.body)

    def merge_equalities(self, b):
        """`x = y` between two variables of one type makes them one variable
        (docs: "Equalities are joins"): each one's expressions may then be
        evaluated on the other's rows. Widen both to the hull and drop the
        conditions that may fault over the wider box."""
        def eq_vars(c):
            e = c.expr
            while isinstance(e, Paren):
                e = e.a
            if isinstance(e, Op) and e.op == "=" and isinstance(e.a, Var) and isinstance(e.b, Var) \
                    and b.vt[e.a.name] == b.vt[e.b.name]:
                return e.a.name, e.b.name
            return None
        changed = True
        while changed:
            changed = False
            for c in b.body:
                if isinstance(c, Cond) and eq_vars(c):
                    x, y = eq_vars(c)
                    h = hull(b.env[x], b.env[y])
                    for v in (x, y):
                        old = b.env[v]
                        if (old.lo, old.hi, old.quantum) != (h.lo, h.hi, h.quantum):
                            b.env[v] = Abs(h.typ, h.lo, h.hi, h.exact, False, h.quantum)
                            changed = True
        b.body = [c for c in b.body if not isinstance(c, Cond) or b.abs_ok(c.expr, "bool") is not None]
        b.check_atom_exprs()

    def shuffle(self, body):
        rng = self.rng
        for _ in range(2):
            i = rng.randrange(len(body))
            lit = body[i]
            if isinstance(lit, (Cond, Atom)) and (isinstance(lit, Cond) or lit.negated):
                body.pop(i)
                body.insert(rng.randrange(len(body) + 1), lit)

    def head_abs(self, b, e, t):
        m = b.abs_ok(e, t)
        if m is None:
            raise AssertionError("head expression may fault")
        return m

    def make_idb(self, index):
        rng = self.rng
        p = None
        nrules = rng.choice([1, 1, 2, 2, 3])
        for k in range(nrules):
            b = Builder(self)
            self.make_body(b)
            if p is None:
                arity = rng.choice([1, 2, 2, 3, 4])
                args, types = [], []
                for _ in range(arity):
                    t = rng.choice(b.types_bound() + [self.column_type()])
                    e = self.head_expr(b, t)
                    et = T.concrete(OT.infer(e, b.vt), t)
                    ct = et
                    if rng.random() < 0.2 and T.is_num(et):
                        wider = [w for w in ["int64", "float64", "decimal[2]", "decimal[4]", "decimal[6]"]
                                 if T.widens(et, w) and w != et]
                        if wider:
                            ct = rng.choice(wider)
                    if b.abs_ok(e, ct) is None:
                        ct = et
                    args.append(e)
                    types.append(ct)
                p = Pred("p%d" % index, types)
                p.meta = [None] * arity
                p.size = 0
            else:
                args = [self.head_expr(b, t, widen=True) for t in p.types]
            for i, (e, t) in enumerate(zip(args, p.types)):
                p.meta[i] = hull(p.meta[i], self.head_abs(b, e, t))
            p.size += b.size
            self.program.rules.append(Rule(p.name, args, b.body))
        p.output = True
        return p

    def head_expr(self, b, t, widen=False):
        e = self.head_expr1(b, t, widen)
        if b.abs_ok(e, t) is None:
            # fall back to something that surely fits t
            vs = b.vars_of(t)
            e = Var(vs[0]) if vs else self.leaf(b, t, False)
            if b.abs_ok(e, t) is None:
                e = Lit("int", 0) if T.is_num(t) else self.num_literal(t)
        return e

    def head_expr1(self, b, t, widen=False):
        rng = self.rng
        r = rng.random()
        if r < 0.04:
            return self.num_literal(t) if t != "bool" else Lit("bool", True)
        if r < 0.45:
            e = self.expr(b, t, depth=0, widen=widen, allow_lit=True)
            if e is not None:
                return e
        vs = b.vars_of(t)
        if widen:
            vs += [v for n in self.narrower(t) for v in b.vars_of(n)]
        if vs:
            return Var(rng.choice(sorted(vs)))
        e = self.expr(b, t, depth=1, widen=widen, allow_lit=True)
        return e if e is not None else self.leaf(b, t, True)

    def make_agg(self, index):
        rng = self.rng
        b = Builder(self)
        self.make_body(b, natoms=rng.choice([1, 1, 2]))
        nkeys = rng.choice([0, 1, 1, 2, 2])
        keys, key_types = [], []
        for _ in range(nkeys):
            if not b.atom_vars:
                break
            if rng.random() < 0.75:
                v = rng.choice(sorted(set(b.atom_vars)))
                keys.append(Var(v))
                key_types.append(b.vt[v])
            else:
                t = rng.choice(b.types_bound())
                e = self.expr(b, t, depth=1)
                if e is None:
                    continue
                keys.append(e)
                key_types.append(OT.value_type(e, b.vt))
        naggs = rng.choice([1, 1, 2, 3, 4])
        N = max(1, b.size)
        aggs, rtypes = [], []
        for j in range(naggs):
            fn = rng.choice(["count", "total", "total", "min", "max", "avg", "avg", "count_distinct"])
            res = Var("r%d" % j)
            if fn == "count":
                aggs.append((fn, res, None))
                rtypes.append("int64")
                continue
            if fn in ("total", "avg"):
                t = rng.choice([x for x in b.types_bound() if T.is_num(x)] + ["int32", "decimal[2]"])
            else:
                t = rng.choice(b.types_bound())
            arg = self.agg_arg(b, t)
            if arg is None:
                aggs.append(("count", res, None))
                rtypes.append("int64")
                continue
            at = OT.value_type(arg, b.vt)
            m = b.abs_ok(arg, at)
            if fn in ("count_distinct",):
                ct = "int64"
            elif fn == "avg":
                ct = "float64"
                if at == "float64" and not (m.exact and N * m.maxabs() < 2 ** 30):
                    fn, ct = "count_distinct", "int64"
            elif fn in ("min", "max"):
                ct = at
                if T.is_num(at) and rng.random() < 0.2:
                    w = [x for x in ["int64", "float64", "decimal[4]"] if T.widens(at, x) and x != at
                         and b.abs_ok(arg, x) is not None]
                    if w:
                        ct = rng.choice(w)
            else:   # total
                ct = at
                if at == "int32" and rng.random() < 0.4:
                    ct = "int64"
                elif T.is_dec(at) and rng.random() < 0.2 and T.scale(at) < 17:
                    ct = T.dec(T.scale(at) + 1)
                mc = b.abs_ok(arg, ct)
                ok = mc is not None and mc.has_bounds()
                if ok and ct == "float64":
                    ok = mc.exact and N * mc.maxabs() < 2 ** 30
                elif ok:
                    lo, hi = min(mc.lo, mc.lo * N), max(mc.hi, mc.hi * N)
                    ok = T.fits(ct, lo) and T.fits(ct, hi)
                if not ok:
                    fn, ct = "max", at
            aggs.append((fn, res, arg))
            rtypes.append(ct)
        functional = len(aggs) == 1 and rng.random() < 0.7
        p = Pred("g%d" % index, key_types + rtypes, functional=functional)
        p.output = True
        p.size = N
        p.meta = []
        for e, t in zip(keys, key_types):
            p.meta.append(b.abs_ok(e, t))
        for (fn, _, arg), ct in zip(aggs, rtypes):
            if fn in ("count", "count_distinct"):
                p.meta.append(Abs("int64", 0, N))
            elif fn == "total":
                mc = b.abs_ok(arg, ct)
                p.meta.append(Abs(ct, min(mc.lo, mc.lo * N), max(mc.hi, mc.hi * N),
                                  ct == "float64" and mc.exact))
            elif fn == "avg":
                m = b.abs_ok(arg, OT.value_type(arg, b.vt))
                lo, hi = T.convert(m.lo, m.typ, "float64"), T.convert(m.hi, m.typ, "float64")
                p.meta.append(Abs("float64", lo - 1, hi + 1))
            else:
                p.meta.append(b.abs_ok(arg, ct))
        if any(m is None for m in p.meta):
            raise AssertionError("aggregate abs")
        self.program.rules.append(Rule(p.name, keys + [r for _, r, _ in aggs], b.body, agg=aggs))
        return p

    def agg_arg(self, b, t):
        rng = self.rng
        vs = b.vars_of(t)
        if vs and rng.random() < 0.6:
            return Var(rng.choice(vs))
        return self.expr(b, t, depth=1)

    def make_tc(self):
        bins = [p for p in self.program.preds if p.arity >= 2 and p.types[0] == p.types[1]
                and not p.functional]
        if not bins:
            return None
        rng = self.rng
        e = rng.choice(bins)
        t = e.types[0]
        tc = Pred("tc", [t, t])
        tc.output = True
        x, y, z = Var("x"), Var("y"), Var("z")
        rest = [Wild()] * (e.arity - 2)
        self.program.rules.append(Rule("tc", [x, y], [Atom(e.name, [x, y] + rest)]))
        second = Atom("tc", [y, z]) if rng.random() < 0.5 else Atom(e.name, [y, z] + rest)
        body = [Atom("tc", [x, y]), second]
        if rng.random() < 0.4:
            body.append(Cond(Op(rng.choice(["!=", "<", ">="]), x, z)))
        self.program.rules.append(Rule("tc", [x, z], body))
        m = hull(e.meta[0], e.meta[1])
        tc.meta = [m, m]
        n = 2 * max(1, e.size)
        tc.size = n * n
        return tc

    def order_outputs(self):
        rng = self.rng
        for p in self.program.preds:
            if not p.output or p.arity == 0:
                continue
            if rng.random() < 0.45:
                cols = rng.sample(range(p.arity), rng.randint(1, p.arity))
                p.order = [(c, rng.random() < 0.5) for c in cols]
            if rng.random() < 0.35:
                p.limit = rng.choice([0, 1, 2, 3, 5, 100])

    # -- whole programs ----------------------------------------------------------

    def generate(self):
        rng = self.rng
        prog = self.program
        prog.comment = "differential program (biz), seed %d" % self.seed
        for i in range(rng.randint(1, 3)):
            prog.preds.append(self.make_edb(i))
        nidb = rng.randint(1, 5)
        agg_count = 0
        for i in range(nidb):
            if rng.random() < 0.35:
                p = self.make_agg(agg_count)
                agg_count += 1
            else:
                p = self.make_idb(i)
            prog.preds.append(p)
        if rng.random() < 0.15:
            tc = self.make_tc()
            if tc is not None:
                prog.preds.append(tc)
        for p in prog.preds:
            p.typed_facts = True
            p.var_names = ["c%d" % i for i in range(p.arity)] if rng.random() < 0.5 else None
        self.order_outputs()
        roll = rng.random()
        if roll < 0.06:
            self.mutate(rng.choice(sorted(MUTATIONS)))
        elif roll < 0.16:
            boundary(self)
        return prog

    # -- compile errors --------------------------------------------------------------

    def mutate(self, kind):
        prog = self.program
        prog.expect = "compile_error"
        prog.error_kind = kind
        decl = ['bz(k, d, e, s, t, f) -> int32(k), decimal[2](d), date(e), string(s), '
                'decimal[18](t), float64(f).',
                'bz(1, 1.50, date("1995-03-15"), "a", 0.5, 2.5).',
                'bzq(k, v) -> int32(k), decimal[2](v).',
                'bzc(n) -> int64(n).',
                '@output(bzq).']
        bad = MUTATIONS[kind]
        prog.extra_lines = decl + [bad]
        prog.error_extra = [len(prog.extra_lines) - 1]


MUTATIONS = {
    "decimal_scale_narrowing": "bzq(k, d * 0.5) <- bz(k, d, _, _, _, _).",
    "mod_on_decimal": "bzq(k, d % 2) <- bz(k, d, _, _, _, _).",
    "date_times_int": "bzq(k, d) <- bz(k, d, e, _, _, _), e * 2 > e.",
    "date_vs_int": "bzq(k, d) <- bz(k, d, e, _, _, _), e > 5.",
    "like_on_int": 'bzq(k, d) <- bz(k, d, _, _, _, _), like(k, "a").',
    "substr_arg": 'bzq(k, d) <- bz(k, d, _, s, _, _), substr(s, "a", 1) = s.',
    "scale_exceeds_18": "bzq(k, d) <- bz(k, d, _, _, t, _), d * t > 0.",
    "and_on_string": "bzq(k, d) <- bz(k, d, _, s, _, _), s && true.",
    "unknown_function": "bzq(k, d) <- bz(k, d, _, _, _, _), frobnicate(d) > 0.",
    "float_into_decimal": "bzq(k, f) <- bz(k, _, _, _, _, f).",
    "condition_not_bool": "bzq(k, d) <- bz(k, d, _, _, _, _), d + 1.",
    "decimal_literal_places": 'bz(2, 1.505, date("1995-03-15"), "a", 0.5, 2.5).',
    "bad_date_literal": 'bz(3, 1, date("1995-02-30"), "a", 0.5, 2.5).',
    "bad_date_in_rule": 'bzq(k, d) <- bz(k, d, e, _, _, _), e > date("1995-13-01").',
    "avg_into_int": "bzc(n) <- agg<<n = avg(d)>> bz(_, d, _, _, _, _).",
    "order_unknown_column": "@order(bzq, nosuch).",
    "limit_negative": "@limit(bzq, -1).",
    "date_plus_date": "bzq(k, d) <- bz(k, d, e, _, _, _), e + e > e.",
    "if_branch_types": 'bzq(k, if(d > 1, d, "x")) <- bz(k, d, _, _, _, _).',
    "decimal_scale_range": "bzq(k, decimal[19](d)) <- bz(k, d, _, _, _, _).",
}


# ---------------------------------------------------------------- boundary cases

def boundary(g):
    """Appends a predicate zb of a few fact rows and an output zq whose one
    rule evaluates an expression on every row in its head: at the edge of
    a range (fits or not: the oracle says which), a zero divisor or a
    guarded one. program.expect = "oracle"."""
    rng = g.rng
    prog = g.program
    prog.expect = "oracle"
    k = Var("k")
    a, bb = Var("a"), Var("b")
    I32MAX, I32MIN = 2 ** 31 - 1, -2 ** 31
    I64MAX, I64MIN = 2 ** 63 - 1, -2 ** 63
    D = T.DEC_MAX
    day = T.parse_date_text
    cases = [
        # (types of a, b, rows (a, b), result type, expression)
        ("int32", "int32", [(I32MAX, rng.choice([0, 1, -1])), (5, 2)], "int32", Op("+", a, bb)),
        ("int32", "int32", [(I32MIN, rng.choice([0, 1, -1]))], "int32", Op("-", a, bb)),
        ("int32", "int32", [(rng.choice([46340, 46341, -46341]), rng.choice([46340, 46341])), (3, 4)],
         "int32", Op("*", a, bb)),
        ("int32", "int32", [(I32MIN, rng.choice([-1, 1, 2])), (7, -2)], "int32", Op("/", a, bb)),
        ("int32", "int32", [(I32MIN, -1), (7, rng.choice([0, 3]))], "int32", Op("%", a, bb)),
        ("int32", "int32", [(rng.choice([I32MIN, I32MAX, I32MIN + 1]), 0)], "int32", Neg(a)),
        ("int32", "int32", [(rng.choice([I32MAX, 5]), 1)], "int64", Op("+", Call("int64", [a]), bb)),
        ("int64", "int64", [(I64MAX, rng.choice([0, 1])), (-3, 4)], "int64", Op("+", a, bb)),
        ("int64", "int64", [(rng.choice([3037000499, 3037000500]), 3037000499)], "int64", Op("*", a, bb)),
        ("int64", "int64", [(I64MIN, rng.choice([-1, 1]))], "int64", Op("/", a, bb)),
        ("int64", "int32", [(rng.choice([I32MAX, I32MAX + 1, I32MIN, I32MIN - 1]), 0)], "int32",
         Call("int32", [a])),
        ("int64", "int64", [(rng.choice([0, 5]), rng.choice([0, 0, 2]))], "int64", Op("/", a, bb)),
        ("int32", "int32", [(9, rng.choice([0, 0, 4])), (1, 1)], "int32",
         Call("if", [Op("!=", bb, Lit("int", 0)), Op("/", a, bb), Lit("int", 0)])),
        # decimals
        ("decimal[2]", "decimal[2]", [(D, rng.choice([0, 1, -1])), (125, 5)], "decimal[2]", Op("+", a, bb)),
        ("decimal[2]", "decimal[2]", [(-D, rng.choice([0, 1, -1]))], "decimal[2]", Op("-", a, bb)),
        ("decimal[1]", "decimal[1]", [(rng.choice([30370004999, 30370005000]), 30370004999)],
         "decimal[2]", Op("*", a, bb)),
        ("decimal[0]", "decimal[2]", [(rng.choice([92233720368547758, 92233720368547759]), 1)],
         "decimal[2]", Op("+", a, bb)),
        ("int64", "int64", [(rng.choice([92233720368547758, 92233720368547759, -92233720368547759]), 0)],
         "decimal[2]", a),
        ("decimal[2]", "decimal[2]", [(rng.choice([25, -25, 15, 5]), rng.choice([0, 100]))],
         "float64", Op("/", a, bb)),
        ("decimal[3]", "int32", [(rng.choice([1005, -1005, 2500, 1004, -2500, 999999]), 0)],
         "decimal[1]", Call("decimal", [a], scale=1)),
        ("decimal[2]", "int32", [(rng.choice([214748364799, 214748364800, -214748364899]), 0)],
         "int32", Call("int32", [a])),
        # floats
        ("float64", "float64", [(rng.choice([1e200, 1e100]), 1e200)], "float64", Op("*", a, bb)),
        ("float64", "float64", [(2.5, rng.choice([0.0, 0.5]))], "float64", Op(rng.choice("/%"), a, bb)),
        ("float64", "int32", [(rng.choice([2147483647.5, 2147483648.0, -2147483648.75, -2147483649.0]), 0)],
         "int32", Call("int32", [a])),
        ("float64", "int32", [(rng.choice([9.2e18, 9.3e18, -9.2233720368547758e18]), 0)],
         "int64", Call("int64", [a])),
        ("float64", "int32", [(rng.choice([0.125, -0.125, 2.675, 1e17, 9.3e16, -0.5]), 0)],
         "decimal[2]", Call("decimal", [a], scale=2)),
        # dates
        ("date", "int32", [(day("9999-12-31"), rng.choice([0, 1, -1])), (day("1995-01-31"), 30)],
         "date", Op("+", a, bb)),
        ("date", "int64", [(day("0001-01-01"), rng.choice([0, 1, -1]))], "date", Op("-", a, bb)),
        ("date", "int32", [(day(rng.choice(["9999-12-15", "9999-11-30", "0001-01-31"])),
                            rng.choice([1, -1, 0]))], "date", Call("add_months", [a, bb])),
        ("date", "int32", [(day(rng.choice(["9998-02-28", "0002-03-01", "1996-02-29"])),
                            rng.choice([1, -1, 4]))], "date", Call("add_years", [a, bb])),
        # strings
        ("string", "int32", [("abc", rng.choice([-1, 0, 2])), ("", 1)], "string",
         Call("substr", [a, Lit("int", 1), bb])),
        ("string", "int64", [("abcdef", rng.choice([I64MAX, I64MIN, 2 ** 62, -5])), ("xy", 2)], "string",
         Call("substr", [a, bb, Lit("int", rng.choice([I64MAX, 3, 0]))])),
        ("string", "int64", [("abcdef", rng.choice([I64MAX, 2, 0])), ("", 0)], "string",
         Call("substr", [a, Lit("int", rng.choice([I64MAX, I64MIN, 2, -1])), bb])),
        # comparisons converting one side (checked)
        ("int64", "decimal[2]", [(rng.choice([92233720368547758, 92233720368547759, -92233720368547759]),
                                  150)], "bool", Op(rng.choice(["<", "=", ">="]), a, bb)),
        ("decimal[0]", "decimal[4]", [(rng.choice([922337203685477, 922337203685478]), 5)],
         "bool", Op(rng.choice(["<", "!="]), a, bb)),
        ("date", "date", [(day("0001-01-01"), day("9999-12-31"))], "int64", Op("-", bb, a)),
        ("date", "int32", [(day(rng.choice(["0001-01-01", "9999-12-31", "1600-02-29"])), 0)], "int32",
         Call(rng.choice(["year", "month", "day"]), [a])),
        ("date", "int64", [(day("1995-01-31"), rng.choice([119988, -23927, 96047, 120001, I64MAX]))],
         "date", Call(rng.choice(["add_months", "add_years"]), [a, bb])),
    ]
    ta, tb, rows, rt, expr = rng.choice(cases)
    zb = Pred("zb", ["int32", ta, tb])
    zb.typed_facts = True
    zb.facts = [(i + 1,) + r for i, r in enumerate(rows)]
    zq = Pred("zq", ["int32", rt])
    zq.typed_facts = True
    zq.output = True
    zb.meta = zq.meta = None
    zb.no_read = zq.no_read = True
    prog.preds += [zb, zq]
    if rng.random() < 0.2 and rt in ("int32", "int64", "decimal[2]", "decimal[1]"):
        # a total at the edge of its type: the exact sum decides (docs:
        # "total."), whatever the order of the rows; with mixed signs a
        # running sum in the type would overflow midway in some orders
        # (MAX + 2 - 5 fits), which the 128-bit total does not
        sign = rng.choice([1, -1])
        big = {"int32": I32MAX, "int64": I64MAX}.get(rt, D)
        if rng.random() < 0.5:
            vals = [sign * (big // 2 + rng.choice([0, 1, 2])), sign * (big // 2 - rng.choice([0, 1, 2, 3]))]
        else:
            vals = [sign * big, sign * rng.choice([1, 2, 3]), -sign * rng.choice([1, 2, 5])]
        zb.types = ["int32", rt, "int32"]
        zb.facts = [(i + 1, v, 0) for i, v in enumerate(vals)]
        zq.types = [rt]
        zq.functional = True
        prog.rules.append(Rule("zq", [Var("r")], [Atom("zb", [Wild(), a, Wild()])],
                               agg=[("total", Var("r"), a)]))
        return
    if rng.random() < 0.15 and ta in ("int32", "int64") and tb == ta:
        # a guarded division in a condition: && short-circuits
        zb.facts = [(1, 9, 0), (2, 9, 4), (3, 1, 1)]
        zq.types = ["int32", ta]
        prog.rules.append(Rule("zq", [k, a], [Atom("zb", [k, a, bb]),
                                              Cond(Op("&&", Op("!=", bb, Lit("int", 0)),
                                                      Op(">", Op("/", a, bb), Lit("int", 1))))]))
        return
    prog.rules.append(Rule("zq", [k, expr], [Atom("zb", [k, a, bb])]))


def generate(seed):
    return Generator(seed).generate()


if __name__ == "__main__":
    import sys
    from lql import to_text
    for arg in sys.argv[1:] or ["1"]:
        print(to_text(generate(int(arg)))[0])
