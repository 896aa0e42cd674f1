"""Programs as data for the differential suite, and their .lql text form.

The generator (gen.py) builds these objects, the oracle (oracle.py) evaluates
them, and `to_text` prints them in the LogiQL dialect Red Fox reads. Keeping
one data model means the oracle never parses text: a parser bug shared by the
oracle and the compiler cannot hide a wrong answer.

Also here: the value semantics shared by oracle and output comparison
(integer wrapping, typed ordering, the TSV output escaping of design.md).
"""

import functools

INT_TYPES = ("int32", "int64")
TYPES = ("int32", "int64", "string")
AGG_FUNCTIONS = ("count", "total", "min", "max", "avg", "count_distinct")
BITS = {"int32": 32, "int64": 64}


# ---------------------------------------------------------------- values

def wrap(value, typ):
    """Two's complement wrap of a Python int to int32/int64."""
    bits = BITS[typ]
    value &= (1 << bits) - 1
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def promote(a, b):
    """Result type of int arithmetic: int32 op int64 -> int64."""
    return "int64" if "int64" in (a, b) else "int32"


def string_literal(s):
    """A string as a source literal: escapes \\ \" \\n \\t (the only escapes
    the generator relies on)."""
    out = ['"']
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_value(value, typ):
    """One field as design.md's output format writes it."""
    if typ == "string":
        if value == "":
            return "\\e"
        text = (value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
                .replace("\r", "\\r"))
        return "\\" + text if text.startswith("#") else text
    if typ == "bool":
        return "true" if value else "false"
    if typ == "float64":
        return repr(float(value))   # shortest round trip (parses back exactly)
    return str(value)


def parse_field(text, typ):
    """Inverse of format_value; raises ValueError on a malformed field."""
    if typ in INT_TYPES:
        if text.strip() != text or text == "":
            raise ValueError("bad integer field %r" % text)
        v = int(text)
        if wrap(v, typ) != v:
            raise ValueError("integer %s out of %s range" % (text, typ))
        return v
    if typ == "bool":
        if text not in ("true", "false"):
            raise ValueError("bad bool field %r" % text)
        return text == "true"
    if typ == "float64":
        return float(text)
    if text == "\\e":
        return ""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            nxt = text[i + 1:i + 2]
            if nxt not in ("\\", "t", "n", "r", "#"):
                raise ValueError("bad escape in string field %r" % text)
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "#": "#"}[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def sort_key(row):
    """Typed value order: ints and floats numerically, strings bytewise
    (UTF-8 byte order equals code point order, so Python's str order is
    right)."""
    return tuple(row)


def output_rows(pred, rows):
    """The rows of an output as written: by the predicate's @order (its
    columns with their directions, then the other columns ascending) or
    else in typed order, then cut to its @limit."""
    order = list(pred.order or [])
    named = set(c for c, _ in order)
    order += [(c, False) for c in range(pred.arity) if c not in named]

    def cmp(a, b):
        for c, desc in order:
            if a[c] != b[c]:
                r = -1 if a[c] < b[c] else 1
                return -r if desc else r
        return 0
    out = sorted(set(rows), key=functools.cmp_to_key(cmp))
    if pred.limit is not None:
        out = out[:pred.limit]
    return out


# ---------------------------------------------------------------- program model

class Pred:
    """A declared predicate. `functional` preds have their last column as the
    value (`f[k..] = v`); the generator uses them only for aggregation."""

    def __init__(self, name, types, functional=False):
        self.name = name
        self.types = list(types)
        self.functional = functional
        self.facts = []           # inline facts: list of tuples
        self.file_rows = None     # rows written to an @input file, or None
        self.file_format = "tsv"  # "tsv" or "csv"
        self.output = False
        self.var_names = None     # declaration variable names (printing only)
        self.order = None         # @order: [(column, descending)], or None
        self.limit = None         # @limit: rows, or None

    @property
    def arity(self):
        return len(self.types)

    @property
    def file_name(self):
        return "%s.%s" % (self.name, self.file_format)


class Var:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Const:
    """A literal. `typ` is the type the literal takes in its context (an
    integer literal takes the type of the other operand / the column)."""

    def __init__(self, value, typ):
        self.value = value
        self.typ = typ

    def __repr__(self):
        return repr(self.value)


class Wild:
    def __repr__(self):
        return "_"


class Bin:
    """Arithmetic (+ - * / %) over int expressions."""

    def __init__(self, op, a, b):
        self.op, self.a, self.b = op, a, b


class Atom:
    def __init__(self, pred, args, negated=False):
        self.pred = pred        # predicate name
        self.args = list(args)  # Var / Const / Wild
        self.negated = negated


class Compare:
    def __init__(self, op, a, b):
        self.op, self.a, self.b = op, a, b


class Assign:
    """`var = expr` binding a fresh variable."""

    def __init__(self, var, expr):
        self.var, self.expr = var, expr


class Rule:
    """head(args) <- body.  For aggregation rules `agg` is a list of
    aggregates (fn, result_var, arg_var_or_None) (one tuple alone is
    accepted too); the head's last len(agg) arguments are the result
    variables in that order, the others the group keys."""

    def __init__(self, head, head_args, body, agg=None):
        self.head = head
        self.head_args = list(head_args)
        self.body = list(body)
        if isinstance(agg, tuple):
            agg = [agg]
        self.agg = agg


class Program:
    def __init__(self):
        self.preds = []           # declaration order
        self.rules = []
        self.comment = ""
        # What running it must do: "ok", "compile_error" or "runtime_error".
        self.expect = "ok"
        self.error_kind = None    # for invalid programs: what was broken
        self.error_rules = []     # rule indexes whose line the error may name
        self.error_facts = []     # (pred name, fact index) the error may name
        self.extra_lines = []     # raw lines appended verbatim (invalid cases)

    def pred(self, name):
        for p in self.preds:
            if p.name == name:
                return p
        return None


# ---------------------------------------------------------------- printing

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def expr_text(e, parent_prec=0, right=False):
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Wild):
        return "_"
    if isinstance(e, Const):
        if e.typ == "string":
            return string_literal(e.value)
        if e.value < 0 and parent_prec:
            # An operand of + - * / %: parenthesised so `x - -3` never
            # appears; works whether the grammar has negative literals or
            # unary minus. Elsewhere (facts, atom arguments) plain `-3`.
            return "(%d)" % e.value
        return str(e.value)
    if isinstance(e, Bin):
        prec = PRECEDENCE[e.op]
        text = "%s %s %s" % (expr_text(e.a, prec), e.op, expr_text(e.b, prec, True))
        # Left-associative: parenthesise a right operand of equal precedence.
        if prec < parent_prec or (right and prec == parent_prec):
            text = "(" + text + ")"
        return text
    raise TypeError(e)


def atom_text(atom, program):
    pred = program.pred(atom.pred)
    args = [expr_text(a) for a in atom.args]
    if pred is not None and pred.functional:
        text = "%s[%s] = %s" % (atom.pred, ", ".join(args[:-1]), args[-1])
    else:
        text = "%s(%s)" % (atom.pred, ", ".join(args))
    return ("!" if atom.negated else "") + text


def literal_text(lit, program):
    if isinstance(lit, Atom):
        return atom_text(lit, program)
    if isinstance(lit, Compare):
        return "%s %s %s" % (expr_text(lit.a), lit.op, expr_text(lit.b))
    if isinstance(lit, Assign):
        return "%s = %s" % (lit.var.name, expr_text(lit.expr))
    raise TypeError(lit)


def rule_text(rule, program):
    pred = program.pred(rule.head)
    args = [expr_text(a) for a in rule.head_args]
    if pred is not None and pred.functional:
        head = "%s[%s] = %s" % (rule.head, ", ".join(args[:-1]), args[-1])
    else:
        head = "%s(%s)" % (rule.head, ", ".join(args))
    body = ", ".join(literal_text(l, program) for l in rule.body)
    if rule.agg:
        body = "agg<<%s>> %s" % (", ".join("%s = %s(%s)" % (result.name, fn, arg.name if arg else "")
                                           for fn, result, arg in rule.agg), body)
    return "%s <- %s." % (head, body)


def decl_text(pred):
    names = pred.var_names or ["v%d" % i for i in range(pred.arity)]
    if pred.functional:
        head = "%s[%s] = %s" % (pred.name, ", ".join(names[:-1]), names[-1])
    else:
        head = "%s(%s)" % (pred.name, ", ".join(names))
    return "%s -> %s." % (head, ", ".join("%s(%s)" % (t, n) for t, n in zip(pred.types, names)))


def fact_text(pred, row):
    # By the value's Python type, not the column's: invalid programs put a
    # string in an int column on purpose.
    vals = [string_literal(v) if isinstance(v, str) else str(v) for v in row]
    if pred.functional:
        return "%s[%s] = %s." % (pred.name, ", ".join(vals[:-1]), vals[-1])
    return "%s(%s)." % (pred.name, ", ".join(vals))


def to_text(program):
    """Returns (text, rule_lines, fact_lines): the program source, the
    1-based line of each rule, and {(pred, fact index): line}."""
    lines = []
    if program.comment:
        lines.extend("// " + c for c in program.comment.split("\n"))
    for p in program.preds:
        lines.append(decl_text(p))
    fact_lines = {}
    for p in program.preds:
        for i, row in enumerate(p.facts):
            lines.append(fact_text(p, row))
            fact_lines[(p.name, i)] = len(lines)
        if p.file_rows is not None:
            if p.file_format == "csv":
                lines.append('@input(%s, "%s", csv).' % (p.name, p.file_name))
            else:
                lines.append('@input(%s, "%s").' % (p.name, p.file_name))
    for p in program.preds:
        if p.output:
            lines.append("@output(%s)." % p.name)
        names = p.var_names or ["v%d" % i for i in range(p.arity)]
        if p.order:
            specs = []
            for c, desc in p.order:
                # asc(...) written out now and then: the same as bare.
                specs.append("desc(%s)" % names[c] if desc else
                             "asc(%s)" % names[c] if (c + len(specs)) % 3 == 2 else names[c])
            lines.append("@order(%s, %s)." % (p.name, ", ".join(specs)))
        if p.limit is not None:
            lines.append("@limit(%s, %d)." % (p.name, p.limit))
    rule_lines = []
    for r in program.rules:
        lines.append(rule_text(r, program))
        rule_lines.append(len(lines))
    lines.extend(program.extra_lines)
    return "\n".join(lines) + "\n", rule_lines, fact_lines


def input_file_text(pred):
    """Contents of a predicate's @input file (plain values only)."""
    sep = "," if pred.file_format == "csv" else "\t"
    out = []
    for row in pred.file_rows:
        out.append(sep.join(str(v) for v in row))
    return "\n".join(out) + ("\n" if out else "")
