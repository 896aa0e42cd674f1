"""Programs as data for the differential suite, and their .lql text form.

The generator (gen.py) builds these objects, the oracle (oracle.py) evaluates
them, and `to_text` prints them in the LogiQL dialect Red Fox reads. Keeping
one data model means the oracle never parses text: a parser bug shared by the
oracle and the compiler cannot hide a wrong answer.

Also here: the value semantics shared by oracle and output comparison
(integer wrapping, typed ordering, the TSV output escaping of design.md).
"""

import functools
from fractions import Fraction

import typed

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
    if typ == "date":
        return typed.format_date(value)
    if typ.startswith("decimal["):
        return typed.decimal_text(value, typed.scale(typ))
    if typ == "float64" and value == 0:
        return "0"
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
    if typ == "date":
        return typed.parse_date_text(text)
    if typ.startswith("decimal["):
        return typed.parse_decimal_text(text, typed.scale(typ), True)
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


def value_key(v):
    """Typed order of one value: numbers (and the words of dates and
    decimals) by value, strings bytewise by their UTF-8 text (strings cut
    inside a character carry surrogate escapes: compared as their bytes),
    false < true."""
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    return v


def sort_key(row):
    """Typed row order: value_key column by column."""
    return tuple(value_key(v) for v in row)


def output_rows(pred, rows):
    """The rows of an output as written: by the predicate's @order (its
    columns with their directions, then the other columns ascending) or
    else in typed order, then cut to its @limit."""
    order = list(pred.order or [])
    named = set(c for c, _ in order)
    order += [(c, False) for c in range(pred.arity) if c not in named]

    def cmp(a, b):
        for c, desc in order:
            x, y = value_key(a[c]), value_key(b[c])
            if x != y:
                r = -1 if x < y else 1
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


# ---------------------------------------------------------------- typed expressions
# The business-query language (gen_biz.py; the oracle types and evaluates
# them with typed.py). Old programs (gen.py) use Const/Bin/Compare only.

class Lit:
    """A literal as written. kind: 'int' (an integer literal: adapts to
    what it meets), 'frac' (plain digits with a point, text like "0.50":
    value is the exact Fraction), 'float' (exponent form, always float64),
    'string', 'bool', 'date' (value: the day number; text YYYY-MM-DD)."""

    def __init__(self, kind, value, text=None):
        self.kind, self.value, self.text = kind, value, text

    @staticmethod
    def frac(text):
        return Lit("frac", Fraction(text), text)

    @staticmethod
    def date(text):
        return Lit("date", typed.parse_date_text(text), text)

    def negative(self):
        return self.kind in ("int", "frac", "float") and (
            self.value < 0 or (self.text or "").startswith("-"))

    def __repr__(self):
        return lit_text(self)


class Op:
    """a op b: arithmetic (+ - * / %), comparison (= != < <= > >=) or
    logic (&& ||)."""

    def __init__(self, op, a, b):
        self.op, self.a, self.b = op, a, b


class Neg:
    def __init__(self, a):
        self.a = a


class Call:
    """name(args): a function of docs/language.md, a conversion (int32,
    int64, float64, decimal with scale) or if/not."""

    def __init__(self, name, args, scale=None):
        self.name, self.args, self.scale = name, list(args), scale


class Paren:
    """Redundant parentheses (printing only)."""

    def __init__(self, a):
        self.a = a


class Cond:
    """A body literal that is a bool expression. bang: a test function
    negated the way an atom is, `!starts_with(s, "a")` (expr is then
    not(call))."""

    def __init__(self, expr, bang=False):
        self.expr, self.bang = expr, bang


TEST_FUNCTIONS = ("like", "starts_with", "ends_with", "contains")
OP_PREC = {"||": 1, "&&": 2, "=": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
           "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}


def lit_text(e):
    if e.kind == "int":
        return str(e.value)
    if e.kind in ("frac", "float"):
        return e.text
    if e.kind == "string":
        return string_literal(e.value)
    if e.kind == "bool":
        return "true" if e.value else "false"
    if e.kind == "date":
        return 'date("%s")' % e.text
    raise TypeError(e.kind)


def typed_expr_text(e, parent=0, right=False):
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Wild):
        return "_"
    if isinstance(e, Lit):
        t = lit_text(e)
        return "(%s)" % t if parent and e.negative() else t
    if isinstance(e, Paren):
        return "(%s)" % typed_expr_text(e.a)
    if isinstance(e, Neg):
        t = "-" + typed_expr_text(e.a, 6)
        return "(%s)" % t if parent else t
    if isinstance(e, Call):
        name = "decimal[%d]" % e.scale if e.name == "decimal" else e.name
        return "%s(%s)" % (name, ", ".join(typed_expr_text(a) for a in e.args))
    if isinstance(e, Op):
        p = OP_PREC[e.op]
        text = "%s %s %s" % (typed_expr_text(e.a, p), e.op, typed_expr_text(e.b, p, True))
        if p < parent or (p == parent and (right or p == 3)):
            text = "(" + text + ")"
        return text
    if isinstance(e, (Const, Bin)):
        return expr_text(e, parent, right)
    raise TypeError(e)


def value_literal(v, typ, variant=0):
    """A constant of a column type as program text; variant picks among
    equivalent spellings (decimals with fewer or more fraction digits, an
    integral float as an integer literal)."""
    if typ == "string":
        return string_literal(v)
    if typ == "bool":
        return "true" if v else "false"
    if typ == "date":
        return 'date("%s")' % typed.format_date(v)
    if typ == "float64":
        if variant % 3 == 1 and v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return repr(v)
    if typ.startswith("decimal["):
        s = typed.scale(typ)
        text = typed.decimal_text(v, s)
        if variant % 4 == 1 and s > 0:      # fewer digits: 12.5 for 12.50, 7 for 7.00
            text = text.rstrip("0").rstrip(".")
        elif variant % 4 == 2:              # more digits: 12.500
            text = text + ("0" if s else ".0")
        return text
    return str(v)


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
    args = [typed_expr_text(a) for a in atom.args]
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
        if getattr(lit, "flipped", False):
            return "%s = %s" % (typed_expr_text(lit.expr, 3), lit.var.name)
        return "%s = %s" % (lit.var.name, typed_expr_text(lit.expr, 3))
    if isinstance(lit, Cond):
        e = lit.expr
        if lit.bang and program.pred(e.args[0].name) is None:
            return "!" + typed_expr_text(e.args[0])
        if isinstance(e, Call) and program.pred(e.name) is not None:
            # a predicate named like the function: a call alone at the top
            # of a literal would be its atom; in parentheses it is the call
            return "(%s)" % typed_expr_text(e)
        return typed_expr_text(e)
    raise TypeError(lit)


def rule_text(rule, program):
    pred = program.pred(rule.head)
    args = [typed_expr_text(a) for a in rule.head_args]
    if pred is not None and pred.functional:
        head = "%s[%s] = %s" % (rule.head, ", ".join(args[:-1]), args[-1])
    else:
        head = "%s(%s)" % (rule.head, ", ".join(args))
    body = ", ".join(literal_text(l, program) for l in rule.body)
    if rule.agg:
        body = "agg<<%s>> %s" % (", ".join("%s = %s(%s)" % (result.name, fn, typed_expr_text(arg) if arg else "")
                                           for fn, result, arg in rule.agg), body)
    return "%s <- %s." % (head, body)


def decl_text(pred):
    names = pred.var_names or ["v%d" % i for i in range(pred.arity)]
    if pred.functional:
        head = "%s[%s] = %s" % (pred.name, ", ".join(names[:-1]), names[-1])
    else:
        head = "%s(%s)" % (pred.name, ", ".join(names))
    return "%s -> %s." % (head, ", ".join("%s(%s)" % (t, n) for t, n in zip(pred.types, names)))


def fact_text(pred, row, variant=0):
    # By the value's Python type, not the column's: invalid programs put a
    # string in an int column on purpose.
    if getattr(pred, "typed_facts", False):
        vals = [value_literal(v, t, variant + i) for i, (v, t) in enumerate(zip(row, pred.types))]
    else:
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
            lines.append(fact_text(p, row, i))
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
    for i, row in enumerate(pred.file_rows):
        if getattr(pred, "typed_facts", False):
            out.append(sep.join(file_value(v, t, i + j) for j, (v, t) in enumerate(zip(row, pred.types))))
        else:
            out.append(sep.join(str(v) for v in row))
    return "\n".join(out) + ("\n" if out else "")


def file_value(v, typ, variant=0):
    """A field of an input file (plain strings only: no escapes needed)."""
    if typ == "bool":
        return "true" if v else "false"
    if typ == "date":
        return typed.format_date(v)
    if typ == "float64":
        return repr(v)
    if typ.startswith("decimal["):
        s = typed.scale(typ)
        text = typed.decimal_text(v, s)
        if variant % 3 == 1 and s > 0:      # fewer digits are padded
            text = text.rstrip("0").rstrip(".")
        return text
    return str(v)
