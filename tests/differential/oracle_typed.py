"""The oracle for programs of the business-query language (gen_biz.py):
typed expressions (typed.py), conditions, expression arguments of atoms,
multi-aggregate rules over every type. Evaluation is the naive one of
oracle.py (strata in dependency order, each iterated over Python sets to
its fixpoint); the semantics come from docs/language.md only.

Raises typed.EvalError for a run-time fault, typed.TypeErr where the
program is ill-typed, GenBug where the program is not what the generator
means to make (an order-dependent float total, a literal-typed variable),
oracle.NotStratified for unstratified programs.
"""

from fractions import Fraction

import typed as T
from lql import Atom, Assign, Var, Wild, Lit, Op, Neg, Call, Paren, Cond

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
FUNCTIONS = {
    # name: (argument kinds, result); kinds: date int str bool num any
    "year": (("date",), "int32"), "month": (("date",), "int32"), "day": (("date",), "int32"),
    "add_days": (("date", "int"), "date"), "add_months": (("date", "int"), "date"),
    "add_years": (("date", "int"), "date"),
    "substr": (("str", "int", "int"), "string"), "strlen": (("str",), "int64"),
    "concat": (("str", "str"), "string"),
    "like": (("str", "str"), "bool"), "starts_with": (("str", "str"), "bool"),
    "ends_with": (("str", "str"), "bool"), "contains": (("str", "str"), "bool"),
    "if": (("bool", "any", "any"), None), "not": (("bool",), "bool"),
    "int32": (("num",), "int32"), "int64": (("num",), "int64"), "float64": (("num",), "float64"),
    "decimal": (("num",), None),
}
KIND_OK = {"date": lambda t: t == "date", "int": T.is_int, "str": lambda t: t == "string",
           "bool": lambda t: t == "bool", "num": T.is_num, "any": lambda t: True}
KIND_TYPE = {"date": "date", "int": "int64", "str": "string", "bool": "bool"}


class GenBug(Exception):
    pass


# ---------------------------------------------------------------- typing

def infer(e, vt):
    if isinstance(e, Paren):
        return infer(e.a, vt)
    if isinstance(e, Var):
        if e.name not in vt:
            raise GenBug("variable %s is not bound" % e.name)
        return vt[e.name]
    if isinstance(e, Lit):
        if e.kind == "int":
            if T.fits("int32", e.value):
                return "intlit"
            if T.fits("int64", e.value):
                return "int64"     # too large for int32: the expression is int64
            raise T.TypeErr("integer literal out of range")
        if e.kind == "frac":
            return "frac[%d]" % len(e.text.partition(".")[2])
        return {"float": "float64", "string": "string", "bool": "bool", "date": "date"}[e.kind]
    if isinstance(e, Neg):
        t = infer(e.a, vt)
        if not T.is_num(t):
            raise T.TypeErr("'-' needs a number, found %s" % t)
        return t
    if isinstance(e, Op):
        ta, tb = infer(e.a, vt), infer(e.b, vt)
        if e.op in ("&&", "||"):
            if ta != "bool" or tb != "bool":
                raise T.TypeErr("'%s' needs bools" % e.op)
            return "bool"
        if e.op in COMPARISONS:
            T.compare_type(ta, tb)
            return "bool"
        return T.arith_type(e.op, ta, tb)
    if isinstance(e, Call):
        if e.name not in FUNCTIONS:
            raise T.TypeErr("unknown function %s" % e.name)
        kinds, result = FUNCTIONS[e.name]
        ts = [infer(a, vt) for a in e.args]
        if len(ts) != len(kinds) or not all(KIND_OK[k](t) for k, t in zip(kinds, ts)):
            raise T.TypeErr("'%s' expects %s, found %s" % (e.name, kinds, ts))
        if e.name == "if":
            if T.is_num(ts[1]) and T.is_num(ts[2]):
                return T.num_join(ts[1], ts[2])
            if ts[1] != ts[2]:
                raise T.TypeErr("if branches %s and %s" % (ts[1], ts[2]))
            return ts[1]
        if e.name == "decimal":
            if not 0 <= e.scale <= 18:
                raise T.TypeErr("decimal scale")
            return T.dec(e.scale)
        return result
    raise TypeError(e)


def assignable(e, frm, to):
    """Whether a value of inferred type frm (the expression e) may go into a
    column of type to (widening, literals that fit)."""
    if frm == to:
        return True
    if frm == "intlit":
        return T.is_num(to)
    if T.is_frac(frm):
        return to == "float64" or (T.is_dec(to) and (T.scale(frm) <= T.scale(to) or isinstance(e, Lit)))
    return T.widens(frm, to)


def value_type(e, vt):
    """The concrete type an expression computes in on its own (an
    assignment's variable, avg's and count_distinct's argument)."""
    t = infer(e, vt)
    if T.is_flex(t):
        raise GenBug("expression of literal type: %s" % t)
    return t


# ---------------------------------------------------------------- evaluation

def lit_value(e, t):
    """A literal as a value of type t (the compile-time checks: a literal
    that does not fit is a compile error)."""
    if e.kind == "int":
        if t in T.INT_RANGE:
            if not T.fits(t, e.value):
                raise T.TypeErr("integer literal out of range for %s" % t)
            return e.value
        if t == "float64":
            return float(e.value)
        if T.is_dec(t):
            w = e.value * 10 ** T.scale(t)
            if not T.fits(t, w):
                raise T.TypeErr("literal out of range for %s" % t)
            return w
    elif e.kind == "frac":
        if t == "float64":
            return float(e.text)
        if T.is_dec(t):
            w = e.value * 10 ** T.scale(t)
            if w.denominator != 1 or not T.fits(t, int(w)):
                raise T.TypeErr("literal %s does not fit %s" % (e.text, t))
            return int(w)
    elif e.kind == "float":
        if t == "float64":
            return float(e.text)
    elif {"string": "string", "bool": "bool", "date": "date"}[e.kind] == t:
        return e.value
    raise T.TypeErr("literal %r as %s" % (e, t))


def eval_as(e, want, env, vt):
    """e's value as type want (None: its own type): computed in its own
    concrete type, then widened."""
    t = T.concrete(infer(e, vt), want)
    v = eval_in(e, t, env, vt)
    if want is not None and t != want:
        v = T.convert(v, t, want)
    return v


def eval_in(e, t, env, vt):
    if isinstance(e, Paren):
        return eval_in(e.a, t, env, vt)
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Lit):
        return lit_value(e, t)
    if isinstance(e, Neg):
        a = eval_as(e.a, t, env, vt)
        if t == "float64":
            return T.float_result(-a)
        return T.check(t, -a, "-(%r)" % a)
    if isinstance(e, Op):
        op = e.op
        if op == "&&":
            return eval_as(e.a, "bool", env, vt) and eval_as(e.b, "bool", env, vt)
        if op == "||":
            return eval_as(e.a, "bool", env, vt) or eval_as(e.b, "bool", env, vt)
        ta, tb = infer(e.a, vt), infer(e.b, vt)
        if op in COMPARISONS:
            ct = T.concrete(T.compare_type(ta, tb))
            return T.compare_values(op, eval_as(e.a, ct, env, vt), eval_as(e.b, ct, env, vt))
        if "date" in (ta, tb):
            if ta == "date" and tb == "date":
                return eval_as(e.a, "date", env, vt) - eval_as(e.b, "date", env, vt)
            if ta == "date":
                d, n = eval_as(e.a, "date", env, vt), eval_as(e.b, "int64", env, vt)
            else:
                n, d = eval_as(e.a, "int64", env, vt), eval_as(e.b, "date", env, vt)
            return T.add_days(d, n if op == "+" else -n)
        if op == "*" and T.is_dec(t):
            # the words of operands of their own scales (an int: decimal[0]),
            # then widened where a larger scale is wanted
            sa, sb = T.scale(ta), T.scale(tb)
            a = eval_as(e.a, T.dec(sa), env, vt)
            b = eval_as(e.b, T.dec(sb), env, vt)
            r = T.check(T.dec(sa + sb), a * b, "%d * %d" % (a, b))
            return T.convert(r, T.dec(sa + sb), t)
        if op in ("/", "%") and T.is_dec(t) and infer(e, vt) == "intlit":
            # integer literals only: they divide as integers (int64), then
            # the result becomes the decimal (7 / 2 meeting a decimal is 3)
            r = T.arith(op, "int64", eval_as(e.a, "int64", env, vt), eval_as(e.b, "int64", env, vt))
            return T.convert(r, "int64", t)
        a = eval_as(e.a, t, env, vt)
        b = eval_as(e.b, t, env, vt)
        return T.arith(op, t, a, b)
    if isinstance(e, Call):
        return eval_call(e, t, env, vt)
    raise TypeError(e)


def eval_call(e, t, env, vt):
    name, args = e.name, e.args
    if name in ("int32", "int64", "float64", "decimal"):
        x = args[0]
        while isinstance(x, Paren):
            x = x.a
        xt = infer(x, vt)
        # a literal the target holds exactly is made in the target type
        if isinstance(x, Lit) and (xt == "intlit" or (T.is_frac(xt) and (
                t == "float64" or (T.is_dec(t) and T.scale(xt) <= T.scale(t))))):
            return lit_value(x, t)
        frm = T.concrete(xt, T.dec(T.scale(xt)) if T.is_frac(xt) and T.is_dec(t) else None)
        return T.convert(eval_as(x, frm, env, vt), frm, t)
    if name == "if":
        c = eval_as(args[0], "bool", env, vt)
        return eval_as(args[1] if c else args[2], t, env, vt)
    if name == "not":
        return not eval_as(args[0], "bool", env, vt)
    kinds, _ = FUNCTIONS[name]
    vals = [eval_as(a, KIND_TYPE[k], env, vt) for a, k in zip(args, kinds)]
    if name == "year":
        return T.date_from_days(vals[0]).year
    if name == "month":
        return T.date_from_days(vals[0]).month
    if name == "day":
        return T.date_from_days(vals[0]).day
    if name == "add_days":
        return T.add_days(vals[0], vals[1])
    if name == "add_months":
        return T.add_months(vals[0], vals[1])
    if name == "add_years":
        return T.add_months(vals[0], 12 * vals[1])
    if name == "substr":
        return T.substr(*vals)
    if name == "strlen":
        return len(T.sbytes(vals[0]))
    if name == "concat":
        return T.sstr(T.sbytes(vals[0]) + T.sbytes(vals[1]))
    if name == "like":
        return T.like(vals[0], vals[1])
    a, b = T.sbytes(vals[0]), T.sbytes(vals[1])
    if name == "starts_with":
        return a.startswith(b)
    if name == "ends_with":
        return a.endswith(b)
    if name == "contains":
        return b in a
    raise TypeError(name)


def expr_vars(e, out):
    if isinstance(e, Var):
        out.add(e.name)
    elif isinstance(e, (Paren, Neg)):
        expr_vars(e.a, out)
    elif isinstance(e, Op):
        expr_vars(e.a, out)
        expr_vars(e.b, out)
    elif isinstance(e, Call):
        for a in e.args:
            expr_vars(a, out)
    return out


# ---------------------------------------------------------------- rules

def normalize(rule, program):
    """The rule's body with positive atoms' wildcards as fresh variables and
    expression arguments as fresh variables plus an equality condition
    (docs: `r(y + 1)` is `r($1), $1 = y + 1`). Returns (atoms, others,
    var_types): atoms as (pred, args of Var/Lit), others the remaining
    literals."""
    atoms, others, vt = [], [], {}
    fresh = [0]

    def new_var():
        fresh[0] += 1
        return Var("$%d" % fresh[0])
    for lit in rule.body:
        if isinstance(lit, Atom) and not lit.negated:
            types = program.pred(lit.pred).types
            args = []
            for a, t in zip(lit.args, types):
                while isinstance(a, Paren):
                    a = a.a
                if isinstance(a, Wild):
                    v = new_var()
                    vt[v.name] = t
                    args.append(v)
                elif isinstance(a, Var):
                    if a.name in vt and vt[a.name] != t:
                        raise T.TypeErr("variable %s is %s and %s" % (a.name, vt[a.name], t))
                    vt[a.name] = t
                    args.append(a)
                elif isinstance(a, Lit):
                    args.append(a)
                else:
                    v = new_var()
                    vt[v.name] = t
                    args.append(v)
                    others.append(Cond(Op("=", v, a)))
            atoms.append((lit.pred, args, types))
        else:
            others.append(lit)
    pending = [l for l in others if isinstance(l, Assign)]
    while pending:
        for l in list(pending):
            if expr_vars(l.expr, set()) <= set(vt):
                if l.var.name in vt:
                    raise GenBug("assignment to bound variable %s" % l.var.name)
                vt[l.var.name] = value_type(l.expr, vt)
                pending.remove(l)
                break
        else:
            raise GenBug("unsafe assignment in rule for %s" % rule.head)
    return atoms, others, vt


def solve_body(atoms, others, rels, vt):
    """The distinct bindings of all body variables."""
    envs = [{}]
    bound = set()
    for pred, args, types in atoms:
        rel = rels[pred]
        consts = [(i, lit_value(a, t)) for i, (a, t) in enumerate(zip(args, types)) if isinstance(a, Lit)]
        key_pos = [i for i, a in enumerate(args) if isinstance(a, Var) and a.name in bound]
        index = {}
        for tup in rel:
            if all(tup[i] == v for i, v in consts):
                index.setdefault(tuple(tup[i] for i in key_pos), []).append(tup)
        new_envs = []
        for env in envs:
            for tup in index.get(tuple(env[args[i].name] for i in key_pos), ()):
                e2 = dict(env)
                ok = True
                for a, v in zip(args, tup):
                    if isinstance(a, Var):
                        if a.name in e2:
                            if e2[a.name] != v:
                                ok = False
                                break
                        else:
                            e2[a.name] = v
                if ok:
                    new_envs.append(e2)
        envs = new_envs
        bound |= set(a.name for a in args if isinstance(a, Var))
    rest = list(others)
    while rest:
        for lit in rest:
            if isinstance(lit, Assign):
                needs = expr_vars(lit.expr, set())
            elif isinstance(lit, Cond):
                needs = expr_vars(lit.expr, set())
            else:
                needs = set()
                for a in lit.args:
                    expr_vars(a, needs)
            if needs <= bound:
                break
        else:
            raise GenBug("unsafe rule")
        rest.remove(lit)
        if isinstance(lit, Assign):
            for env in envs:
                env[lit.var.name] = eval_as(lit.expr, vt[lit.var.name], env, vt)
            bound.add(lit.var.name)
        elif isinstance(lit, Cond):
            if value_type_cond(lit.expr, vt) != "bool":
                raise T.TypeErr("a condition must be bool")
            envs = [env for env in envs if eval_as(lit.expr, "bool", env, vt)]
        else:
            envs = negation(lit, envs, rels, vt)
    return envs


def value_type_cond(e, vt):
    return infer(e, vt)


def negation(lit, envs, rels, vt):
    types = negation.program.pred(lit.pred).types
    keep = [i for i, a in enumerate(lit.args) if not isinstance(a, Wild)]
    proj = set(tuple(t[i] for i in keep) for t in rels[lit.pred])
    for i in keep:
        a = lit.args[i]
        if isinstance(a, Var) and vt[a.name] != types[i]:
            raise T.TypeErr("negated atom: %s is %s, column %s" % (a.name, vt[a.name], types[i]))
        if not isinstance(a, (Var, Lit)) and not assignable(a, infer(a, vt), types[i]):
            raise T.TypeErr("negated atom argument not assignable to %s" % types[i])
    out = []
    for env in envs:
        key = tuple(lit_value(lit.args[i], types[i]) if isinstance(lit.args[i], Lit)
                    else eval_as(lit.args[i], types[i], env, vt) for i in keep)
        if key not in proj:
            out.append(env)
    return out


def head_value(e, col_type, env, vt):
    t = infer(e, vt)
    if not assignable(e, t, col_type):
        raise T.TypeErr("head: expected %s, found %s" % (col_type, t))
    return eval_as(e, col_type, env, vt)


FLOAT_QUANTUM = Fraction(1, 2 ** 16)


def float_total(vals):
    """A float64 total: the engine adds in its row order, so the oracle
    accepts only sums that are exact in any order (every value a multiple
    of 2^-16, the sum of magnitudes below 2^36)."""
    fr = [Fraction(v) for v in vals]
    if any((f / FLOAT_QUANTUM).denominator != 1 for f in fr) or sum(abs(f) for f in fr) >= 2 ** 36:
        raise GenBug("float total may depend on the order of the rows: %r" % (vals[:5],))
    return T.float_result(float(sum(fr)))


def aggregate(fn, vals, col_type, arg_type):
    if fn == "count":
        return len(vals)
    if fn == "count_distinct":
        return len(set(vals))
    if fn == "total":
        if col_type == "float64":
            return float_total(vals)
        return T.check(col_type, sum(vals), "the total")
    if fn in ("min", "max"):
        pick = min if fn == "min" else max
        return pick(vals, key=lambda v: T.sbytes(v) if isinstance(v, str) else v)
    if fn == "avg":
        n = len(vals)
        if arg_type == "float64":
            return float_total(vals) / float(n)
        total = float(sum(vals))          # exact, rounded once (ties to even)
        s = T.scale(arg_type)
        if s == 0:
            return total / float(n)
        if n * 10 ** s <= 2 ** 53:
            return total / float(n * 10 ** s)
        return total / float(n) / float(10 ** s)
    raise ValueError(fn)


def eval_rule(rule, program, rels):
    atoms, others, vt = normalize(rule, program)
    envs = solve_body(atoms, others, rels, vt)
    head = program.pred(rule.head)
    if rule.agg is None:
        return set(tuple(head_value(a, t, env, vt) for a, t in zip(rule.head_args, head.types))
                   for env in envs)
    aggs = rule.agg
    nk = len(rule.head_args) - len(aggs)
    keys, key_types, res_types = rule.head_args[:nk], head.types[:nk], head.types[nk:]
    arg_types = []
    for (fn, _, arg), ct in zip(aggs, res_types):
        if fn in ("count", "count_distinct"):
            if ct != "int64":
                raise T.TypeErr("%s needs an int64 column" % fn)
        elif fn == "avg":
            if ct != "float64":
                raise T.TypeErr("avg needs a float64 column")
        if fn == "count":
            arg_types.append(None)
        elif fn in ("avg", "count_distinct"):
            at = value_type(arg, vt)      # keeps its own type
            if fn == "avg" and not (T.is_num(at)):
                raise T.TypeErr("avg of %s" % at)
            arg_types.append(at)
        else:
            at = infer(arg, vt)
            if not assignable(arg, at, ct):
                raise T.TypeErr("%s: expected %s, found %s" % (fn, ct, at))
            if fn == "total" and not T.is_num(ct):
                raise T.TypeErr("total of %s" % ct)
            arg_types.append(ct)
    # count/total/avg: over the distinct bindings of all body variables
    seen, groups = set(), {}
    for env in envs:
        ident = tuple(sorted(env.items()))
        if ident in seen:
            continue
        seen.add(ident)
        k = tuple(head_value(e, t, env, vt) for e, t in zip(keys, key_types))
        groups.setdefault(k, []).append(tuple(
            None if at is None else eval_as(arg, at, env, vt)
            for (fn, _, arg), at in zip(aggs, arg_types)))
    if not keys and not groups:
        if all(fn in ("count", "count_distinct") for fn, _, _ in aggs):
            return {tuple(0 for _ in aggs)}
        return set()
    out = set()
    for k, rows in groups.items():
        res = tuple(aggregate(fn, [r[j] for r in rows], ct, at)
                    for j, ((fn, _, _), ct, at) in enumerate(zip(aggs, res_types, arg_types)))
        out.add(k + res)
    return out


def evaluate(program, components, not_stratified):
    """{pred: set of tuples}; see the module doc for what it raises."""
    negation.program = program
    rels = {}
    for p in program.preds:
        for t in p.types:
            if not T.valid_type(t):
                raise T.TypeErr("bad type %s" % t)
        rels[p.name] = set(map(tuple, p.facts)) | set(map(tuple, p.file_rows or ()))
    by_head = {}
    for r in program.rules:
        by_head.setdefault(r.head, []).append(r)
    for comp in components(program):
        comp_set = set(comp)
        rules = [r for p in comp for r in by_head.get(p, ())]
        for r in rules:
            for lit in r.body:
                if isinstance(lit, Atom) and lit.pred in comp_set and (lit.negated or r.agg):
                    raise not_stratified("%s through recursion in %s" %
                                         ("aggregation" if r.agg else "negation", r.head))
        recursive = any(isinstance(l, Atom) and l.pred in comp_set for r in rules for l in r.body)
        while True:
            changed = False
            for r in rules:
                new = eval_rule(r, program, rels) - rels[r.head]
                if new:
                    rels[r.head] |= new
                    changed = True
            if not changed or not recursive:
                break
    return rels
