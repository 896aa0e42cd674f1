"""Random program generator for the differential suite.

`generate(seed)` returns an lql.Program built from random.Random(seed) only,
so any program can be rebuilt from its seed. By construction the program is
valid (every predicate declared and typed, every rule range-restricted,
negation and aggregation only over strictly lower levels, no arithmetic that
can feed a recursive cycle, divisors that can never be zero) except for:
  - about 6% deliberately INVALID programs (program.expect = "compile_error"):
    one mutation from MUTATIONS;
  - about 2% with a deliberate division by zero on a fact row
    (program.expect = "runtime_error").

Shape: level 0 holds the input (EDB) predicates with inline facts or an
@input file; levels 1..3 hold derived predicates. A rule for a level-L head
reads predicates of level <= L positively (same level = possible recursion,
mutual or non-linear) and of level < L under negation or aggregation.

Aggregation predicates have one rule with one to four aggregates (count,
total, min, max, avg, count_distinct); with one aggregate the predicate is
functional (f[k] = v) and later levels may read it, with several it is a
relation that only is output (avg's float64 column is never read: float
comparisons with ints are not what this suite checks). Output predicates
get an @order (some columns, asc or desc) and/or an @limit now and then.
"""

import random

from lql import (Pred, Var, Const, Wild, Bin, Atom, Compare, Assign, Rule,
                 Program, INT_TYPES)

INT32_SMALL = list(range(-2, 6))
INT32_EDGE = [2147483647, -2147483648, 65536, 1000000, -46341]
INT64_EDGE = [9223372036854775807, -9223372036854775807, 5000000000, 4294967296, -3037000500]
STRINGS = ["a", "b", "c", "ab", "", 'q"t', "back\\slash", "tab\there", "new\nline",
           "\u00fcml", "Z", "a", "b", "c"]  # plain ones twice: more joins
PLAIN_STRINGS = ["a", "b", "c", "ab", "ba", "abc", "Z", "k9"]  # safe in files
COMPARISONS = ["=", "!=", "<", "<=", ">", ">="]
MUTATIONS = ["type_mismatch_head", "type_mismatch_join", "type_mismatch_fact",
             "unbound_head_var", "negation_through_recursion", "unknown_predicate",
             "arity_mismatch"]


def random_value(rng, typ, plain=False):
    if typ == "string":
        return rng.choice(PLAIN_STRINGS if plain else STRINGS)
    if rng.random() < 0.1:
        return rng.choice(INT32_EDGE if typ == "int32" else INT64_EDGE)
    return rng.choice(INT32_SMALL)


class RuleBuilder:
    """Builds one rule body while tracking which variables are bound and
    their types."""

    def __init__(self, gen):
        self.gen = gen
        self.rng = gen.rng
        self.body = []
        self.var_types = {}   # bound variable -> type
        self.atom_vars = []   # variables bound by positive atoms (ordered)
        self.counter = 0

    def fresh(self):
        self.counter += 1
        return Var("v%d" % self.counter)

    def vars_of(self, typ):
        return [v for v, t in self.var_types.items() if t == typ]

    def add_atom(self, pred, allow_wild=True):
        rng = self.rng
        args = []
        for typ in pred.types:
            roll = rng.random()
            existing = self.vars_of(typ)
            if existing and roll < 0.45:
                args.append(Var(rng.choice(existing)))      # join / repeated var
            elif roll < 0.49:
                args.append(Const(self.column_value(pred, len(args)), typ))
            elif allow_wild and roll < 0.59:
                args.append(Wild())
            else:
                v = self.fresh()
                self.var_types[v.name] = typ
                self.atom_vars.append(v.name)
                args.append(v)
        # A repeated fresh variable inside one atom: p(x, x).
        if pred.arity >= 2 and rng.random() < 0.08 and pred.types[0] == pred.types[1] \
                and isinstance(args[0], Var):
            dropped = args[1]
            args[1] = Var(args[0].name)
            # A variable this atom had just introduced no longer occurs.
            if isinstance(dropped, Var) and dropped.name != args[0].name and \
                    not any(isinstance(a, Var) and a.name == dropped.name for a in args) and \
                    not self.occurs(dropped.name):
                del self.var_types[dropped.name]
                self.atom_vars.remove(dropped.name)
        self.body.append(Atom(pred.name, args))

    def column_value(self, pred, col):
        """A constant for an atom argument: mostly one that occurs in the
        column (input predicates), so the atom is not trivially empty."""
        rows = list(pred.facts) + list(pred.file_rows or ())
        if rows and self.rng.random() < 0.75:
            return self.rng.choice(rows)[col]
        return random_value(self.rng, pred.types[col])

    def occurs(self, name):
        """Whether a variable occurs in the body built so far."""
        return any(isinstance(a, Var) and a.name == name
                   for lit in self.body if isinstance(lit, Atom) for a in lit.args)

    def int_operand(self, typ_hint=None):
        ints = [v for v, t in self.var_types.items() if t in INT_TYPES]
        if ints and self.rng.random() < 0.8:
            return Var(self.rng.choice(ints))
        typ = typ_hint or "int32"
        return Const(self.rng.choice(INT32_SMALL), typ)

    def arith(self, depth=0):
        """A random int expression over bound variables; literal types follow
        the other operand. Divisors are never zero: a nonzero constant or
        v*v+1 (a square is 0 or 1 mod 4, so v*v+1 is never 0 mod 2^k)."""
        rng = self.rng
        if depth >= 2 or rng.random() < 0.35:
            return self.int_operand()
        op = rng.choice(["+", "-", "*", "+", "-", "*", "/", "%"])
        a = self.arith(depth + 1)
        at = self.type_of(a)
        if op in ("/", "%"):
            ints = [v for v, t in self.var_types.items() if t in INT_TYPES]
            if ints and rng.random() < 0.4:
                v = Var(rng.choice(ints))
                vt = self.var_types[v.name]
                b = Bin("+", Bin("*", v, Var(v.name)), Const(1, vt))
            else:
                b = Const(rng.choice([1, 2, 3, -1, -2, 7]), at)
        else:
            b = self.arith(depth + 1)
        # Give untyped-by-context literals the other side's type.
        if isinstance(a, Const) and not isinstance(b, Const):
            a = Const(a.value, self.type_of(b))
        if isinstance(b, Const) and not isinstance(a, Const):
            b = Const(b.value, at)
        if isinstance(a, Const) and isinstance(b, Const):
            # A literal-only expression is int64 in the language (alone a
            # literal is int64); avoid it so types stay predictable.
            return a
        return Bin(op, a, b)

    def type_of(self, e):
        if isinstance(e, Var):
            return self.var_types[e.name]
        if isinstance(e, Const):
            return e.typ
        ta, tb = self.type_of(e.a), self.type_of(e.b)
        return "int64" if "int64" in (ta, tb) else "int32"

    def add_assign(self):
        if not any(t in INT_TYPES for t in self.var_types.values()):
            return
        expr = self.arith()
        if isinstance(expr, Const):
            return
        v = self.fresh()
        self.body.append(Assign(v, expr))
        self.var_types[v.name] = self.type_of(expr)

    def add_compare(self):
        rng = self.rng
        if not self.var_types:
            return
        a = Var(rng.choice(sorted(self.var_types)))
        ta = self.var_types[a.name]
        op = rng.choice(COMPARISONS)
        if ta == "string":
            others = self.vars_of("string")
            b = Var(rng.choice(others)) if rng.random() < 0.5 else \
                Const(rng.choice(STRINGS), "string")
        else:
            roll = rng.random()
            ints = [v for v, t in self.var_types.items() if t in INT_TYPES]
            if roll < 0.4:
                b = Var(rng.choice(ints))            # may mix int32 and int64
            elif roll < 0.7:
                b = Const(random_value(rng, ta), ta)
            else:
                a = self.arith(1) if rng.random() < 0.5 else a
                b = self.arith(1)
                ta = self.type_of(a)
                if isinstance(b, Const):
                    b = Const(b.value, ta)
                if isinstance(a, Const):
                    a = Const(a.value, self.type_of(b))
        self.body.append(Compare(op, a, b))

    def add_negation(self, pred):
        rng = self.rng
        args = []
        for typ in pred.types:
            existing = self.vars_of(typ)
            roll = rng.random()
            if existing and roll < 0.7:
                args.append(Var(rng.choice(existing)))
            elif roll < 0.85:
                args.append(Const(random_value(rng, typ), typ))
            else:
                args.append(Wild())
        self.body.append(Atom(pred.name, args, negated=True))


class Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.program = Program()
        self.level = {}       # pred name -> level

    # -- predicates ----------------------------------------------------

    def make_edb(self, index):
        rng = self.rng
        arity = rng.choice([1, 2, 2, 2, 3])
        types = [rng.choice(["int32", "int32", "int64", "string"]) for _ in range(arity)]
        p = Pred("e%d" % index, types)
        self.level[p.name] = 0
        if rng.random() < 0.2 and "string" not in types or rng.random() < 0.05:
            # Facts from an @input file (plain values: no escapes in files).
            p.file_format = "csv" if rng.random() < 0.25 else "tsv"
            p.file_rows = sorted(set(tuple(random_value(rng, t, plain=True) for t in types)
                                     for _ in range(rng.randint(0, 7))))
            if rng.random() < 0.3:  # inline facts too: the two are unioned
                p.facts = [tuple(random_value(rng, t) for t in types)
                           for _ in range(rng.randint(1, 3))]
        else:
            n = rng.randint(2, 9) if rng.random() < 0.9 else rng.randint(0, 1)
            # Duplicate facts are allowed in the source; the relation is a set.
            p.facts = [tuple(random_value(rng, t) for t in types) for _ in range(n)]
            if p.facts and rng.random() < 0.15:
                p.facts.append(p.facts[0])
        p.output = rng.random() < 0.15
        return p

    def make_idb(self, index, level, edb_types):
        rng = self.rng
        arity = rng.choice([1, 2, 2, 3])
        p = Pred("p%d" % index, [rng.choice(edb_types) for _ in range(arity)])
        p.output = True
        self.level[p.name] = level
        return p

    # -- rules -----------------------------------------------------------

    def readable(self, level, strict):
        return [p for p in self.program.preds
                if not p.functional and "float64" not in p.types and
                (self.level[p.name] < level or (not strict and self.level[p.name] == level))]

    def make_rule(self, head, base=False):
        """base: read only lower levels (every derived predicate gets one
        such rule first, so recursive ones are not all empty)."""
        rng = self.rng
        prog = self.program
        L = self.level[head.name]
        b = RuleBuilder(self)
        same = [p for p in self.readable(L, False) if self.level[p.name] == L]
        lower = self.readable(L, True)
        natoms = rng.choice([1, 1, 2, 2, 2, 3])
        recursive = False
        for i in range(natoms):
            if same and not base and rng.random() < 0.4:
                pred = rng.choice(same)
                recursive = True
            else:
                pred = rng.choice(lower)
            b.add_atom(pred)
        # Aggregation results of lower levels, read as f[k] = v.
        funcs = [p for p in prog.preds if p.functional and self.level[p.name] < L
                 and "float64" not in p.types]
        if funcs and rng.random() < 0.3:
            b.add_atom(rng.choice(funcs), allow_wild=False)
        # Make sure every head column type has a bound variable to take.
        for typ in head.types:
            if not b.vars_of(typ):
                cands = [p for p in lower if typ in p.types]
                b.add_atom(rng.choice(cands), allow_wild=False)
                if not b.vars_of(typ):
                    # Every argument came out a join or constant: bind one.
                    v = b.fresh()
                    b.var_types[v.name] = typ
                    b.atom_vars.append(v.name)
                    atom = b.body[-1]
                    pos = [i for i, t in enumerate(prog.pred(atom.pred).types) if t == typ][0]
                    atom.args[pos] = v
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            b.add_compare()
        if rng.random() < 0.3:
            b.add_assign()
        negatable = [p for p in lower]
        if negatable and rng.random() < 0.3:
            b.add_negation(rng.choice(negatable))
        # Head arguments. In a rule that may be recursive, only variables
        # bound by atoms (or constants): new values must not feed a cycle.
        head_args = []
        for typ in head.types:
            atom_vars = [v for v in b.atom_vars if b.var_types[v] == typ]
            all_vars = b.vars_of(typ)
            roll = rng.random()
            if roll < 0.05:
                head_args.append(Const(random_value(rng, typ), typ))
            elif not recursive and typ in INT_TYPES and roll < 0.3:
                e = b.arith()
                if b.type_of(e) != typ:
                    e = Var(rng.choice(atom_vars))
                head_args.append(e)
            elif not recursive and roll < 0.5 and all_vars:
                head_args.append(Var(rng.choice(all_vars)))
            else:
                head_args.append(Var(rng.choice(atom_vars)))
        # Body order: shuffle non-atom literals among the atoms sometimes;
        # the meaning must not depend on literal order.
        if rng.random() < 0.3:
            self.shuffle_body(b.body)
        return Rule(head.name, head_args, b.body)

    def shuffle_body(self, body):
        """Moves comparisons/negations earlier in the source (still legal:
        safety is about the whole body, not the order)."""
        rng = self.rng
        for _ in range(2):
            i = rng.randrange(len(body))
            lit = body[i]
            if not (isinstance(lit, Atom) and not lit.negated) and not isinstance(lit, Assign):
                body.pop(i)
                body.insert(rng.randrange(len(body) + 1), lit)

    def make_agg(self, index, level):
        """An aggregation predicate and its single rule: one aggregate
        (functional predicate) or several (a relation)."""
        rng = self.rng
        b = RuleBuilder(self)
        lower = self.readable(level, True)
        for _ in range(rng.choice([1, 1, 2])):
            b.add_atom(rng.choice(lower))
        if rng.random() < 0.3:
            b.add_compare()
        nkeys = rng.choice([0, 1, 1, 2])
        keys = [Var(v) for v in rng.sample(sorted(b.var_types), min(nkeys, len(b.var_types)))]
        naggs = rng.choice([1, 1, 1, 2, 3, 4])
        aggs, rtypes = [], []
        for j in range(naggs):
            fn = rng.choice(["count", "count", "total", "min", "max", "avg", "count_distinct"])
            if fn in ("total", "avg"):
                cands = [v for v, t in b.var_types.items() if t in INT_TYPES]
            else:
                cands = sorted(b.var_types)
            if fn != "count" and not cands:
                fn = "count"
            arg = Var(rng.choice(sorted(cands))) if fn != "count" else None
            result = Var("res" if naggs == 1 else "res%d" % j)
            rtype = "int64" if fn in ("count", "count_distinct") else \
                "float64" if fn == "avg" else b.var_types[arg.name]
            aggs.append((fn, result, arg))
            rtypes.append(rtype)
        p = Pred("g%d" % index, [b.var_types[k.name] for k in keys] + rtypes, functional=naggs == 1)
        p.output = True
        self.level[p.name] = level
        return p, Rule(p.name, keys + [r for _, r, _ in aggs], b.body, agg=aggs)

    def order_outputs(self):
        """@order / @limit on some outputs."""
        rng = self.rng
        for p in self.program.preds:
            if not p.output or p.arity == 0:
                continue
            if rng.random() < 0.3:
                cols = rng.sample(range(p.arity), rng.randint(1, p.arity))
                p.order = [(c, rng.random() < 0.5) for c in cols]
            if rng.random() < 0.25:
                p.limit = rng.choice([0, 1, 2, 3, 5, 100])

    # -- whole programs ------------------------------------------------------

    def generate(self):
        rng = self.rng
        prog = self.program
        prog.comment = "differential program, seed %d" % self.seed
        nedb = rng.randint(1, 3)
        for i in range(nedb):
            prog.preds.append(self.make_edb(i))
        edb_types = sorted(set(t for p in prog.preds for t in p.types))
        nidb = rng.randint(1, 5)
        idbs = []
        agg_count = 0
        for i in range(nidb):
            level = rng.randint(1, 3)
            if rng.random() < 0.25:
                p, rule = self.make_agg(agg_count, level)
                agg_count += 1
                prog.preds.append(p)
                prog.rules.append(rule)
            else:
                p = self.make_idb(i, level, edb_types)
                prog.preds.append(p)
                idbs.append(p)
        for p in idbs:
            for k in range(rng.choice([1, 1, 2, 2, 3])):
                prog.rules.append(self.make_rule(p, base=(k == 0)))
        # A classic recursive shape now and then, to be sure recursion is
        # exercised often: linear or non-linear closure of a binary relation.
        bins = [p for p in prog.preds if not p.functional and p.arity == 2
                and p.types[0] == p.types[1] and self.level[p.name] == 0]
        if bins and rng.random() < 0.35:
            e = rng.choice(bins)
            t = e.types[0]
            tc = Pred("tc", [t, t])
            tc.output = True
            self.level["tc"] = 1
            prog.preds.append(tc)
            x, y, z = Var("x"), Var("y"), Var("z")
            prog.rules.append(Rule("tc", [x, y], [Atom(e.name, [x, y])]))
            if rng.random() < 0.5:
                prog.rules.append(Rule("tc", [x, z], [Atom("tc", [x, y]), Atom("tc", [y, z])]))
            else:
                prog.rules.append(Rule("tc", [x, z], [Atom("tc", [x, y]), Atom(e.name, [y, z])]))
        self.order_outputs()
        roll = rng.random()
        if roll < 0.06:
            self.mutate(rng.choice(MUTATIONS))
        elif roll < 0.08:
            self.add_division_by_zero()
        return prog

    # -- deliberate failures -------------------------------------------------

    def add_division_by_zero(self):
        """d = x / y where a fact row has y = 0, the only literal besides the
        atom, d used in the head: every engine must evaluate it."""
        prog = self.program
        z = Pred("zdiv", ["int32", "int32"])
        z.facts = [(7, 2), (5, 0), (3, 1)]
        q = Pred("zq", ["int32", "int32"])
        q.output = True
        self.level["zdiv"], self.level["zq"] = 0, 1
        prog.preds += [z, q]
        x, y, d = Var("x"), Var("y"), Var("d")
        op = self.rng.choice(["/", "%"])
        prog.rules.append(Rule("zq", [x, d], [Atom("zdiv", [x, y]), Assign(d, Bin(op, x, y))]))
        prog.expect = "runtime_error"

    def mutate(self, kind):
        prog = self.program
        rng = self.rng
        prog.expect = "compile_error"
        prog.error_kind = kind
        e = Pred("bad_in", ["int32", "string"])
        e.facts = [(1, "a"), (2, "b")]
        out = Pred("bad_out", ["int32"])
        out.output = True
        self.level["bad_in"], self.level["bad_out"] = 0, 1
        prog.preds += [e, out]
        x, s, y = Var("x"), Var("s"), Var("y")
        if kind == "type_mismatch_head":
            # s is a string; bad_out's column is int32.
            prog.rules.append(Rule("bad_out", [s], [Atom("bad_in", [x, s])]))
        elif kind == "type_mismatch_join":
            # x bound to int32 and to string in one body.
            prog.rules.append(Rule("bad_out", [x], [Atom("bad_in", [x, s]), Atom("bad_in", [y, x])]))
        elif kind == "type_mismatch_fact":
            prog.preds.remove(e)
            prog.preds.insert(0, e)
            e.facts.append(("not_an_int", 3))  # printed by fact_text as a bad literal
            prog.error_facts.append(("bad_in", 2))
            prog.rules.append(Rule("bad_out", [x], [Atom("bad_in", [x, s])]))
            return
        elif kind == "unbound_head_var":
            prog.rules.append(Rule("bad_out", [y], [Atom("bad_in", [x, s])]))
        elif kind == "unknown_predicate":
            prog.rules.append(Rule("bad_out", [x], [Atom("bad_in", [x, s]),
                                                    Atom("no_such_pred", [x])]))
        elif kind == "arity_mismatch":
            args = [x, s, Var("extra")] if rng.random() < 0.5 else [x]
            prog.rules.append(Rule("bad_out", [x], [Atom("bad_in", args)]))
        elif kind == "negation_through_recursion":
            r = Pred("bad_r", ["int32"])
            prog.preds.append(r)
            self.level["bad_r"] = 1
            prog.rules.append(Rule("bad_out", [x], [Atom("bad_in", [x, s]),
                                                    Atom("bad_r", [x], negated=True)]))
            prog.rules.append(Rule("bad_r", [x], [Atom("bad_out", [x])]))
            prog.error_rules.append(len(prog.rules) - 2)
        prog.error_rules.append(len(prog.rules) - 1)


def generate(seed):
    return Generator(seed).generate()


if __name__ == "__main__":
    import sys
    from lql import to_text
    for a in sys.argv[1:] or ["1"]:
        print(to_text(generate(int(a)))[0])
