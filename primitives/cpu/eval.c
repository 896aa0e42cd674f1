/* The vectorised interpreter of rf_code (postfix). Instead of running the
 * postfix program row by row, it evaluates the expression tree node by node
 * over a batch of rows: each node produces an array of RF_BATCH words, so
 * the per-instruction dispatch is paid once per batch, and the common
 * integer operators run as tight loops. A selection vector (offsets of the
 * rows still alive) travels down the tree: `a && b` evaluates b only on the
 * rows where a holds, which is what makes `y != 0 && x / y > 1` safe, and
 * `if(c, x, y)` evaluates x only on the rows where c holds and y only on
 * the others. Integer arithmetic is checked (rf_scalar_ops.h): the fast
 * loops note an overflow and leave the batch to the scalar path, which
 * reports the first faulting row. */
#include "prims_internal.h"

#include <stdlib.h>
#include <string.h>

const uint16_t rf_iota16[RF_BATCH] = {
#define R1(i) (i),
#define R4(i) R1(i) R1(i + 1) R1(i + 2) R1(i + 3)
#define R16(i) R4(i) R4(i + 4) R4(i + 8) R4(i + 12)
#define R64(i) R16(i) R16(i + 16) R16(i + 32) R16(i + 48)
#define R256(i) R64(i) R64(i + 64) R64(i + 128) R64(i + 192)
    R256(0) R256(256) R256(512) R256(768)
#undef R1
#undef R4
#undef R16
#undef R64
#undef R256
};

struct rf_eval {
    const rf_code *c;
    int *start;        /* start[k]: first instruction of the subtree ending at k */
    rf_word *bufs;     /* one RF_BATCH buffer per instruction */
    uint16_t *sels;    /* two selection vectors per instruction (AND/OR, IF) */
    rf_word *const *cols;
    size_t base;
    const rf_word *rows[2]; /* RF_EX_ROWID: positions by offset; NULL: base + offset */
    rf_status *st;
    const rf_id_bits *tabs; /* rf_eval_use_bits */
    int ntabs;
};

void rf_eval_use_bits(rf_eval *ev, const rf_id_bits *tabs, int ntabs)
{
    ev->tabs = tabs;
    ev->ntabs = ntabs;
}

void rf_eval_set_rows(rf_eval *ev, const rf_word *row0, const rf_word *row1)
{
    ev->rows[0] = row0;
    ev->rows[1] = row1;
}

rf_eval *rf_eval_new(const rf_code *c)
{
    rf_eval *ev = rf_calloc(1, sizeof *ev);
    ev->c = c;
    int n = c->n > 0 ? c->n : 1;
    ev->start = rf_calloc((size_t)n, sizeof *ev->start);
    ev->bufs = rf_malloc(rf_mul_size((size_t)n * RF_BATCH, sizeof(rf_word)));
    ev->sels = rf_malloc(rf_mul_size((size_t)n * 2 * RF_BATCH, sizeof(uint16_t)));
    /* Subtree extents from the postfix order: a node's last operand ends
     * right before it, the one before that ends right before the last
     * operand's start. */
    for (int k = 0; k < c->n; k++) {
        int ar = rf_expr_arity((rf_exop)c->ins[k].op), s = k;
        for (int a = 0; a < ar; a++)
            s = ev->start[s - 1];
        ev->start[k] = s;
        if (c->ins[k].op == RF_EX_CONST)
            for (int i = 0; i < RF_BATCH; i++)
                ev->bufs[(size_t)k * RF_BATCH + (size_t)i] = c->ins[k].value;
    }
    return ev;
}

void rf_eval_free(rf_eval *ev)
{
    if (!ev)
        return;
    free(ev->start);
    free(ev->bufs);
    free(ev->sels);
    free(ev);
}

static const rf_word *eval_node(rf_eval *ev, int k, const uint16_t *sel, int nsel);

/* Before row i of a loop over the string ids s[sel[...]]: their entries
 * asked for 16 rows ahead, their bytes 8 rows ahead. Why: a string column
 * read in another column's order visits the dictionary at random (q13's
 * like() over o_comment, orders sorted by o_custkey: 360 ns a row on the
 * build machine, nearly all of it waiting for the entry and then the
 * bytes). */
static inline void prefetch_strings(const rf_word *s, const uint16_t *sel, int nsel, int i)
{
    if (i + 16 < nsel)
        rf_str_prefetch_entry(s[sel[i + 16]]);
    if (i + 8 < nsel)
        rf_str_prefetch_text(s[sel[i + 8]]);
}

static inline bool is_decimal(rf_type t) { return t >= RF_TYPE_DECIMAL0 && t <= RF_TYPE_DECIMAL18; }

/* Whether instructions [a0, a1] and [b0, b1] are the same subtree. */
static bool same_code(const rf_code *c, int a0, int a1, int b0, int b1)
{
    if (a1 - a0 != b1 - b0)
        return false;
    for (int i = 0; i <= a1 - a0; i++) {
        const rf_instr *x = &c->ins[a0 + i], *y = &c->ins[b0 + i];
        if (x->op != y->op || x->type != y->type || x->arg_type != y->arg_type || x->index != y->index ||
            x->value != y->value)
            return false;
    }
    return true;
}

#define MAX_SUBSTR_IN 16

/* The leaves of the OR tree at k when every one is `substr(...) = CONST`
 * over the same substr (q22's `c = "13" || c = "31" || ...` on
 * substr(phone, 1, 2)): *sub the first's substr, cst[] the constants'
 * instructions; 0 where it is not such a tree. */
static int substr_in_list(const rf_eval *ev, int k, int *sub, int *cst, int n)
{
    const rf_code *c = ev->c;
    if (c->ins[k].op == RF_EX_OR) {
        int right = k - 1, left = ev->start[right] - 1;
        int m = substr_in_list(ev, left, sub, cst, n);
        return m ? substr_in_list(ev, right, sub, cst, m) : 0;
    }
    int s, t;
    if (n == MAX_SUBSTR_IN || c->ins[k].op != RF_EX_EQ || !rf_code_substr_compare(c, ev->start, k, &s, &t))
        return 0;
    if (n > 0 && !same_code(c, ev->start[*sub], *sub, ev->start[s], s))
        return 0;
    if (n == 0)
        *sub = s;
    cst[n] = t;
    return n + 1;
}

/* substr(s, start, len) = CONST (or !=, ne), or such an OR tree of three
 * or more `=` leaves: the substring's bytes compared with the constants',
 * so nothing is interned (rf_code_interns), and taken once a row, not
 * again by each leaf (the GPU's table of q22's filter over 1.5M phone ids
 * at SF 10: 16 ms). The rows a leaf would fault on are the rows the first
 * leaf faults on. */
static const rf_word *eval_substr_in(rf_eval *ev, int k, int sub, const int *cst, int ncst, bool ne,
                                     const uint16_t *sel, int nsel)
{
    int third = sub - 1, second = ev->start[third] - 1, first = ev->start[second] - 1;
    const rf_word *s = eval_node(ev, first, sel, nsel);
    const rf_word *from = s ? eval_node(ev, second, sel, nsel) : NULL;
    const rf_word *len = from ? eval_node(ev, third, sel, nsel) : NULL;
    if (!len)
        return NULL;
    const char *w[MAX_SUBSTR_IN];
    size_t wn[MAX_SUBSTR_IN];
    for (int j = 0; j < ncst; j++) {
        w[j] = rf_str_get(ev->c->ins[cst[j]].value);
        wn[j] = rf_str_len(ev->c->ins[cst[j]].value);
    }
    rf_word *out = ev->bufs + (size_t)k * RF_BATCH;
    for (int i = 0; i < nsel; i++) {
        int r = sel[i];
        const char *t = NULL;
        size_t n = 0;
        prefetch_strings(s, sel, nsel, i);
        if (!rf_substr_slice(s[r], from[r], len[r], &t, &n, ev->st))
            return NULL;
        bool hit = false;
        for (int j = 0; j < ncst && !hit; j++)
            hit = n == wn[j] && memcmp(t, w[j], n) == 0;
        out[r] = hit != ne;
    }
    return out;
}

static const rf_word *eval_binary(rf_eval *ev, int k, const uint16_t *sel, int nsel)
{
    const rf_instr *in = &ev->c->ins[k];
    int right = k - 1, left = ev->start[k - 1] - 1;
    rf_word *out = ev->bufs + (size_t)k * RF_BATCH;
    int sub, cst;
    if (rf_code_substr_compare(ev->c, ev->start, k, &sub, &cst))
        return eval_substr_in(ev, k, sub, &cst, 1, in->op == RF_EX_NE, sel, nsel);
    int csts[MAX_SUBSTR_IN], ncst;
    if (in->op == RF_EX_OR && (ncst = substr_in_list(ev, k, &sub, csts, 0)) >= 3)
        return eval_substr_in(ev, k, sub, csts, ncst, false, sel, nsel);
    const rf_word *a = eval_node(ev, left, sel, nsel);
    if (!a)
        return NULL;
    rf_exop op = (rf_exop)in->op;
    if (op == RF_EX_AND || op == RF_EX_OR) {
        /* Right operand only where the left one does not decide. */
        uint16_t *sel2 = ev->sels + (size_t)k * 2 * RF_BATCH;
        int n2 = 0;
        rf_word decided = op == RF_EX_OR;
        for (int i = 0; i < nsel; i++) { /* branch-free: the left side is data, often ~50/50 */
            int r = sel[i];
            out[r] = decided;
            sel2[n2] = (uint16_t)r;
            n2 += (a[r] != 0) != decided;
        }
        if (n2 > 0) {
            const rf_word *b = eval_node(ev, right, sel2, n2);
            if (!b)
                return NULL;
            for (int i = 0; i < n2; i++)
                out[sel2[i]] = b[sel2[i]] != 0;
        }
        return out;
    }
    const rf_word *b = eval_node(ev, right, sel, nsel);
    if (!b)
        return NULL;
    rf_type at = (rf_type)in->arg_type, t = (rf_type)in->type;
    bool isint = rf_type_is_signed_word(at);
#define LOOP(expr)                                                             \
    for (int i = 0; i < nsel; i++) {                                           \
        int r = sel[i];                                                        \
        out[r] = (expr);                                                       \
    }                                                                          \
    return out
    switch (op) {
    case RF_EX_EQ: LOOP(a[r] == b[r]);
    case RF_EX_NE: LOOP(a[r] != b[r]);
    case RF_EX_LT: if (isint) { LOOP((int64_t)a[r] < (int64_t)b[r]); } break;
    case RF_EX_LE: if (isint) { LOOP((int64_t)a[r] <= (int64_t)b[r]); } break;
    case RF_EX_GT: if (isint) { LOOP((int64_t)a[r] > (int64_t)b[r]); } break;
    case RF_EX_GE: if (isint) { LOOP((int64_t)a[r] >= (int64_t)b[r]); } break;
    /* Checked int64 and decimal + - *: the batch in a tight loop that notes
     * whether any row overflowed (the sign bit of ovf), left INT64_MIN (no
     * decimal: rf_sops_fits) or, for *, had an operand beyond int32 (the
     * product then needs the 128-bit check); such a batch goes through
     * the scalar path below, which names the first row that faults. Why
     * decimals: TPC-H's money arithmetic (q01's and q06's price * (1 -
     * disc) * (1 + tax)) went one call per row through it. */
    case RF_EX_ADD:
        if (t == RF_TYPE_INT64 || is_decimal(t)) {
            uint64_t ovf = 0, min = 0;
            for (int i = 0; i < nsel; i++) {
                int r = sel[i];
                uint64_t v = a[r] + b[r];
                ovf |= (a[r] ^ v) & (b[r] ^ v);
                min |= v == (uint64_t)INT64_MIN;
                out[r] = v;
            }
            if (!(ovf >> 63) && !(min && t != RF_TYPE_INT64))
                return out;
        }
        break;
    case RF_EX_SUB:
        if (t == RF_TYPE_INT64 || is_decimal(t)) {
            uint64_t ovf = 0, min = 0;
            for (int i = 0; i < nsel; i++) {
                int r = sel[i];
                uint64_t v = a[r] - b[r];
                ovf |= (a[r] ^ b[r]) & (a[r] ^ v);
                min |= v == (uint64_t)INT64_MIN;
                out[r] = v;
            }
            if (!(ovf >> 63) && !(min && t != RF_TYPE_INT64))
                return out;
        }
        break;
    case RF_EX_MUL:
        if (t == RF_TYPE_INT64 || is_decimal(t)) {
            uint64_t wide = 0;
            for (int i = 0; i < nsel; i++) {
                int r = sel[i];
                int64_t x = (int64_t)a[r], y = (int64_t)b[r];
                wide |= (uint64_t)(x != (int64_t)(int32_t)x) | (uint64_t)(y != (int64_t)(int32_t)y);
                out[r] = (uint64_t)((int64_t)(int32_t)x * (int64_t)(int32_t)y);
            }
            if (!wide)
                return out;
        }
        break;
    default:
        break;
    }
#undef LOOP
    /* like and contains with a constant pattern: taken apart once. */
    if ((op == RF_EX_LIKE || op == RF_EX_CONTAINS) && ev->c->ins[right].op == RF_EX_CONST) {
        rf_word pat = ev->c->ins[right].value;
        const char *p = rf_str_get(pat);
        size_t m = rf_str_len(pat);
        rf_like_pattern lp;
        if (op == RF_EX_LIKE)
            rf_like_compile(&lp, p, m);
        else
            rf_contains_compile(&lp, p, m);
        for (int t = 0; t < ev->ntabs; t++)
            if (ev->tabs[t].at == in) {   /* tabulated over the ids' range */
                const rf_id_bits *tb = &ev->tabs[t];
                for (int i = 0; i < nsel; i++) {
                    int r = sel[i];
                    rf_word id = a[r] - tb->lo;
                    out[r] = id < tb->n ? (tb->bits[id / 64] >> (id % 64)) & 1
                                        : rf_like_run(&lp, rf_str_get(a[r]), rf_str_len(a[r]));
                }
                return out;
            }
        int consecutive = 0;   /* ids one after the other: a range tabulated (texts back to back) */
        for (int i = 1; i < nsel; i++)
            consecutive += a[sel[i]] == a[sel[i - 1]] + 1;
        if (nsel >= 64 && consecutive >= nsel / 2) {
            const char *text[RF_BATCH];
            size_t len[RF_BATCH];
            bool hold[RF_BATCH];
            int run = 1;   /* the whole batch one range of ids? */
            while (run < nsel && a[sel[run]] == a[sel[0]] + (rf_word)run)
                run++;
            if (run < nsel || !rf_str_texts(a[sel[0]], (size_t)nsel, text, len))
                for (int i = 0; i < nsel; i++) {
                    text[i] = rf_str_get(a[sel[i]]);
                    len[i] = rf_str_len(a[sel[i]]);
                }
            rf_like_run_many(&lp, text, len, (size_t)nsel, hold);
            for (int i = 0; i < nsel; i++)
                out[sel[i]] = hold[i];
            return out;
        }
        for (int i = 0; i < nsel; i++) {
            int r = sel[i];
            prefetch_strings(a, sel, nsel, i);
            out[r] = rf_like_run(&lp, rf_str_get(a[r]), rf_str_len(a[r]));
        }
        return out;
    }
    /* Everything else through the shared scalar semantics. */
    if (rf_exop_is_string_op(op)) {
        for (int i = 0; i < nsel; i++) {
            int r = sel[i];
            prefetch_strings(a, sel, nsel, i);
            if (!rf_scalar_string(op, a[r], b[r], 0, &out[r], ev->st))
                return NULL;
        }
        return out;
    }
    rf_type ty = rf_exop_is_comparison(op) ? at : t;
    for (int i = 0; i < nsel; i++) {
        int r = sel[i];
        if (!rf_scalar_binary2(op, ty, at, a[r], b[r], &out[r], ev->st))
            return NULL;
    }
    return out;
}

/* if(c, x, y): x on the rows where c holds, y on the others (each branch
 * only on its own rows, so a fault in the branch not taken never fires);
 * substr(s, start, len) on all rows. */
static const rf_word *eval_ternary(rf_eval *ev, int k, const uint16_t *sel, int nsel)
{
    const rf_instr *in = &ev->c->ins[k];
    int third = k - 1, second = ev->start[third] - 1, first = ev->start[second] - 1;
    rf_word *out = ev->bufs + (size_t)k * RF_BATCH;
    const rf_word *a = eval_node(ev, first, sel, nsel);
    if (!a)
        return NULL;
    if (in->op == RF_EX_IF) {
        uint16_t *yes = ev->sels + (size_t)k * 2 * RF_BATCH, *no = yes + RF_BATCH;
        int ny = 0, nn = 0;
        for (int i = 0; i < nsel; i++) { /* branch-free: the condition is data, often ~50/50 */
            int r = sel[i];
            bool t = a[r] != 0;
            yes[ny] = (uint16_t)r;
            no[nn] = (uint16_t)r;
            ny += t;
            nn += !t;
        }
        /* A constant branch (the composed filters' lazy AND: if(a, b,
         * false)) is its value on its rows, not a node evaluated there. */
        if (ev->c->ins[third].op == RF_EX_CONST && nn > 0) {
            rf_word v = ev->c->ins[third].value;
            for (int i = 0; i < nn; i++)
                out[no[i]] = v;
            nn = 0;
        }
        if (ny > 0) {
            const rf_word *x = eval_node(ev, second, yes, ny);
            if (!x)
                return NULL;
            for (int i = 0; i < ny; i++)
                out[yes[i]] = x[yes[i]];
        }
        if (nn > 0) {
            const rf_word *y = eval_node(ev, third, no, nn);
            if (!y)
                return NULL;
            for (int i = 0; i < nn; i++)
                out[no[i]] = y[no[i]];
        }
        return out;
    }
    const rf_word *b = eval_node(ev, second, sel, nsel);
    if (!b)
        return NULL;
    const rf_word *c = eval_node(ev, third, sel, nsel);
    if (!c)
        return NULL;
    for (int i = 0; i < nsel; i++) {
        int r = sel[i];
        prefetch_strings(a, sel, nsel, i);
        if (!rf_scalar_string((rf_exop)in->op, a[r], b[r], c[r], &out[r], ev->st))
            return NULL;
    }
    return out;
}

static const rf_word *eval_node(rf_eval *ev, int k, const uint16_t *sel, int nsel)
{
    const rf_instr *in = &ev->c->ins[k];
    switch (rf_expr_arity((rf_exop)in->op)) {
    case 0:
        if (in->op == RF_EX_COL)
            return ev->cols[in->index] + ev->base;
        if (in->op == RF_EX_ROWID) {
            if (ev->rows[in->index])
                return ev->rows[in->index];
            rf_word *out = ev->bufs + (size_t)k * RF_BATCH;
            for (int i = 0; i < nsel; i++)
                out[sel[i]] = ev->base + sel[i];
            return out;
        }
        return ev->bufs + (size_t)k * RF_BATCH; /* RF_EX_CONST */
    case 1: {
        const rf_word *a = eval_node(ev, k - 1, sel, nsel);
        if (!a)
            return NULL;
        rf_word *out = ev->bufs + (size_t)k * RF_BATCH;
        if (in->op == RF_EX_NOT) {
            for (int i = 0; i < nsel; i++)
                out[sel[i]] = !a[sel[i]];
            return out;
        }
        if (in->op == RF_EX_STRLEN) {
            for (int i = 0; i < nsel; i++) {
                if (i + 16 < nsel)
                    rf_str_prefetch_entry(a[sel[i + 16]]);
                out[sel[i]] = (rf_word)rf_str_len(a[sel[i]]);
            }
            return out;
        }
        if (in->op == RF_EX_TO_STRING) {
            for (int i = 0; i < nsel; i++)
                rf_to_string((rf_type)in->arg_type, a[sel[i]], &out[sel[i]]);
            return out;
        }
        if (in->op == RF_EX_TO_NUMBER) {
            for (int i = 0; i < nsel; i++)
                if (!rf_to_number(a[sel[i]], &out[sel[i]], ev->st))
                    return NULL;
            return out;
        }
        for (int i = 0; i < nsel; i++) {
            int r = sel[i];
            if (!rf_scalar_unary((rf_exop)in->op, (rf_type)in->arg_type, (rf_type)in->type, a[r],
                                 &out[r], ev->st))
                return NULL;
        }
        return out;
    }
    case 2:
        return eval_binary(ev, k, sel, nsel);
    default:
        return eval_ternary(ev, k, sel, nsel);
    }
}

const rf_word *rf_eval_run(rf_eval *ev, rf_word *const *cols, size_t base,
                           const uint16_t *sel, int nsel, rf_status *st)
{
    ev->cols = cols;
    ev->base = base;
    ev->st = st;
    if (ev->c->n == 0) { /* absent code is the constant true */
        rf_word *out = ev->bufs;
        for (int i = 0; i < nsel; i++)
            out[sel[i]] = 1;
        return out;
    }
    return eval_node(ev, ev->c->n - 1, sel, nsel);
}

bool rf_code_eval_batch(const rf_code *c, rf_word *const *cols, size_t begin, size_t end,
                        rf_word *dst, rf_status *st)
{
    rf_eval *ev = rf_eval_new(c);
    bool ok = true;
    for (size_t base = begin; base < end && ok; base += RF_BATCH) {
        int n = end - base < RF_BATCH ? (int)(end - base) : RF_BATCH;
        const rf_word *v = rf_eval_run(ev, cols, base, rf_iota16, n, st);
        if (!v)
            ok = false;
        else
            memcpy(dst + (base - begin), v, (size_t)n * sizeof *v);
    }
    rf_eval_free(ev);
    return ok;
}
