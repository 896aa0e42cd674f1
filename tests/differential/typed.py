"""Values, types and scalar semantics of the business-query language, for
the oracle: written from docs/language.md ("Types", "Types in expressions",
"Functions", "Values in files"), never from the C code.

Representation of values (per concrete type):
  int32, int64   Python int
  float64        Python float (-0.0 is the same value as 0.0)
  bool           Python bool
  string         Python str; bytes that are not UTF-8 (a substr cutting a
                 character) as surrogate escapes, so the string's bytes are
                 s.encode("utf-8", "surrogateescape")
  date           int: the day number, 0 = 1970-01-01 (Python's datetime does
                 the calendar: it covers exactly the years 1..9999)
  decimal[s]     int: the value times 10^s (the "word"); |word| < 2^63

Types are strings: "int32", "int64", "float64", "bool", "string", "date",
"decimal[s]"; while an expression is typed, integer literals have the
flexible type "intlit" and plain-digit fraction literals "frac[k]" (k
fraction digits written), resolved by where they meet a typed value.

Run-time faults raise EvalError (with a kind); a program the language
rejects raises TypeErr (the generator never means to make one by accident).
"""

import calendar
import datetime
import math
from fractions import Fraction

INT_RANGE = {"int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}
DEC_MAX = 2 ** 63 - 1          # |word| of a decimal (the range is symmetric)
EPOCH = datetime.date(1970, 1, 1).toordinal()
DATE_MIN = datetime.date(1, 1, 1).toordinal() - EPOCH
DATE_MAX = datetime.date(9999, 12, 31).toordinal() - EPOCH
CONCRETE = ("int32", "int64", "float64", "bool", "string", "date")


class EvalError(Exception):
    """A run-time fault: the engine must stop with exit status 2. kind is
    one of div_zero, int_overflow, dec_overflow, date_range, range,
    float_overflow, substr."""

    def __init__(self, kind, msg):
        Exception.__init__(self, msg)
        self.kind = kind


class TypeErr(Exception):
    """The program is not well typed (a compile error)."""


# ---------------------------------------------------------------- types

def dec(s):
    return "decimal[%d]" % s


def is_dec(t):
    return t.startswith("decimal[")


def is_frac(t):
    return t.startswith("frac[")


def is_int(t):
    return t in ("int32", "int64", "intlit")


def is_flex(t):
    return t == "intlit" or is_frac(t)


def is_num(t):
    return is_int(t) or t == "float64" or is_dec(t) or is_frac(t)


def scale(t):
    """Fraction digits: decimal[s] and frac[k]; 0 for integers."""
    if is_dec(t):
        return int(t[8:-1])
    if is_frac(t):
        return int(t[5:-1])
    return 0


def valid_type(t):
    return t in CONCRETE or (is_dec(t) and 0 <= scale(t) <= 18)


def num_join(a, b):
    """The type two numbers meet in (+ -, comparisons, if): the wider; an
    integer literal takes the other side's type; a fraction literal is the
    exact decimal where it meets a decimal, float64 where it meets an int or
    a float64; int32 with int64 is int64; an int with a decimal is the
    decimal; decimals meet in the larger scale; float64 wins."""
    if a == b:
        return a
    if a == "intlit":
        return b
    if b == "intlit":
        return a
    if "float64" in (a, b):
        return "float64"
    da, db = is_dec(a) or is_frac(a), is_dec(b) or is_frac(b)
    if da and db:
        s = max(scale(a), scale(b))
        return "frac[%d]" % s if is_frac(a) and is_frac(b) else dec(s)
    if is_frac(a) or is_frac(b):
        return "float64"          # a fraction literal meeting an int
    if da:
        return a
    if db:
        return b
    return "int64"


def compare_type(a, b):
    """The type both sides of a comparison are compared in (a flexible one
    stays flexible: concrete() decides)."""
    if is_num(a) and is_num(b):
        return num_join(a, b)
    if a == b:
        return a
    raise TypeErr("cannot compare %s with %s" % (a, b))


def concrete(t, want=None):
    """A flexible type made concrete where `want` is asked for: an integer
    literal takes any numeric want (else int64), a fraction literal a
    decimal want (else float64)."""
    if t == "intlit":
        return want if want is not None and (is_num(want) and not is_flex(want)) else "int64"
    if is_frac(t):
        return want if want is not None and is_dec(want) else "float64"
    return t


def arith_type(op, ta, tb):
    """Result type of ta op tb for + - * / % (docs/language.md)."""
    if "date" in (ta, tb):
        if op == "+" and ((ta == "date" and is_int(tb)) or (is_int(ta) and tb == "date")):
            return "date"
        if op == "-" and ta == "date" and is_int(tb):
            return "date"
        if op == "-" and ta == "date" and tb == "date":
            return "int64"
        raise TypeErr("cannot apply '%s' to %s and %s" % (op, ta, tb))
    if not (is_num(ta) and is_num(tb)):
        raise TypeErr("'%s' needs numbers, found %s and %s" % (op, ta, tb))
    da, db = is_dec(ta) or is_frac(ta), is_dec(tb) or is_frac(tb)
    if op == "*":
        if "float64" in (ta, tb) or (not da and not db):
            return num_join(ta, tb)
        # a fraction literal meeting an int (not a literal) is float64
        if (is_frac(ta) and not is_flex(tb) and not db) or (is_frac(tb) and not is_flex(ta) and not da):
            return "float64"
        s = scale(ta) + scale(tb)
        if is_flex(ta) and is_flex(tb):
            return "frac[%d]" % s if s <= 18 else "float64"
        if s > 18:
            raise TypeErr("decimal scale %d exceeds 18" % s)
        return dec(s)
    if op == "/":
        return "float64" if da or db else num_join(ta, tb)
    if op == "%":
        if is_dec(ta) or is_dec(tb):
            raise TypeErr("'%%' does not apply to %s" % (ta if is_dec(ta) else tb))
        return "float64" if da or db else num_join(ta, tb)
    return num_join(ta, tb)


def widens(frm, to):
    """Implicit conversion of a typed value (int32 -> int64 -> decimal[s] ->
    float64, ints -> float64, decimal[s1] -> decimal[s2] with s2 >= s1)."""
    if frm == to:
        return True
    if frm == "int32" and to == "int64":
        return True
    if frm in ("int32", "int64"):
        return to == "float64" or is_dec(to)
    if is_dec(frm):
        return to == "float64" or (is_dec(to) and scale(to) >= scale(frm))
    return False


# ---------------------------------------------------------------- values

def fits(t, v):
    if t in INT_RANGE:
        lo, hi = INT_RANGE[t]
        return lo <= v <= hi
    if is_dec(t):
        return -DEC_MAX <= v <= DEC_MAX
    if t == "date":
        return DATE_MIN <= v <= DATE_MAX
    return True


def check(t, v, what):
    if not fits(t, v):
        kind = "dec_overflow" if is_dec(t) else "date_range" if t == "date" else "int_overflow"
        word = {"dec_overflow": "decimal overflow", "date_range": "date out of range",
                "int_overflow": "integer overflow"}[kind]
        raise EvalError(kind, "%s: %s does not fit %s" % (word, what, t))
    return v


def trunc_div(a, b):
    """C division: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def round_half_away(x):
    """x (a Fraction or an exact float) rounded to an integer, halves away
    from zero."""
    x = Fraction(x)
    r = math.floor(abs(x) + Fraction(1, 2))
    return -r if x < 0 else r


def float_result(r):
    if math.isinf(r) or math.isnan(r):
        raise EvalError("float_overflow", "float64 overflow")
    return r + 0.0   # -0.0 -> 0.0


def convert(v, frm, to):
    """A value of type frm as type to: the implicit widenings and the
    conversion functions int32(), int64(), float64(), decimal[s]()."""
    if frm == to:
        return v
    if frm in ("int32", "int64") and to == "int64":
        return v
    if frm in ("int32", "int64") and to == "float64":
        return float(v)            # nearest double
    if frm == "int64" and to == "int32":
        if not fits("int32", v):
            raise EvalError("range", "value %d out of range for int32" % v)
        return v
    if frm == "float64" and to in INT_RANGE:
        r = math.trunc(v)         # toward zero
        if not fits(to, r):
            raise EvalError("range", "value %r out of range for %s" % (v, to))
        return r
    if (frm in ("int32", "int64") or is_dec(frm)) and is_dec(to):
        s1, s2 = scale(frm), scale(to)
        if s2 >= s1:
            r = v * 10 ** (s2 - s1)
        else:
            r = round_half_away(Fraction(v, 10 ** (s1 - s2)))
        if not fits(to, r):
            raise EvalError("range", "value out of range for %s" % to)
        return r
    if is_dec(frm) and to in INT_RANGE:
        r = trunc_div(v, 10 ** scale(frm))
        if not fits(to, r):
            raise EvalError("range", "value out of range for %s" % to)
        return r
    if is_dec(frm) and to == "float64":
        # the word to the nearest double, divided by 10^s (one IEEE division)
        s = scale(frm)
        return float(v) / float(10 ** s) if s else float(v)
    if frm == "float64" and is_dec(to):
        # x * 10^s in float64 (one IEEE product), rounded half away from zero
        r = round_half_away(v * float(10 ** scale(to)))
        if not (-2 ** 63 < r < 2 ** 63):
            raise EvalError("range", "value %r out of range for %s" % (v, to))
        return r
    raise TypeErr("cannot convert %s to %s" % (frm, to))


def compare_values(op, a, b):
    if isinstance(a, str):
        a, b = a.encode("utf-8", "surrogateescape"), b.encode("utf-8", "surrogateescape")
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b,
            ">": a > b, ">=": a >= b}[op]


def arith(op, t, a, b):
    """a op b, both of type t (the result type), for + - * / % on ints,
    decimals of one scale (+ - only) and floats."""
    if t == "float64":
        if op in ("/", "%") and b == 0.0:
            raise EvalError("div_zero", "division by zero")
        r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
             "/": lambda: a / b, "%": lambda: math.fmod(a, b)}[op]()
        return float_result(r)
    if op in ("/", "%"):
        if b == 0:
            raise EvalError("div_zero", "division by zero")
        q = trunc_div(a, b)
        r = q if op == "/" else a - b * q
    else:
        r = {"+": a + b, "-": a - b, "*": a * b}[op]
    return check(t, r, "%r %s %r" % (a, op, b))


# ---------------------------------------------------------------- dates

def date_from_days(n):
    return datetime.date.fromordinal(n + EPOCH)


def days_from_date(d):
    return d.toordinal() - EPOCH


def parse_date_text(text):
    """YYYY-MM-DD (a real day of years 0001..9999) -> day number; ValueError."""
    if len(text) != 10 or text[4] != "-" or text[7] != "-" or \
            not (text[:4] + text[5:7] + text[8:]).isdigit():
        raise ValueError("not a date: %r" % text)
    return days_from_date(datetime.date(int(text[:4]), int(text[5:7]), int(text[8:])))


def format_date(n):
    d = date_from_days(n)
    return "%04d-%02d-%02d" % (d.year, d.month, d.day)


def add_days(d, n):
    r = d + n
    if not fits("date", r):
        raise EvalError("date_range", "date out of range: %s" % d)
    return r


def add_months(d, n):
    """The day clamped to the last day of the month reached."""
    date = date_from_days(d)
    m = date.year * 12 + (date.month - 1) + n
    y, mo = divmod(m, 12)
    if not 1 <= y <= 9999:
        raise EvalError("date_range", "date out of range: %s" % d)
    mo += 1
    return days_from_date(datetime.date(y, mo, min(date.day, calendar.monthrange(y, mo)[1])))


# ---------------------------------------------------------------- strings

def sbytes(s):
    return s.encode("utf-8", "surrogateescape")


def sstr(b):
    return b.decode("utf-8", "surrogateescape")


def substr(s, start, length):
    """SQL SUBSTRING(s FROM start FOR length): 1-based byte positions,
    clipped; a negative length is a fault."""
    if length < 0:
        raise EvalError("substr", "substr: negative length")
    b = sbytes(s)
    lo = max(start, 1)
    hi = min(start + length, len(b) + 1)   # exclusive, 1-based
    return sstr(b[lo - 1:hi - 1]) if hi > lo else ""


def like(s, pat):
    """SQL LIKE over bytes: % any run, _ one byte, no escape character."""
    s, p = sbytes(s), sbytes(pat)
    # dynamic programming over (pattern position, string position)
    reach = {0}
    for ch in p:
        if ch == ord("%"):
            lo = min(reach) if reach else None
            reach = set(range(lo, len(s) + 1)) if lo is not None else set()
        elif ch == ord("_"):
            reach = {i + 1 for i in reach if i < len(s)}
        else:
            reach = {i + 1 for i in reach if i < len(s) and s[i] == ch}
    return len(s) in reach


# ---------------------------------------------------------------- text forms

def decimal_text(word, s):
    """Exactly s fraction digits; no point when s = 0."""
    sign = "-" if word < 0 else ""
    digits = str(abs(word)).rjust(s + 1, "0")
    return sign + (digits[:-s] + "." + digits[-s:] if s else digits)


def parse_decimal_text(text, s, exact_scale):
    """-?digits[.digits] -> word; with exact_scale (output files) exactly s
    fraction digits are required, else at most s."""
    neg = text.startswith("-")
    body = text[1:] if neg else text
    whole, dot, frac = body.partition(".")
    if not whole.isdigit() or (dot and not frac.isdigit()) or (dot and s == 0 and exact_scale):
        raise ValueError("not a decimal: %r" % text)
    if exact_scale and len(frac) != s:
        raise ValueError("decimal %r does not have exactly %d fraction digits" % (text, s))
    if len(frac) > s:
        raise ValueError("decimal %r has more than %d fraction digits" % (text, s))
    word = int(whole + frac.ljust(s, "0"))
    return -word if neg else word


def significant_digits(text):
    """The significant digits of a number's text (no sign, point, exponent,
    leading or trailing zeros)."""
    mant = text.lstrip("+-").lower().split("e")[0].replace(".", "")
    return mant.strip("0") or "0"


def check_float_text(text, value):
    """Output of a float64: reads back as value with the fewest significant
    digits that do (Python's repr is the shortest round trip), no sign on
    zero. Raises ValueError."""
    if text.strip() != text or text.lower() in ("nan", "inf", "-inf", "+inf") or "x" in text.lower():
        raise ValueError("bad float field %r" % text)
    got = float(text)
    if got != value:
        raise ValueError("float %r is not %r" % (text, value))
    if value == 0:
        if text != "0":
            raise ValueError("zero written as %r, expected 0" % text)
        return
    if len(significant_digits(text)) != len(significant_digits(repr(value))):
        raise ValueError("float %r is not the shortest form (%r)" % (text, repr(value)))
