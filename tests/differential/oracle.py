"""The naive evaluator: the differential suite's oracle.

Evaluates an lql.Program (the data model, never text) bottom-up: predicates
are grouped into strongly connected components of the dependency graph,
components run in topological order, and each component is iterated to its
least fixpoint by re-running all its rules over Python sets until nothing
changes. Correctness over speed: no semi-naive deltas, no planning beyond a
per-atom hash index.

It computes everything itself (strata, variable types, expression types) so
that it checks the generator as much as the compiler: a program the oracle
finds unstratified raises NotStratified.
"""

from lql import Atom, Compare, Assign, Var, Const, Wild, Bin, INT_TYPES, wrap, promote
import typed
import oracle_typed


class EvalError(typed.EvalError):
    """A run-time fault the engine must report with exit status 2 (the
    typed programs' faults are typed.EvalError, the base class)."""

    def __init__(self, msg, kind="div_zero"):
        typed.EvalError.__init__(self, kind, msg)


class Overflow(EvalError):
    """Checked integer arithmetic: a result outside its type's range."""

    def __init__(self, msg):
        EvalError.__init__(self, msg, "int_overflow")


def checked(value, typ):
    """value if it fits typ (int32/int64), else Overflow (no wrapping)."""
    if wrap(value, typ) != value:
        raise Overflow("integer overflow: %d does not fit %s" % (value, typ))
    return value


class NotStratified(Exception):
    pass


# ---------------------------------------------------------------- expressions

def expr_type(e, var_types):
    if isinstance(e, Var):
        return var_types[e.name]
    if isinstance(e, Const):
        return e.typ
    if isinstance(e, Bin):
        return promote(expr_type(e.a, var_types), expr_type(e.b, var_types))
    raise TypeError(e)


def eval_expr(e, env, var_types):
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Const):
        return e.value
    a = eval_expr(e.a, env, var_types)
    b = eval_expr(e.b, env, var_types)
    typ = expr_type(e, var_types)
    if e.op == "+":
        r = a + b
    elif e.op == "-":
        r = a - b
    elif e.op == "*":
        r = a * b
    else:
        if b == 0:
            raise EvalError("division by zero")
        # C semantics: quotient truncates toward zero, remainder has the
        # dividend's sign. Computed on exact ints, then checked (so
        # INT_MIN / -1 overflows and INT_MIN % -1 is 0).
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        r = q if e.op == "/" else a - b * q
    return checked(r, typ)


def compare(op, a, b):
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b,
            ">": a > b, ">=": a >= b}[op]


def expr_vars(e, out):
    if isinstance(e, Var):
        out.add(e.name)
    elif isinstance(e, Bin):
        expr_vars(e.a, out)
        expr_vars(e.b, out)
    return out


# ---------------------------------------------------------------- strata

def components(program):
    """Tarjan's SCCs over rule dependencies, dependencies first."""
    preds = [p.name for p in program.preds]
    deps = {p: set() for p in preds}
    for r in program.rules:
        for lit in r.body:
            if isinstance(lit, Atom):
                deps[r.head].add(lit.pred)
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in deps[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for p in preds:
        if p not in index:
            visit(p)
    return out  # Tarjan emits each SCC after everything it depends on


# ---------------------------------------------------------------- rules

def rule_var_types(rule, program):
    types = {}
    for lit in rule.body:
        if isinstance(lit, Atom) and not lit.negated:
            for a, t in zip(lit.args, program.pred(lit.pred).types):
                if isinstance(a, Var):
                    types.setdefault(a.name, t)
    # Assignments may chain; resolve in dependency order.
    pending = [l for l in rule.body if isinstance(l, Assign)]
    while pending:
        progress = False
        for l in list(pending):
            if expr_vars(l.expr, set()) <= set(types):
                types[l.var.name] = expr_type(l.expr, types)
                pending.remove(l)
                progress = True
        if not progress:
            raise ValueError("unsafe assignment in rule for %s" % rule.head)
    return types


def solve_body(rule, program, rels, var_types):
    """All variable bindings (dicts) satisfying the body. Positive atoms join
    first in source order; then each other literal runs as soon as all the
    variables it reads are bound."""
    envs = [{}]
    bound = set()
    fresh = 0
    for lit in rule.body:
        if not (isinstance(lit, Atom) and not lit.negated):
            continue
        rel = rels[lit.pred]
        # Wildcards become distinct fresh variables (aggregation counts
        # them as such; elsewhere they are harmless).
        args = []
        for a in lit.args:
            if isinstance(a, Wild):
                args.append(Var("_w%d" % fresh))
                fresh += 1
            else:
                args.append(a)
        key_pos = [i for i, a in enumerate(args)
                   if isinstance(a, Const) or (isinstance(a, Var) and a.name in bound)]
        index = {}
        for t in rel:
            index.setdefault(tuple(t[i] for i in key_pos), []).append(t)
        new_envs = []
        for env in envs:
            key = tuple(a.value if isinstance(a, Const) else env[a.name]
                        for a in (args[i] for i in key_pos))
            for t in index.get(key, ()):
                e2 = dict(env)
                ok = True
                for a, v in zip(args, t):
                    if isinstance(a, Var):
                        if a.name in e2:
                            if e2[a.name] != v:   # repeated variable in the atom
                                ok = False
                                break
                        else:
                            e2[a.name] = v
                if ok:
                    new_envs.append(e2)
        envs = new_envs
        for a in args:
            if isinstance(a, Var):
                bound.add(a.name)
    rest = [l for l in rule.body if not (isinstance(l, Atom) and not l.negated)]
    while rest:
        for lit in rest:
            if isinstance(lit, Assign):
                needs = expr_vars(lit.expr, set())
            elif isinstance(lit, Compare):
                needs = expr_vars(lit.a, set()) | expr_vars(lit.b, set())
            else:
                needs = set(a.name for a in lit.args if isinstance(a, Var))
            if needs <= bound:
                break
        else:
            raise ValueError("unsafe rule for %s" % rule.head)
        rest.remove(lit)
        if isinstance(lit, Assign):
            for env in envs:
                env[lit.var.name] = eval_expr(lit.expr, env, var_types)
            bound.add(lit.var.name)
        elif isinstance(lit, Compare):
            envs = [env for env in envs
                    if compare(lit.op, eval_expr(lit.a, env, var_types),
                               eval_expr(lit.b, env, var_types))]
        else:
            rel = rels[lit.pred]
            wild = [isinstance(a, Wild) for a in lit.args]
            if any(wild):
                # !p(x, _): no tuple of p agrees on the non-wildcard columns.
                keep = [i for i, w in enumerate(wild) if not w]
                proj = set(tuple(t[i] for i in keep) for t in rel)
            else:
                keep, proj = list(range(len(lit.args))), rel

            def value(a, env):
                return a.value if isinstance(a, Const) else env[a.name]
            envs = [env for env in envs
                    if tuple(value(lit.args[i], env) for i in keep) not in proj]
    return envs


def eval_rule(rule, program, rels):
    var_types = rule_var_types(rule, program)
    envs = solve_body(rule, program, rels, var_types)
    out = set()
    if rule.agg is None:
        for env in envs:
            out.add(tuple(eval_expr(a, env, var_types) for a in rule.head_args))
        return out
    aggs = rule.agg
    keys = rule.head_args[:len(rule.head_args) - len(aggs)]
    # count, total and avg range over the distinct bindings of all body
    # variables (solve_body yields each binding once per distinct
    # combination, since relations are sets and wildcards are variables;
    # dedup anyway for safety); min, max and count_distinct over values.
    seen = set()
    groups = {}
    for env in envs:
        ident = tuple(sorted(env.items()))
        if ident in seen:
            continue
        seen.add(ident)
        k = tuple(env[v.name] for v in keys)
        groups.setdefault(k, []).append(tuple(env[arg.name] if arg else None for _, _, arg in aggs))
    if not keys and not groups and all(fn in ("count", "count_distinct") for fn, _, _ in aggs):
        return {tuple(0 for _ in aggs)}
    for k, rows in groups.items():
        res = []
        for j, (fn, result, arg) in enumerate(aggs):
            vals = [r[j] for r in rows]
            if fn == "count":
                res.append(len(vals))
            elif fn == "total":
                typ = var_types[arg.name]
                res.append(checked(sum(vals), typ))
                # A running total in another order may leave the type on the
                # way (the engine's order is that of its words): may_overflow.
                pos = sum(v for v in vals if v > 0)
                neg = sum(v for v in vals if v < 0)
                if wrap(pos, typ) != pos or wrap(neg, typ) != neg:
                    program.total_may_overflow = True
            elif fn == "min":
                res.append(min(vals))
            elif fn == "max":
                res.append(max(vals))
            elif fn == "avg":
                # the exact total rounded to a double once, then divided
                # (docs/language.md, "Aggregation")
                res.append(float(sum(vals)) / len(vals))
            elif fn == "count_distinct":
                res.append(len(set(vals)))
            else:
                raise ValueError("unknown aggregate %s" % fn)
        out.add(k + tuple(res))
    return out


def evaluate(program):
    """Returns {pred name: set of tuples}. Raises EvalError on a run-time
    fault and NotStratified if negation/aggregation goes through recursion."""
    if getattr(program, "lang", "classic") == "biz":
        return oracle_typed.evaluate(program, components, NotStratified)
    rels = {}
    for p in program.preds:
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
                    raise NotStratified("%s through recursion in %s" %
                                        ("aggregation" if r.agg else "negation", r.head))
        recursive = any(isinstance(l, Atom) and l.pred in comp_set
                        for r in rules for l in r.body)
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


# ---------------------------------------------------------------- plan-independent overflow

def _interval(e, env, var_types):
    """Bounds (lo, hi) of e's exact value when each variable ranges over
    env[name] = (lo, hi); raises Overflow when some value in the bounds of
    any subexpression does not fit its type (conservative: intervals
    over-approximate)."""
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Const):
        return (e.value, e.value)
    a = _interval(e.a, env, var_types)
    b = _interval(e.b, env, var_types)
    if e.op == "+":
        r = (a[0] + b[0], a[1] + b[1])
    elif e.op == "-":
        r = (a[0] - b[1], a[1] - b[0])
    elif e.op == "*":
        corners = [x * y for x in a for y in b]
        r = (min(corners), max(corners))
    elif e.op == "/":
        # |a / b| <= |a| for b != 0; a divisor -1 negates.
        m = max(abs(a[0]), abs(a[1]))
        r = (-m, m)
    else:
        # |a % b| < |b| and <= |a|
        m = min(max(abs(a[0]), abs(a[1])), max(abs(b[0]), abs(b[1])))
        r = (-m, m)
    typ = expr_type(e, var_types)
    checked(r[0], typ)
    checked(r[1], typ)
    return r


def may_overflow(program, rels):
    """Whether some plan could meet an integer overflow: each rule's
    expressions evaluated over every combination of its variables' values,
    a variable ranging over the hull of the values of the atom columns it
    appears in (plans evaluate expressions on partial joins, in any order
    of the filters, so the bindings the oracle evaluates are not the only
    ones). `rels` are the relations of a run that did not overflow."""
    if getattr(program, "total_may_overflow", False):
        return True
    for rule in program.rules:
        var_types = rule_var_types(rule, program)
        env = {}
        for lit in rule.body:
            if not isinstance(lit, Atom):
                continue
            rel = rels[lit.pred]
            for i, a in enumerate(lit.args):
                if isinstance(a, Var) and var_types.get(a.name) in INT_TYPES:
                    vals = [t[i] for t in rel]
                    if not vals:
                        continue
                    lo, hi = env.get(a.name, (min(vals), max(vals)))
                    env[a.name] = (min(lo, min(vals)), max(hi, max(vals)))
        # `x = y` between variables may make them one variable (a join):
        # either one's values may then meet the other's expressions.
        for _ in rule.body:   # chains x = y, y = z: to a fixpoint
            for lit in rule.body:
                if (isinstance(lit, Compare) and lit.op == "=" and isinstance(lit.a, Var) and
                        isinstance(lit.b, Var) and lit.a.name in env and lit.b.name in env):
                    ia, ib = env[lit.a.name], env[lit.b.name]
                    env[lit.a.name] = env[lit.b.name] = (min(ia[0], ib[0]), max(ia[1], ib[1]))
        assigned = set(l.var.name for l in rule.body if isinstance(l, Assign))
        for name, t in var_types.items():
            if name not in env and name not in assigned:
                env[name] = (0, 0)   # only in empty relations (or not an int)
        exprs = []
        try:
            pending = [l for l in rule.body if isinstance(l, Assign)]
            while pending:   # dependency order (rule_var_types checked it resolves)
                for l in list(pending):
                    if expr_vars(l.expr, set()) <= set(env):
                        if var_types.get(l.var.name) in INT_TYPES:
                            env[l.var.name] = _interval(l.expr, env, var_types)
                        else:
                            env[l.var.name] = (0, 0)
                        pending.remove(l)
            for lit in rule.body:
                if isinstance(lit, Compare):
                    exprs += [lit.a, lit.b]
            exprs += list(rule.head_args)
            for e in exprs:
                if var_types_of(e, var_types) in INT_TYPES:
                    _interval(e, env, var_types)
        except Overflow:
            return True
    return False


def var_types_of(e, var_types):
    try:
        return expr_type(e, var_types)
    except (KeyError, TypeError):
        return None
