/* Conjunctive select planning: splitting a filter into conjuncts, the cost
 * model, the planner, plan text and the calibration file (selplan.h).
 *
 * The cost model (Sitaridi & Ross s. 3, at the granularity of 32-byte
 * sectors as in docs/weaver.md s. 4.4). N input rows, W = 32 lanes per warp,
 * V = 4 eight-byte words per sector. Positions 0..n-1 of the plan's order;
 * S(i) = product of sel over positions < i (independent conjuncts). For a
 * kernel starting at position k and a group (a run joined by &) [a, b):
 *
 *   warps_k   = N S(k) / W                  the warps the kernel runs
 *   live(k,a) = 1 if a == k, else 1 - (1 - S(a)/S(k))^W
 *                                           share of them with a lane alive at the group
 *   mem       = m r_m (N/V) (1 - (1 - S(a))^(V f)) sigma_k
 *       m: columns the group reads that no earlier group of the kernel read
 *       (those are in registers); the memory fetches f sectors (V f rows)
 *       at a time, all of them when one of the V f rows is alive (a
 *       branch-free first group reads all N/V sectors); r_m: loads of m
 *       columns issued together overlap; sigma_k: sector_ns in the first
 *       kernel, gather_sector_ns in later ones (reads through row ids)
 *   comp      = warps_k live(k,a) sum(cost_i)   a warp pays for the whole
 *       group if any lane is alive: the divergence penalty of the paper
 *   group     = (mem + comp) * (diverge if a > k, i.e. under a branch)
 *   && after the group: warps_k live(k,a) branch_ns
 *   | at position b: launch_ns + N S(b) rid_bytes / 32 (write_sector_ns + sector_ns)
 *       (row ids written, then read back by the next kernel)
 *
 * Everything depends only on the prefix before a group and the kernel's
 * start, so for a fixed order the cheapest grouping is a shortest path
 * over (kernel start, group start): the paper's O(n^3) dynamic program
 * over consecutive subsets (its Algorithm 1 and the multi-kernel variant)
 * in prefix form. The rows that pass every conjunct are the same in every
 * plan, so writing them is not counted. */
#include "selplan.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Splitting ---- */

/* start[k]: the first instruction of the subtree ending at k (postfix: an
 * operand ends right before the next one starts). */
static int *subtree_starts(const rf_code *c)
{
    int *start = rf_malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *start);
    for (int k = 0; k < c->n; k++) {
        int s = k;
        for (int a = rf_expr_arity((rf_exop)c->ins[k].op); a > 0; a--)
            s = start[s - 1];
        start[k] = s;
    }
    return start;
}

typedef RF_VEC(int) int_vec;

/* IF(a, b, false) of booleans: what weaver/compose.c makes of a chain's
 * filters (a, then b only where a holds), the same as a && b. */
static bool is_lazy_and(const rf_code *c, const int *start, int k)
{
    const rf_instr *in = &c->ins[k];
    if (in->op != RF_EX_IF || in->type != RF_TYPE_BOOL || k < 2)
        return false;
    const rf_instr *no = &c->ins[k - 1];
    int then_end = start[k - 1] - 1;
    return no->op == RF_EX_CONST && no->value == 0 && then_end >= 0 && c->ins[then_end].type == RF_TYPE_BOOL;
}

static void collect(const rf_code *c, const int *start, int k, int_vec *ends)
{
    if (c->ins[k].op == RF_EX_AND) {
        int right = k - 1, left = start[right] - 1;
        collect(c, start, left, ends);
        collect(c, start, right, ends);
    } else if (is_lazy_and(c, start, k)) {
        int then_end = start[k - 1] - 1, cond_end = start[then_end] - 1;
        collect(c, start, cond_end, ends);
        collect(c, start, then_end, ends);
    } else {
        RF_PUSH(*ends, k);
    }
}

/* Casts without a failure path in rf_sops_cast. Others (narrowing, from
 * float, and any cast to decimal) can fault on some value. */
static bool cast_is_safe(rf_type from, rf_type to)
{
    bool from_int = from == RF_TYPE_INT32 || from == RF_TYPE_INT64;
    return from == to || (from_int && (to == RF_TYPE_INT64 || to == RF_TYPE_FLOAT64)) ||
           (rf_type_is_decimal(from) && (to == RF_TYPE_FLOAT64 || to == RF_TYPE_INT64));
}

/* Whether the instruction can raise a run-time error, read off
 * rf_scalar_ops.h and rf_scalar_string: + - * overflow on every type
 * (float64 to inf too), / and % divide by zero, negation overflows on
 * integers, add_months/add_years leave the date range, substr rejects a
 * negative length. Unknown ops count as faulting. */
static bool instr_can_fault(const rf_instr *in)
{
    switch ((rf_exop)in->op) {
    case RF_EX_CONST: case RF_EX_COL: case RF_EX_ROWID:
    case RF_EX_NOT: case RF_EX_AND: case RF_EX_OR: case RF_EX_IF:
    case RF_EX_EQ: case RF_EX_NE: case RF_EX_LT: case RF_EX_LE: case RF_EX_GT: case RF_EX_GE:
    case RF_EX_YEAR: case RF_EX_MONTH: case RF_EX_DAY:
    case RF_EX_STRLEN: case RF_EX_CONCAT: case RF_EX_LIKE:
    case RF_EX_STARTS_WITH: case RF_EX_ENDS_WITH: case RF_EX_CONTAINS:
        return false;
    case RF_EX_NEG:
        return in->type != RF_TYPE_FLOAT64;
    case RF_EX_CAST:
        return !cast_is_safe((rf_type)in->arg_type, (rf_type)in->type);
    default:
        return true;
    }
}

/* The cost class of an instruction, -1 for leaves (memory is counted per
 * column, not per read). */
static int instr_class(const rf_instr *in)
{
    rf_exop op = (rf_exop)in->op;
    rf_type at = (rf_type)in->arg_type, t = (rf_type)in->type;
    switch (op) {
    case RF_EX_CONST: case RF_EX_COL: case RF_EX_ROWID: case RF_EX_VAR:
        return -1;
    case RF_EX_NOT: case RF_EX_AND: case RF_EX_OR: case RF_EX_IF:
        return RF_SELOP_INT;
    case RF_EX_EQ: case RF_EX_NE: case RF_EX_LT: case RF_EX_LE: case RF_EX_GT: case RF_EX_GE:
        if (at == RF_TYPE_STRING) /* = and != compare ids; order compares rank through a table */
            return op == RF_EX_EQ || op == RF_EX_NE ? RF_SELOP_INT : RF_SELOP_STR;
        return at == RF_TYPE_FLOAT64 ? RF_SELOP_FLOAT : rf_type_is_decimal(at) ? RF_SELOP_DEC : RF_SELOP_INT;
    case RF_EX_DIV: case RF_EX_MOD:
        return RF_SELOP_DIV;
    case RF_EX_ADD: case RF_EX_SUB: case RF_EX_MUL: case RF_EX_NEG:
        return t == RF_TYPE_FLOAT64 ? RF_SELOP_FLOAT : RF_SELOP_ARITH;
    default:
        return rf_exop_is_string_op(op) ? RF_SELOP_STR : RF_SELOP_ARITH; /* casts, date functions */
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void describe(const rf_code *filter, int first, int last, rf_selconj *c)
{
    memset(c, 0, sizeof *c);
    c->first = first;
    c->last = last;
    c->code.n = last - first + 1;
    c->code.ins = rf_malloc((size_t)c->code.n * sizeof *c->code.ins);
    memcpy(c->code.ins, filter->ins + first, (size_t)c->code.n * sizeof *c->code.ins);
    c->cols = rf_malloc((size_t)c->code.n * sizeof *c->cols);
    for (int k = 0; k < c->code.n; k++) {
        const rf_instr *in = &c->code.ins[k];
        int cls = instr_class(in);
        if (cls >= 0)
            c->ops[cls]++;
        c->can_fault |= instr_can_fault(in);
        if (in->op == RF_EX_COL)
            c->cols[c->ncols++] = in->index;
    }
    qsort(c->cols, (size_t)c->ncols, sizeof *c->cols, cmp_int);
    int m = 0;
    for (int i = 0; i < c->ncols; i++)
        if (m == 0 || c->cols[m - 1] != c->cols[i])
            c->cols[m++] = c->cols[i];
    c->ncols = m;
    c->interns = rf_code_interns(&c->code);
}

bool rf_selplan_split(const rf_code *filter, rf_selsplit *out, rf_status *st)
{
    out->n = 0;
    out->conj = NULL;
    if (!filter || filter->n == 0)
        return true;
    if (rf_code_check(filter, INT_MAX) < 0)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "internal error: select planning of malformed filter code");
    int *start = subtree_starts(filter);
    int_vec ends = {0};
    collect(filter, start, filter->n - 1, &ends);
    out->n = (int)ends.len;
    out->conj = rf_calloc(ends.len, sizeof *out->conj);
    for (size_t i = 0; i < ends.len; i++)
        describe(filter, start[ends.items[i]], ends.items[i], &out->conj[i]);
    RF_VEC_FREE(ends);
    free(start);
    return true;
}

void rf_selsplit_free(rf_selsplit *s)
{
    for (int i = 0; i < s->n; i++) {
        rf_code_free(&s->conj[i].code);
        free(s->conj[i].cols);
    }
    free(s->conj);
    s->conj = NULL;
    s->n = 0;
}

void rf_selplan_rebuild(const rf_selconj *conj, const int *idx, int m, rf_code *out)
{
    out->n = 0;
    out->ins = NULL;
    if (m <= 0)
        return;
    int total = m - 1;
    for (int i = 0; i < m; i++)
        total += conj[idx[i]].code.n;
    out->ins = rf_calloc((size_t)total, sizeof *out->ins);
    for (int i = 0; i < m; i++) {
        const rf_code *c = &conj[idx[i]].code;
        memcpy(out->ins + out->n, c->ins, (size_t)c->n * sizeof *c->ins);
        out->n += c->n;
        if (i > 0) { /* left-deep: (prefix) && conj */
            rf_instr *a = &out->ins[out->n++];
            a->op = RF_EX_AND;
            a->type = a->arg_type = RF_TYPE_BOOL;
        }
    }
}

/* ---- Calibration ---- */

void rf_selcalib_defaults(rf_selcalib *c)
{
    memset(c, 0, sizeof *c);
    /* Fitted to the H100 sweep of 2026-11-28, 55 points, tools/selplan_fit
     * (bench/selplan/h100-2026-11-28; docs/weaver.md "Select planning"):
     * every legal plan of 3-predicate filters (and of 4, splits only where
     * chosen) timed over 10^8 rows, the chosen and the best plan of 25
     * 2-predicate points; the constants minimise the worst gap between the
     * chosen plan's time and the best plan's (5.4%), then the mean, then
     * the error of the model's cost differences. sector_ns is fixed (32
     * bytes at 3 TB/s: scaling every ns constant alike changes no choice).
     * The sweep of 2026-11-23 (an older kernel, whose && cost ~0.11 ms more
     * than &) fitted other values: branch_ns 0.016, fetch_sectors 2.5,
     * op_int_ns 0.015, launch_ns 15000, r_k 0.88. */
    c->sector_ns = 0.0107;
    c->gather_sector_ns = 0.01184; /* ordered row ids: gathers coalesce nearly as a scan */
    c->write_sector_ns = 0.0217;  /* a compaction's row ids cost ~2 streamed sectors */
    /* r_k: loads of k columns issued together overlap a little. */
    static const double rk[RF_SELCALIB_MAXK] = {1.0, 0.9883, 0.9156, 0.9156, 0.9156, 0.9156, 0.9156, 0.9156};
    memcpy(c->rk, rk, sizeof rk);
    /* && costs ~0.015 ns per warp and branch, and memory under a branch
     * ~2% more per sector than branch-free; the memory fetches ~1.5 sectors
     * at a time, so a branch or a gather saves sectors where runs of ~6
     * rows are dead. In today's kernel && wins every 2-predicate point but
     * one at 0.9/0.5 (the old kernel's && lost to & and |). */
    c->branch_ns = 0.01461;
    c->diverge = 1.0234;
    c->fetch_sectors = 1.506;
    /* Per warp. int: fitted (a compare and the per-row glue around it).
     * dec as int (the same compare); the other classes have no sweep
     * points: the calibration tool's H100 measurements. */
    c->op_ns[RF_SELOP_INT] = 0.004357;
    c->op_ns[RF_SELOP_DEC] = 0.004357;
    c->op_ns[RF_SELOP_FLOAT] = 0.007;
    c->op_ns[RF_SELOP_ARITH] = 0.0075;
    c->op_ns[RF_SELOP_DIV] = 0.14;
    c->op_ns[RF_SELOP_STR] = 0.23;
    c->launch_ns = 7880; /* fitted; the calibration tool measured 14.7 us of launch, count download and sync */
    c->rid_bytes = 4;
}

/* The file's keys and where each lives; r1..r8 are rk[0..7]. */
typedef struct calib_key {
    const char *name;
    size_t offset;
    double min;          /* smallest legal value */
    bool min_exclusive;  /* value must be > min */
} calib_key;

#define CK(name, field, min, excl) {name, offsetof(rf_selcalib, field), min, excl}
static const calib_key calib_keys[] = {
    CK("sector_ns", sector_ns, 0, false),
    CK("gather_sector_ns", gather_sector_ns, 0, false),
    CK("write_sector_ns", write_sector_ns, 0, false),
    CK("r1", rk[0], 0, true), CK("r2", rk[1], 0, true), CK("r3", rk[2], 0, true), CK("r4", rk[3], 0, true),
    CK("r5", rk[4], 0, true), CK("r6", rk[5], 0, true), CK("r7", rk[6], 0, true), CK("r8", rk[7], 0, true),
    CK("branch_ns", branch_ns, 0, false),
    CK("diverge", diverge, 1, false),
    CK("op_int_ns", op_ns[RF_SELOP_INT], 0, false),
    CK("op_dec_ns", op_ns[RF_SELOP_DEC], 0, false),
    CK("op_float_ns", op_ns[RF_SELOP_FLOAT], 0, false),
    CK("op_arith_ns", op_ns[RF_SELOP_ARITH], 0, false),
    CK("op_div_ns", op_ns[RF_SELOP_DIV], 0, false),
    CK("op_str_ns", op_ns[RF_SELOP_STR], 0, false),
    CK("launch_ns", launch_ns, 0, false),
    CK("rid_bytes", rid_bytes, 0, true),
    CK("fetch_sectors", fetch_sectors, 1, false),
};
#undef CK
#define NKEYS (sizeof calib_keys / sizeof *calib_keys)

static double *calib_field(rf_selcalib *c, const calib_key *k) { return (double *)((char *)c + k->offset); }

bool rf_selcalib_read(const char *path, rf_selcalib *c, rf_status *st)
{
    size_t len = 0;
    char *text = rf_read_file(path, &len, st);
    if (!text)
        return false;
    rf_selcalib r;
    rf_selcalib_defaults(&r);
    bool ok = true;
    int lineno = 0;
    for (char *line = text, *next; ok && line < text + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (nl)
            *nl = '\0'; /* the last line ends at rf_read_file's NUL */
        lineno++;
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        char *tab = strchr(line, '\t');
        if (!tab || tab == line) {
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s:%d: expected key<TAB>value", path, lineno);
            break;
        }
        *tab = '\0';
        const char *key = line, *val = tab + 1;
        if (strcmp(key, "device") == 0) {
            snprintf(r.device, sizeof r.device, "%s", val);
            continue;
        }
        const calib_key *k = NULL;
        for (size_t i = 0; i < NKEYS && !k; i++)
            if (strcmp(calib_keys[i].name, key) == 0)
                k = &calib_keys[i];
        if (!k)
            continue; /* a newer tool's key, or a raw measurement */
        char *end = NULL;
        errno = 0;
        double v = strtod(val, &end);
        bool good = *val && end != val && *end == '\0' && errno == 0 && isfinite(v) &&
                    (k->min_exclusive ? v > k->min : v >= k->min);
        if (!good) {
            ok = rf_fail(st, RF_EXIT_RUNTIME_ERROR, "%s:%d: %s: '%s' is not a number %s %g", path, lineno, key, val,
                         k->min_exclusive ? ">" : ">=", k->min);
            break;
        }
        *calib_field(&r, k) = v;
    }
    free(text);
    if (!ok)
        return false;
    r.calibrated = true;
    *c = r;
    return true;
}

bool rf_selcalib_write(const char *path, const rf_selcalib *c, rf_status *st)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "# Red Fox select-plan calibration (weaver/selplan.h): key<TAB>value, ns of device time\n");
    fprintf(f, "device\t%s\n", c->device);
    for (size_t i = 0; i < NKEYS; i++)
        fprintf(f, "%s\t%.17g\n", calib_keys[i].name, *calib_field((rf_selcalib *)c, &calib_keys[i]));
    if (fclose(f) != 0)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write %s: %s", path, strerror(errno));
    return true;
}

char *rf_selcalib_path(const char *dir, const char *device)
{
    char *name = rf_strdup(device && *device ? device : "unknown");
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-'))
            *p = '_';
    char *path = rf_sprintf("%s/calib-%s.tsv", dir, name);
    free(name);
    return path;
}

double rf_selconj_cost(const rf_selconj *c, const rf_selcalib *cal)
{
    double s = 0;
    for (int k = 0; k < RF_SELOP_COUNT_; k++)
        s += c->ops[k] * cal->op_ns[k];
    return s;
}

/* ---- Plan text ---- */

void rf_selplan_identity(int n, rf_selplan *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    for (int i = 0; i < n; i++) {
        out->order[i] = i;
        out->conn[i] = RF_SEL_BRANCH;
    }
}

static const char *conn_text(int c) { return c == RF_SEL_AND ? "&" : c == RF_SEL_SPLIT ? "|" : "&&"; }

char *rf_selplan_format(const rf_selplan *p, char *buf, size_t cap)
{
    size_t at = 0;
    if (cap > 0)
        buf[0] = '\0';
    for (int i = 0; i < p->n && at < cap; i++) {
        int w = snprintf(buf + at, cap - at, "%d%s", p->order[i], i + 1 < p->n ? conn_text(p->conn[i]) : "");
        if (w < 0)
            break;
        at += (size_t)w;
    }
    return buf;
}

/* Parses the text into *out (out->n: conjuncts named) without checking it
 * against a filter. */
static bool parse_raw(const char *text, rf_selplan *out, rf_status *st)
{
    memset(out, 0, sizeof *out);
    const char *s = text;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0')
        return true; /* no conjuncts: the absent filter */
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s < '0' || *s > '9')
            return rf_fail(st, RF_EXIT_USAGE, "select plan '%s': expected a conjunct number at '%s'", text, s);
        long v = 0;
        while (*s >= '0' && *s <= '9' && v <= RF_SELPLAN_MAX)
            v = v * 10 + (*s++ - '0');
        if (out->n == RF_SELPLAN_MAX || v >= RF_SELPLAN_MAX)
            return rf_fail(st, RF_EXIT_USAGE, "select plan '%s': at most %d conjuncts, numbered from 0", text,
                           RF_SELPLAN_MAX);
        out->order[out->n++] = (int)v;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0')
            return true;
        if (s[0] == '&' && s[1] == '&') {
            out->conn[out->n - 1] = RF_SEL_BRANCH;
            s += 2;
        } else if (*s == '&' || *s == '|') {
            out->conn[out->n - 1] = *s == '&' ? RF_SEL_AND : RF_SEL_SPLIT;
            s++;
        } else {
            return rf_fail(st, RF_EXIT_USAGE, "select plan '%s': expected &, && or | at '%s'", text, s);
        }
    }
}

static bool check_permutation(const rf_selplan *p, int n, const char *what, rf_status *st)
{
    bool seen[RF_SELPLAN_MAX] = {0};
    if (p->n != n)
        return rf_fail(st, RF_EXIT_USAGE, "select plan %s names %d conjuncts, the filter has %d", what, p->n, n);
    for (int i = 0; i < n; i++) {
        int c = p->order[i];
        if (c < 0 || c >= n)
            return rf_fail(st, RF_EXIT_USAGE, "select plan %s: conjunct %d out of range (the filter has %d)", what, c,
                           n);
        if (seen[c])
            return rf_fail(st, RF_EXIT_USAGE, "select plan %s: conjunct %d named twice", what, c);
        seen[c] = true;
    }
    for (int i = 0; i + 1 < n; i++)
        if (p->conn[i] > RF_SEL_SPLIT)
            return rf_fail(st, RF_EXIT_USAGE, "select plan %s: bad connector", what);
    return true;
}

bool rf_selplan_parse(const char *text, int n, rf_selplan *out, rf_status *st)
{
    if (!parse_raw(text, out, st))
        return false;
    char what[RF_SELPLAN_FMT_MAX + 8];
    snprintf(what, sizeof what, "'%s'", text);
    return check_permutation(out, n, what, st);
}

/* The plan's text in quotes, for messages. */
static const char *quoted(const rf_selplan *p, char *buf, size_t cap)
{
    char text[RF_SELPLAN_FMT_MAX];
    snprintf(buf, cap, "'%s'", rf_selplan_format(p, text, sizeof text));
    return buf;
}

bool rf_selplan_legal(const rf_selplan *p, const rf_selconj *conj, rf_status *st)
{
    char what[RF_SELPLAN_FMT_MAX + 8];
    if (p->n < 0 || p->n > RF_SELPLAN_MAX)
        return rf_fail(st, RF_EXIT_USAGE, "select plan: %d conjuncts (at most %d)", p->n, RF_SELPLAN_MAX);
    bool seen[RF_SELPLAN_MAX] = {0}, perm = true;
    for (int i = 0; i < p->n; i++) {
        int c = p->order[i];
        perm &= c >= 0 && c < p->n && !seen[c] && (i + 1 == p->n || p->conn[i] <= RF_SEL_SPLIT);
        if (perm)
            seen[c] = true;
    }
    if (!perm)
        return check_permutation(p, p->n, quoted(p, what, sizeof what), st);
    int max_before = -1;
    for (int i = 0; i < p->n; i++) {
        int c = p->order[i];
        if (rf_selconj_pinned(&conj[c])) {
            const char *why = conj[c].can_fault ? "can fault" : "interns strings";
            if (c != i || max_before != i - 1) {
                char after[64] = "first, as in the filter";
                if (c > 0)
                    snprintf(after, sizeof after, "right after conjuncts 0..%d (in any order)", c - 1);
                return rf_fail(st, RF_EXIT_USAGE, "select plan %s: conjunct %d %s, so it must come %s",
                               quoted(p, what, sizeof what), c, why, after);
            }
            if (i > 0 && p->conn[i - 1] == RF_SEL_AND)
                return rf_fail(st, RF_EXIT_USAGE,
                               "select plan %s: conjunct %d %s, so it must follow the conjuncts before it "
                               "with && or |, not &",
                               quoted(p, what, sizeof what), c, why);
        }
        if (c > max_before)
            max_before = c;
    }
    return true;
}

int rf_selplan_from_env(const rf_selconj *conj, int n, rf_selplan *out, rf_status *st)
{
    const char *text = getenv("RF_WEAVE_SELPLAN");
    if (!text || !*text)
        return 0;
    rf_selplan p;
    rf_status pst;
    rf_status_init(&pst);
    /* A run-time error (status 2): the variable is read while the program
     * runs, long after its command line was accepted. */
    if (!parse_raw(text, &p, &pst)) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "RF_WEAVE_SELPLAN: %s", pst.message);
        return -1;
    }
    if (p.n != n)
        return 0;
    if (!rf_selplan_legal(&p, conj, &pst)) {
        rf_fail(st, RF_EXIT_RUNTIME_ERROR, "RF_WEAVE_SELPLAN: %s", pst.message);
        return -1;
    }
    *out = p;
    return 1;
}

bool rf_selplan_env_check(const rf_code *filter, rf_status *st)
{
    const char *text = getenv("RF_WEAVE_SELPLAN");
    if (!text || !*text || !filter || filter->n == 0)
        return true;
    rf_selsplit s;
    if (!rf_selplan_split(filter, &s, st))
        return false;
    rf_selplan p;
    bool ok = s.n > RF_SELPLAN_MAX || rf_selplan_from_env(s.conj, s.n, &p, st) >= 0;
    rf_selsplit_free(&s);
    return ok;
}

/* ---- The cost model ---- */

#define WARP 32.0            /* lanes */
#define SECTOR_BYTES 32.0
#define WORDS_PER_SECTOR 4.0 /* 8-byte words */

typedef struct model {
    const rf_selprob *q;
    const rf_selcalib *cal;
    const int *order;
    double S[RF_SELPLAN_MAX + 1];     /* S[i]: product of sel over positions < i */
    double C[RF_SELPLAN_MAX + 1];     /* C[i]: compute ns per warp of positions < i */
    /* P[k][a]: product of sel over positions [k, a); F[k][j]: columns read
     * by positions [k, j) counted where first read within [k, j). */
    double P[RF_SELPLAN_MAX + 1][RF_SELPLAN_MAX + 1];
    int F[RF_SELPLAN_MAX + 1][RF_SELPLAN_MAX + 1];
    double L[RF_SELPLAN_MAX + 1][RF_SELPLAN_MAX + 1]; /* live(k, a) */
    double T[RF_SELPLAN_MAX + 1];     /* T[a]: share of sectors fetched at position a */
} model;

/* (1 - s)^4 and (1 - s)^32 by squaring: cheaper than pow in the DP's
 * inner loops (live), and the same numbers wherever a plan is costed. */
static double miss4(double s)
{
    double x = (1.0 - s) * (1.0 - s);
    return x * x;
}
static double miss32(double s)
{
    double x = miss4(s);
    x *= x;
    x *= x;
    return x * x;
}

static bool reads(const rf_selconj *c, int col)
{
    int lo = 0, hi = c->ncols; /* cols ascending */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c->cols[mid] < col)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->ncols && c->cols[lo] == col;
}

/* Prefix tables, so that each group costs O(1) in the DP. */
static void model_init(model *m, const rf_selprob *q, const rf_selcalib *cal, const int *order)
{
    int n = q->n;
    double fetch = cal->fetch_sectors >= 1 ? cal->fetch_sectors : 1;
    m->q = q;
    m->cal = cal;
    m->order = order;
    m->S[0] = 1;
    m->C[0] = 0;
    for (int i = 0; i < n; i++) {
        m->S[i + 1] = m->S[i] * q->sel[order[i]];
        m->C[i + 1] = m->C[i] + (q->cost ? q->cost[order[i]] : rf_selconj_cost(&q->conj[order[i]], cal));
    }
    for (int k = 0; k <= n; k++) {
        m->P[k][k] = 1;
        m->F[k][k] = 0;
        for (int j = k; j < n; j++) {
            const rf_selconj *c = &q->conj[order[j]];
            int fresh = 0;
            for (int x = 0; x < c->ncols; x++) {
                bool seen = false;
                for (int i = k; i < j && !seen; i++)
                    seen = reads(&q->conj[order[i]], c->cols[x]);
                fresh += !seen;
            }
            m->P[k][j + 1] = m->P[k][j] * q->sel[order[j]];
            m->F[k][j + 1] = m->F[k][j] + fresh;
        }
        for (int a = k; a <= n; a++) /* a warp reaches a group when one of its lanes is alive */
            m->L[k][a] = a == k ? 1.0 : 1.0 - miss32(m->P[k][a]);
        /* a fetch of f sectors (V f rows) is made when one of its rows is alive */
        m->T[k] = 1.0 - pow(1.0 - m->S[k], WORDS_PER_SECTOR * fetch);
    }
}

static double warps(const model *m, int k) { return m->q->rows * m->S[k] / WARP; }

static double live(const model *m, int k, int a) { return m->L[k][a]; }

static double group_cost(const model *m, int k, int a, int b)
{
    const rf_selcalib *cal = m->cal;
    int ncol = m->F[k][b] - m->F[k][a]; /* columns no earlier group of the kernel read */
    double mem = 0;
    if (ncol > 0) {
        double rk = cal->rk[(ncol > RF_SELCALIB_MAXK ? RF_SELCALIB_MAXK : ncol) - 1];
        mem = ncol * rk * (m->q->rows / WORDS_PER_SECTOR) * m->T[a] * (k == 0 ? cal->sector_ns : cal->gather_sector_ns);
    }
    double comp = warps(m, k) * live(m, k, a) * (m->C[b] - m->C[a]);
    return (mem + comp) * (a > k ? cal->diverge : 1.0);
}

static double branch_cost(const model *m, int k, int a) { return warps(m, k) * live(m, k, a) * m->cal->branch_ns; }

static double split_cost(const model *m, int b)
{
    const rf_selcalib *cal = m->cal;
    return cal->launch_ns +
           m->q->rows * m->S[b] * cal->rid_bytes / SECTOR_BYTES * (cal->write_sector_ns + cal->sector_ns);
}

double rf_selplan_cost(const rf_selplan *p, const rf_selprob *q, const rf_selcalib *cal)
{
    model m;
    model_init(&m, q, cal, p->order);
    double total = 0;
    int k = 0, a = 0;
    for (int i = 0; i < p->n; i++) {
        if (i + 1 < p->n && p->conn[i] == RF_SEL_AND)
            continue;
        total += group_cost(&m, k, a, i + 1);
        if (i + 1 == p->n)
            break;
        if (p->conn[i] == RF_SEL_BRANCH) {
            total += branch_cost(&m, k, a);
        } else {
            total += split_cost(&m, i + 1);
            k = i + 1;
        }
        a = i + 1;
    }
    return total;
}

double rf_selplan_gain_bound(const rf_selconj *conj, int n, double rows, const rf_selcalib *cal)
{
    if (n < 2 || n > RF_SELPLAN_MAX || !(rows > 0))
        return 0;
    double ones[RF_SELPLAN_MAX];
    for (int i = 0; i < n; i++)
        ones[i] = 1;
    rf_selprob q = {n, conj, ones, NULL, rows, false};
    rf_selplan identity;
    rf_selplan_identity(n, &identity);
    double top = rf_selplan_cost(&identity, &q, cal);
    /* group_cost of a first group (k = a = 0, every row alive): its
     * compute is at least the cheapest conjunct's, its memory at least
     * the cheapest k * r_k (r_k may fall with k) over all rows */
    double least_comp = INFINITY, least_mem = INFINITY;
    bool all_read = true;
    for (int i = 0; i < n; i++) {
        least_comp = fmin(least_comp, rf_selconj_cost(&conj[i], cal));
        all_read = all_read && conj[i].ncols > 0;
    }
    for (int k = 1; k <= RF_SELCALIB_MAXK; k++)
        least_mem = fmin(least_mem, k * cal->rk[k - 1]);
    double least = rows / WARP * least_comp + (all_read ? least_mem * rows / WORDS_PER_SECTOR * cal->sector_ns : 0);
    return top > least ? top - least : 0;
}

/* ---- The planner ---- */

static bool check_problem(const rf_selprob *q, const rf_selcalib *cal, rf_status *st)
{
    if (q->n < 0 || q->n > RF_SELPLAN_MAX)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "select planning: %d conjuncts (at most %d)", q->n, RF_SELPLAN_MAX);
    if (!(q->rows >= 0) || !isfinite(q->rows))
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "select planning: bad row count %g", q->rows);
    for (int i = 0; i < q->n; i++) {
        if (!(q->sel[i] >= 0 && q->sel[i] <= 1))
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "select planning: selectivity %g of conjunct %d not in [0, 1]",
                           q->sel[i], i);
        double c = q->cost ? q->cost[i] : rf_selconj_cost(&q->conj[i], cal);
        if (!(c >= 0) || !isfinite(c))
            return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "select planning: cost %g of conjunct %d", c, i);
    }
    return true;
}

/* Every pinned conjunct p at position p after exactly 0..p-1. */
static bool order_legal(const rf_selconj *conj, const int *order, int n)
{
    int max_before = -1;
    for (int i = 0; i < n; i++) {
        if (rf_selconj_pinned(&conj[order[i]]) && (order[i] != i || max_before != i - 1))
            return false;
        if (order[i] > max_before)
            max_before = order[i];
    }
    return true;
}

/* The DP proper, for a checked problem and a legal order. */
static void dp(const rf_selprob *q, const rf_selcalib *cal, const int *order, rf_selplan *out)
{
    int n = q->n;
    rf_selplan_identity(n, out);
    memcpy(out->order, order, (size_t)n * sizeof *order);
    if (n == 0)
        return;
    model m;
    model_init(&m, q, cal, order);
    /* best[k][a]: cheapest cost of positions [0, a) with the current kernel
     * starting at k and a group starting at a; from[k][a] = (k', a') it came
     * from (k' < 0: the start). A group [a, b) may not hold a pinned
     * conjunct after its first position (it must follow && or |). */
    double best[RF_SELPLAN_MAX + 1][RF_SELPLAN_MAX + 1];
    int from_k[RF_SELPLAN_MAX + 1][RF_SELPLAN_MAX + 1], from_a[RF_SELPLAN_MAX + 1][RF_SELPLAN_MAX + 1];
    for (int k = 0; k <= n; k++)
        for (int a = 0; a <= n; a++)
            best[k][a] = INFINITY;
    best[0][0] = 0;
    from_k[0][0] = from_a[0][0] = -1;
    double best_end = INFINITY;
    int end_k = -1, end_a = -1;
    for (int a = 0; a < n; a++)
        for (int k = 0; k <= a; k++) {
            if (best[k][a] == INFINITY)
                continue;
            for (int b = a + 1; b <= n; b++) {
                if (b - 1 > a && rf_selconj_pinned(&q->conj[order[b - 1]]))
                    break; /* every longer group holds it too */
                double c = best[k][a] + group_cost(&m, k, a, b);
                if (b == n) {
                    if (c < best_end) {
                        best_end = c;
                        end_k = k;
                        end_a = a;
                    }
                    continue;
                }
                double br = c + branch_cost(&m, k, a);
                if (br < best[k][b]) {
                    best[k][b] = br;
                    from_k[k][b] = k;
                    from_a[k][b] = a;
                }
                if (q->allow_split) {
                    double sp = c + split_cost(&m, b);
                    if (sp < best[b][b]) {
                        best[b][b] = sp;
                        from_k[b][b] = k;
                        from_a[b][b] = a;
                    }
                }
            }
        }
    /* Walk back: the group [a, b) ends where the next begins; a boundary
     * at b is a split when the kernel changes there. */
    for (int i = 0; i + 1 < n; i++)
        out->conn[i] = RF_SEL_AND;
    int k = end_k, a = end_a;
    while (a > 0) {
        int pk = from_k[k][a], pa = from_a[k][a];
        out->conn[a - 1] = pk == k ? RF_SEL_BRANCH : RF_SEL_SPLIT;
        k = pk;
        a = pa;
    }
    out->cost = best_end;
}

bool rf_selplan_dp(const rf_selprob *q, const rf_selcalib *cal, const int *order, rf_selplan *out, rf_status *st)
{
    if (!check_problem(q, cal, st))
        return false;
    rf_selplan_identity(q->n, out);
    memcpy(out->order, order, (size_t)q->n * sizeof *order);
    if (!rf_selplan_legal(out, q->conj, st)) /* a permutation the guard allows */
        return false;
    dp(q, cal, order, out);
    return true;
}

/* Lexicographic next permutation; false after the last. */
static bool next_perm(int *p, int n)
{
    int i = n - 2;
    while (i >= 0 && p[i] > p[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (p[j] < p[i])
        j--;
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) {
        t = p[l];
        p[l] = p[r];
        p[r] = t;
    }
    return true;
}

/* Rank order (Hellerstein): ascending (sel - 1) / cost per row, the cost
 * being the conjunct's columns streamed plus its compute. Pinned conjuncts
 * cut the filter into segments that keep their places; a pinned conjunct
 * leads its segment. */
static void rank_order(const rf_selprob *q, const rf_selcalib *cal, int *order)
{
    double rank[RF_SELPLAN_MAX];
    for (int i = 0; i < q->n; i++) {
        double c = q->cost ? q->cost[i] : rf_selconj_cost(&q->conj[i], cal);
        double per_row = q->conj[i].ncols * cal->sector_ns / WORDS_PER_SECTOR + c / WARP;
        rank[i] = (q->sel[i] - 1.0) / (per_row > 1e-30 ? per_row : 1e-30);
        order[i] = i;
    }
    for (int s = 0; s < q->n;) {
        int e = s + 1;
        while (e < q->n && !rf_selconj_pinned(&q->conj[e]))
            e++;
        int first = rf_selconj_pinned(&q->conj[s]) ? s + 1 : s;
        for (int i = first + 1; i < e; i++) /* insertion sort: stable, n small */
            for (int j = i; j > first && rank[order[j]] < rank[order[j - 1]]; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        s = e;
    }
}

/* The DP over `order` replaces *best if cheaper (and the order legal). */
static void try_order(const rf_selprob *q, const rf_selcalib *cal, const int *order, rf_selplan *best)
{
    if (!order_legal(q->conj, order, q->n))
        return;
    rf_selplan p;
    dp(q, cal, order, &p);
    if (p.cost < best->cost * (1 - 1e-12))
        *best = p;
}

bool rf_selplan_choose(const rf_selprob *q, const rf_selcalib *cal, rf_selplan *out, rf_status *st)
{
    int order[RF_SELPLAN_MAX];
    rank_order(q, cal, order);
    if (!rf_selplan_dp(q, cal, order, out, st))
        return false;
    for (int i = 0; i < q->n; i++)
        order[i] = i;
    if (q->n <= RF_SELPLAN_SEARCH_MAX) {
        do
            try_order(q, cal, order, out);
        while (next_perm(order, q->n));
        return true;
    }
    /* Too many orders: the original one too (so a plan is never worse than
     * the unchanged filter), then swaps of neighbours while they help
     * (on small filters this finds the optimum ~95% of the time, the rank
     * order alone ~65%). */
    try_order(q, cal, order, out);
    for (int sweep = 0, better = 1; better && sweep < 8; sweep++) { /* bounded: ~ms at n = 32 */
        better = 0;
        for (int i = 0; i + 1 < q->n; i++) {
            memcpy(order, out->order, (size_t)q->n * sizeof *order);
            int t = order[i];
            order[i] = order[i + 1];
            order[i + 1] = t;
            double before = out->cost;
            try_order(q, cal, order, out);
            better |= out->cost < before;
        }
    }
    return true;
}

int rf_selplan_enumerate(const rf_selconj *conj, int n, bool allow_split, rf_selplan_visit visit, void *ctx)
{
    if (n < 0 || n > RF_SELPLAN_EXHAUSTIVE_MAX)
        return -1;
    rf_selplan p;
    rf_selplan_identity(n, &p);
    if (n == 0) {
        if (visit)
            visit(&p, ctx);
        return 1;
    }
    int kinds = allow_split ? 3 : 2, combos = 1, count = 0;
    for (int i = 0; i + 1 < n; i++)
        combos *= kinds;
    do {
        if (!order_legal(conj, p.order, n))
            continue;
        for (int code = 0; code < combos; code++) {
            bool ok = true;
            for (int i = 0, c = code; i + 1 < n; i++, c /= kinds) {
                p.conn[i] = (uint8_t)(c % kinds); /* RF_SEL_AND, RF_SEL_BRANCH, RF_SEL_SPLIT */
                ok &= !(p.conn[i] == RF_SEL_AND && rf_selconj_pinned(&conj[p.order[i + 1]]));
            }
            if (!ok)
                continue;
            count++;
            if (visit)
                visit(&p, ctx);
        }
    } while (next_perm(p.order, n));
    return count;
}

typedef struct cheapest {
    const rf_selprob *q;
    const rf_selcalib *cal;
    rf_selplan *best;
} cheapest;

static void keep_cheapest(const rf_selplan *p, void *ctx)
{
    cheapest *c = ctx;
    rf_selplan t = *p;
    t.cost = rf_selplan_cost(&t, c->q, c->cal);
    if (t.cost < c->best->cost)
        *c->best = t;
}

bool rf_selplan_exhaustive(const rf_selprob *q, const rf_selcalib *cal, rf_selplan *out, rf_status *st)
{
    if (!check_problem(q, cal, st))
        return false;
    int n = q->n;
    if (n > RF_SELPLAN_EXHAUSTIVE_MAX)
        return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "exhaustive select planning: %d conjuncts (at most %d)", n,
                       RF_SELPLAN_EXHAUSTIVE_MAX);
    rf_selplan_identity(n, out);
    out->cost = INFINITY;
    if (n == 0) {
        out->cost = 0;
        return true;
    }
    cheapest c = {q, cal, out};
    rf_selplan_enumerate(q->conj, n, q->allow_split, keep_cheapest, &c);
    return true;
}
