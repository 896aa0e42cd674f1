/* Select planning (weaver/selplan.c): splitting filters into conjuncts and
 * rebuilding them (checked by evaluating both with the CPU backend's
 * evaluator, row by row, faults included), the conjunct descriptions, the
 * cost model on hand-computed cases, the dynamic program against brute
 * force, the planner against exhaustive search, the fault guard, plan text
 * and the calibration file. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rf_prims.h"
#include "selplan.h"

/* ---- a small deterministic generator ---- */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static int rndi(int n) { return (int)(rnd() % (uint64_t)n); }
static double rndu(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* ---- expressions ---- */
#define NC 5        /* int64 columns $0..$4 */
#define ROWS 300    /* rows of random data */

static rf_expr *i64(int64_t v) { return rf_expr_const(RF_TYPE_INT64, rf_word_from_int(v)); }
static rf_expr *col(int i) { return rf_expr_leaf(RF_EX_COL, RF_TYPE_INT64, i); }
static rf_expr *bin(rf_exop op, rf_type t, rf_expr *a, rf_expr *b) { return rf_expr_binary(op, t, a, b); }
static rf_expr *cmp(rf_exop op, rf_expr *a, rf_expr *b) { return rf_expr_binary(op, RF_TYPE_BOOL, a, b); }
static rf_expr *and_(rf_expr *a, rf_expr *b) { return bin(RF_EX_AND, RF_TYPE_BOOL, a, b); }
static rf_expr *ifte(rf_type t, rf_expr *c, rf_expr *x, rf_expr *y) { return rf_expr_ternary(RF_EX_IF, t, c, x, y); }
static rf_expr *tcol(rf_type t, int i) { return rf_expr_leaf(RF_EX_COL, t, i); }
static rf_expr *scst(rf_word w) { return rf_expr_const(RF_TYPE_STRING, w); }

static rf_expr *gen_bool(int depth);

static rf_expr *gen_int(int depth)
{
    int r = depth <= 0 ? rndi(2) : rndi(9);
    switch (r) {
    case 0: return col(rndi(NC));
    case 1: return i64(rndi(7) - 3);
    case 2: return bin(RF_EX_ADD, RF_TYPE_INT64, gen_int(depth - 1), gen_int(depth - 1));
    case 3: return bin(RF_EX_MUL, RF_TYPE_INT64, gen_int(depth - 1), gen_int(depth - 1));
    case 4: return bin(RF_EX_DIV, RF_TYPE_INT64, gen_int(depth - 1), gen_int(depth - 1));
    case 5: return bin(RF_EX_MOD, RF_TYPE_INT64, gen_int(depth - 1), gen_int(depth - 1));
    case 6: return ifte(RF_TYPE_INT64, gen_bool(depth - 1), gen_int(depth - 1), gen_int(depth - 1));
    default: return col(rndi(NC));
    }
}

/* A boolean that is not an AND at the top, but may hold ANDs below. */
static rf_expr *gen_bool(int depth)
{
    static const rf_exop cmps[] = {RF_EX_EQ, RF_EX_NE, RF_EX_LT, RF_EX_LE, RF_EX_GT, RF_EX_GE};
    int r = depth <= 0 ? 0 : rndi(6);
    switch (r) {
    case 1: return rf_expr_unary(RF_EX_NOT, RF_TYPE_BOOL, and_(gen_bool(depth - 1), gen_bool(depth - 1)));
    case 2: return bin(RF_EX_OR, RF_TYPE_BOOL, gen_bool(depth - 1), and_(gen_bool(depth - 1), gen_bool(depth - 1)));
    case 3: return ifte(RF_TYPE_BOOL, gen_bool(depth - 1), gen_bool(depth - 1), gen_bool(depth - 1));
    default: return cmp(cmps[rndi(6)], gen_int(depth > 0 ? depth - 1 : 0), gen_int(depth > 0 ? depth - 1 : 0));
    }
}

/* A random AND tree (nested either way) over non-AND leaves. */
static rf_expr *gen_and_tree(int depth)
{
    if (depth > 0 && rndi(3) != 0)
        return and_(gen_and_tree(depth - 1), gen_and_tree(depth - 1));
    return gen_bool(rndi(3));
}

/* The top-level AND leaves of e, left to right: the reference split. */
static bool folds_to_constant(const rf_expr *e)
{
    rf_code c;
    rf_code_from_expr(&c, e);
    bool k = c.n == 1 && c.ins[0].op == RF_EX_CONST;
    rf_code_free(&c);
    return k;
}

static bool folds_to_false(const rf_expr *e)
{
    rf_code c;
    rf_code_from_expr(&c, e);
    bool k = c.n == 1 && c.ins[0].op == RF_EX_CONST && c.ins[0].value == 0;
    rf_code_free(&c);
    return k;
}

/* rf_code_from_expr folds constant subexpressions that evaluate: an AND
 * of constants is then one conjunct of the code, and if(a, b, c) with c
 * folding to false is the splitter's lazy a && b. */
static void leaves(rf_expr *e, rf_expr **out, int *n)
{
    if (e->op == RF_EX_IF && e->type == RF_TYPE_BOOL && e->b->type == RF_TYPE_BOOL && folds_to_false(e->c)) {
        leaves(e->a, out, n);
        leaves(e->b, out, n);
    } else if (e->op == RF_EX_AND && !folds_to_constant(e)) {
        leaves(e->a, out, n);
        leaves(e->b, out, n);
    } else {
        out[(*n)++] = e;
    }
}

static void mark_col(rf_expr *leaf, void *ctx)
{
    if (leaf->op == RF_EX_COL)
        ((bool *)ctx)[leaf->index] = true;
}

/* ---- evaluation through the CPU backend's evaluator ---- */
static rf_word g_data[NC][ROWS];
static rf_word *g_cols[NC];

static void fill_data(void)
{
    for (int c = 0; c < NC; c++) {
        g_cols[c] = g_data[c];
        for (int r = 0; r < ROWS; r++)
            g_data[c][r] = rf_word_from_int(rndi(9) - 4); /* zeros: divisions fault */
    }
}

/* One row: true and *out, or false (a fault). */
static bool eval_row(const rf_code *c, int row, rf_word *out)
{
    rf_status st;
    rf_status_init(&st);
    return rf_code_eval_batch(c, g_cols, (size_t)row, (size_t)row + 1, out, &st);
}

/* All rows: true and out[0..ROWS), or false (some row faults). */
static bool eval_rows(const rf_code *c, rf_word *out)
{
    rf_status st;
    rf_status_init(&st);
    return rf_code_eval_batch(c, g_cols, 0, ROWS, out, &st);
}

/* Each row of [lo, hi) on its own: ok[r] and val[r], or !ok[r] where row r
 * faults. Halves a failing range until the faulting rows are alone (the
 * evaluator's result for a row does not depend on the other rows). */
static void eval_each(const rf_code *c, int lo, int hi, bool *ok, rf_word *val)
{
    rf_status st;
    rf_status_init(&st);
    if (rf_code_eval_batch(c, g_cols, (size_t)lo, (size_t)hi, val + lo, &st)) {
        for (int r = lo; r < hi; r++)
            ok[r] = true;
    } else if (hi - lo == 1) {
        ok[lo] = false;
    } else {
        eval_each(c, lo, (lo + hi) / 2, ok, val);
        eval_each(c, (lo + hi) / 2, hi, ok, val);
    }
}

/* A random order the guard allows: pinned conjuncts stay, the others are
 * shuffled within the runs between pinned ones. */
static void random_legal_order(const rf_selconj *conj, int n, int *order)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int s = 0; s < n;) {
        int e = s + 1;
        while (e < n && !rf_selconj_pinned(&conj[e]))
            e++;
        int first = rf_selconj_pinned(&conj[s]) ? s + 1 : s;
        for (int i = e - 1; i > first; i--) {
            int j = first + rndi(i - first + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        s = e;
    }
}

static long g_rows_true, g_rows_false, g_rows_fault, g_conj_faults, g_reordered;
/* g_conj_faults counts conjuncts (not rows) that fault somewhere. */

/* Split e's code, compare with the reference split, rebuild in the
 * original and in a random legal order, and compare every row's value or
 * fault with the original's. */
static void check_tree(rf_expr *e)
{
    rf_code code;
    rf_code_from_expr(&code, e);
    rf_selsplit s;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selplan_split(&code, &s, &st));

    rf_expr *ref[256];
    int nref = 0;
    leaves(e, ref, &nref);
    CU_ASSERT_EQUAL_FATAL(s.n, nref);
    int next_first = 0;
    for (int i = 0; i < s.n; i++) {
        rf_code lc;
        rf_code_from_expr(&lc, ref[i]);
        CU_ASSERT_EQUAL(s.conj[i].code.n, lc.n);
        CU_ASSERT(lc.n == s.conj[i].code.n && memcmp(lc.ins, s.conj[i].code.ins, (size_t)lc.n * sizeof *lc.ins) == 0);
        CU_ASSERT(s.conj[i].first >= next_first && s.conj[i].last - s.conj[i].first + 1 == lc.n);
        next_first = s.conj[i].last + 1;
        rf_code_free(&lc);
        bool used[NC] = {0};
        rf_expr_visit_leaves(ref[i], mark_col, used);
        int k = 0;
        for (int c = 0; c < NC; c++)
            if (used[c]) {
                CU_ASSERT(k < s.conj[i].ncols && s.conj[i].cols[k] == c);
                k++;
            }
        CU_ASSERT_EQUAL(k, s.conj[i].ncols);
    }

    int idx[256], order[256];
    for (int i = 0; i < s.n; i++)
        idx[i] = i;
    random_legal_order(s.conj, s.n, order);
    for (int i = 0; i < s.n; i++)
        g_reordered += order[i] != i;
    if (s.n <= RF_SELPLAN_MAX) { /* the guard agrees that the order is legal */
        rf_selplan p;
        rf_selplan_identity(s.n, &p);
        memcpy(p.order, order, (size_t)s.n * sizeof *order);
        CU_ASSERT_TRUE(rf_selplan_legal(&p, s.conj, &st));
    }
    rf_code same, moved;
    rf_selplan_rebuild(s.conj, idx, s.n, &same);
    rf_selplan_rebuild(s.conj, order, s.n, &moved);
    CU_ASSERT(rf_code_check(&same, NC) >= 0);
    CU_ASSERT(rf_code_check(&moved, NC) >= 0);
    static bool ka[ROWS], kb[ROWS], kc[ROWS];
    static rf_word va[ROWS], vb[ROWS], vc[ROWS];
    eval_each(&code, 0, ROWS, ka, va);
    eval_each(&same, 0, ROWS, kb, vb);
    eval_each(&moved, 0, ROWS, kc, vc);
    for (int r = 0; r < ROWS; r++) {
        CU_ASSERT_EQUAL(ka[r], kb[r]);
        CU_ASSERT_EQUAL(ka[r], kc[r]);
        if (ka[r] && kb[r])
            CU_ASSERT_EQUAL(va[r], vb[r]);
        if (ka[r] && kc[r])
            CU_ASSERT_EQUAL(va[r], vc[r]);
        if (!ka[r])
            g_rows_fault++;
        else if (va[r])
            g_rows_true++;
        else
            g_rows_false++;
    }
    /* can_fault is sound: a conjunct that faults on its own says so. */
    for (int i = 0; i < s.n; i++)
        if (!eval_rows(&s.conj[i].code, va)) {
            CU_ASSERT_TRUE(s.conj[i].can_fault);
            g_conj_faults++;
        }
    rf_code_free(&same);
    rf_code_free(&moved);
    rf_selsplit_free(&s);
    rf_code_free(&code);
}

static void test_split_rebuild_random(void)
{
    fill_data();
    for (int t = 0; t < 400; t++) {
        rf_expr *e = gen_and_tree(1 + rndi(4));
        check_tree(e);
        rf_expr_free(e);
    }
    /* The data must exercise every outcome, or the comparisons prove little. */
    CU_ASSERT(g_rows_true > 10000);
    CU_ASSERT(g_rows_false > 10000);
    CU_ASSERT(g_rows_fault > 500);
    CU_ASSERT(g_conj_faults > 30);
    CU_ASSERT(g_reordered > 300);
}

static void test_split_shapes(void)
{
    rf_selsplit s;
    rf_status st;
    rf_status_init(&st);
    rf_code none = {0, NULL};
    CU_ASSERT_TRUE(rf_selplan_split(&none, &s, &st));
    CU_ASSERT_EQUAL(s.n, 0);
    rf_code empty;
    rf_selplan_rebuild(NULL, NULL, 0, &empty);
    CU_ASSERT_EQUAL(empty.n, 0);

    /* not(a && b): one conjunct, the whole code */
    rf_expr *e =
        rf_expr_unary(RF_EX_NOT, RF_TYPE_BOOL, and_(cmp(RF_EX_LT, col(0), i64(1)), cmp(RF_EX_GT, col(1), i64(2))));
    rf_code c;
    rf_code_from_expr(&c, e);
    CU_ASSERT_TRUE(rf_selplan_split(&c, &s, &st));
    CU_ASSERT_EQUAL(s.n, 1);
    CU_ASSERT(s.n == 1 && s.conj[0].first == 0 && s.conj[0].last == c.n - 1 && s.conj[0].ncols == 2);
    rf_selsplit_free(&s);
    rf_code_free(&c);
    rf_expr_free(e);

    /* (a && b) && (c && d): four, in order */
    e = and_(and_(cmp(RF_EX_LT, col(0), i64(1)), cmp(RF_EX_LT, col(1), i64(1))),
             and_(cmp(RF_EX_LT, col(2), i64(1)), cmp(RF_EX_LT, col(3), i64(1))));
    rf_code_from_expr(&c, e);
    CU_ASSERT_TRUE(rf_selplan_split(&c, &s, &st));
    CU_ASSERT_EQUAL_FATAL(s.n, 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT(s.conj[i].ncols == 1 && s.conj[i].cols[0] == i && !s.conj[i].can_fault);
    rf_selsplit_free(&s);
    rf_code_free(&c);
    rf_expr_free(e);

    /* malformed code is refused */
    rf_instr bad[1] = {{.op = RF_EX_AND, .type = RF_TYPE_BOOL, .arg_type = RF_TYPE_BOOL}};
    rf_code b = {1, bad};
    CU_ASSERT_FALSE(rf_selplan_split(&b, &s, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "malformed"));
}

/* One conjunct's description. */
static rf_selconj describe(rf_expr *e)
{
    rf_code c;
    rf_code_from_expr(&c, e);
    rf_selsplit s;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selplan_split(&c, &s, &st));
    CU_ASSERT_EQUAL_FATAL(s.n, 1);
    rf_selconj r = s.conj[0];
    r.code.ins = NULL; /* keep the counts and flags only */
    r.cols = NULL;
    rf_selsplit_free(&s);
    rf_code_free(&c);
    rf_expr_free(e);
    return r;
}

static void test_describe(void)
{
    rf_type d2 = rf_type_decimal(2);
    rf_selconj c;
    c = describe(cmp(RF_EX_LT, col(0), i64(5)));
    CU_ASSERT(c.ops[RF_SELOP_INT] == 1 && !c.can_fault && !c.interns);
    c = describe(cmp(RF_EX_LE, rf_expr_leaf(RF_EX_COL, d2, 0), rf_expr_const(d2, 100)));
    CU_ASSERT(c.ops[RF_SELOP_DEC] == 1 && c.ops[RF_SELOP_INT] == 0 && !c.can_fault);
    c = describe(cmp(RF_EX_LT, tcol(RF_TYPE_FLOAT64, 0), rf_expr_const(RF_TYPE_FLOAT64, rf_word_from_double(1.5))));
    CU_ASSERT(c.ops[RF_SELOP_FLOAT] == 1 && !c.can_fault);
    c = describe(cmp(RF_EX_GT, bin(RF_EX_ADD, RF_TYPE_INT64, col(0), i64(1)), i64(3)));
    CU_ASSERT(c.ops[RF_SELOP_ARITH] == 1 && c.ops[RF_SELOP_INT] == 1 && c.can_fault);
    c = describe(cmp(RF_EX_GT, bin(RF_EX_DIV, RF_TYPE_INT64, col(0), col(1)), i64(1)));
    CU_ASSERT(c.ops[RF_SELOP_DIV] == 1 && c.can_fault && c.ncols == 2);
    /* float64 division faults too (by zero), a float add can overflow */
    rf_expr *f0 = rf_expr_leaf(RF_EX_COL, RF_TYPE_FLOAT64, 0), *f1 = rf_expr_leaf(RF_EX_COL, RF_TYPE_FLOAT64, 1);
    c = describe(cmp(RF_EX_GT, bin(RF_EX_DIV, RF_TYPE_FLOAT64, f0, f1), rf_expr_const(RF_TYPE_FLOAT64, 0)));
    CU_ASSERT(c.can_fault);
    /* casts: widening is safe, to decimal or narrowing is not */
    c = describe(cmp(RF_EX_GT, rf_expr_unary(RF_EX_CAST, RF_TYPE_INT64, tcol(RF_TYPE_INT32, 0)), i64(1)));
    CU_ASSERT(!c.can_fault && c.ops[RF_SELOP_ARITH] == 1);
    c = describe(cmp(RF_EX_GT, rf_expr_unary(RF_EX_CAST, d2, col(0)), rf_expr_const(d2, 1)));
    CU_ASSERT(c.can_fault);
    c = describe(cmp(RF_EX_GT, rf_expr_unary(RF_EX_CAST, RF_TYPE_INT32, col(0)), rf_expr_const(RF_TYPE_INT32, 1)));
    CU_ASSERT(c.can_fault);
    /* year() cannot fault, add_months can */
    rf_expr *dt = rf_expr_leaf(RF_EX_COL, RF_TYPE_DATE, 0);
    c = describe(cmp(RF_EX_EQ, rf_expr_unary(RF_EX_YEAR, RF_TYPE_INT32, dt), rf_expr_const(RF_TYPE_INT32, 1995)));
    CU_ASSERT(!c.can_fault);
    dt = rf_expr_leaf(RF_EX_COL, RF_TYPE_DATE, 0);
    c = describe(cmp(RF_EX_LT, bin(RF_EX_ADD_MONTHS, RF_TYPE_DATE, dt, i64(3)), rf_expr_const(RF_TYPE_DATE, 9000)));
    CU_ASSERT(c.can_fault);
    /* strings: like is a lookup; substr compared with a constant faults
     * (negative length) but interns nothing; concat interns */
    rf_word pat = rf_str_intern("%green%", 7), x = rf_str_intern("ab", 2);
    rf_expr *s0 = rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0);
    c = describe(bin(RF_EX_LIKE, RF_TYPE_BOOL, s0, rf_expr_const(RF_TYPE_STRING, pat)));
    CU_ASSERT(c.ops[RF_SELOP_STR] == 1 && !c.can_fault && !rf_selconj_pinned(&c));
    s0 = rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0);
    c = describe(cmp(RF_EX_EQ, rf_expr_ternary(RF_EX_SUBSTR, RF_TYPE_STRING, s0, i64(1), i64(2)), scst(x)));
    CU_ASSERT(c.can_fault && !c.interns);
    s0 = rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0);
    c = describe(cmp(RF_EX_EQ, bin(RF_EX_CONCAT, RF_TYPE_STRING, s0, scst(x)), scst(x)));
    CU_ASSERT(!c.can_fault && c.interns && rf_selconj_pinned(&c));
    /* string order compares go through the rank table, = through ids */
    s0 = rf_expr_leaf(RF_EX_COL, RF_TYPE_STRING, 0);
    c = describe(cmp(RF_EX_LT, s0, rf_expr_const(RF_TYPE_STRING, x)));
    CU_ASSERT(c.ops[RF_SELOP_STR] == 1);
}

/* ---- the cost model ---- */
static int g_cols01[] = {0, 1}, g_col0[] = {0}, g_col1[] = {1};

static rf_selconj conj_on(int ncols, int *cols, bool fault)
{
    rf_selconj c;
    memset(&c, 0, sizeof c);
    c.ncols = ncols;
    c.cols = cols;
    c.can_fault = fault;
    return c;
}

static void zero_calib(rf_selcalib *c)
{
    rf_selcalib_defaults(c);
    c->sector_ns = 1;
    c->gather_sector_ns = 2;
    c->write_sector_ns = 1;
    for (int k = 0; k < RF_SELCALIB_MAXK; k++)
        c->rk[k] = k == 0 ? 1 : 0.75;
    c->branch_ns = 0;
    c->diverge = 1;
    c->launch_ns = 1000;
    c->rid_bytes = 4;
    c->fetch_sectors = 1;
}

static double plan_cost(const char *text, const rf_selprob *q, const rf_selcalib *cal)
{
    rf_selplan p;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selplan_parse(text, q->n, &p, &st));
    return rf_selplan_cost(&p, q, cal);
}

static bool near(double x, double y) { return fabs(x - y) <= 1e-9 * (fabs(x) + fabs(y) + 1); }
#define NEAR(x, y) near((x), (y))

static void test_cost_by_hand(void)
{
    rf_selcalib cal;
    zero_calib(&cal);
    rf_selconj cj[2] = {conj_on(1, g_col0, false), conj_on(1, g_col1, false)};
    double sel[2] = {0.25, 0.5}, cost[2] = {0, 0};
    rf_selprob q = {2, cj, sel, cost, 3200, true};
    /* N/4 = 800 sectors per column; r_2 = 0.75 */
    CU_ASSERT(NEAR(plan_cost("0&1", &q, &cal), 2 * 0.75 * 800));
    /* second column under the branch: 800 (1 - 0.75^4) sectors */
    double under = 800 * (1 - pow(0.75, 4));
    CU_ASSERT(NEAR(plan_cost("0&&1", &q, &cal), 800 + under));
    cal.branch_ns = 2;
    cal.diverge = 1.5;
    CU_ASSERT(NEAR(plan_cost("0&&1", &q, &cal), 800 + 1.5 * under + 100 * 2));
    /* a split: launch, 800 rows' ids written and read (4 bytes: 100
     * sectors each way), then column 1 gathered at 2 per sector */
    CU_ASSERT(NEAR(plan_cost("0|1", &q, &cal), 800 + 1000 + 100 * 2 + 2 * under));
    /* the other order: 1 first (S = 0.5) */
    CU_ASSERT(NEAR(plan_cost("1&&0", &q, &cal), 800 + 1.5 * 800 * (1 - pow(0.5, 4)) + 100 * 2));
    /* compute: 100 warps; the second group runs in warps with a live lane */
    cost[0] = 10;
    cost[1] = 20;
    CU_ASSERT(NEAR(plan_cost("0&1", &q, &cal), 2 * 0.75 * 800 + 100 * 30));
    CU_ASSERT(NEAR(plan_cost("0&&1", &q, &cal),
                   800 + 100 * 10 + 1.5 * (under + 100 * (1 - pow(0.75, 32)) * 20) + 100 * 2));
    /* a column read before is in a register: conjunct 1 on column 0 too */
    cost[0] = cost[1] = 0;
    cj[1] = conj_on(1, g_col0, false);
    CU_ASSERT(NEAR(plan_cost("0&&1", &q, &cal), 800 + 100 * 2));
    CU_ASSERT(NEAR(plan_cost("0&1", &q, &cal), 800));
    /* ...but not after a split: the next kernel gathers it again */
    CU_ASSERT(NEAR(plan_cost("0|1", &q, &cal), 800 + 1000 + 200 + 2 * under));
    /* fetches of 2 sectors (8 rows): a fetch is made when one of its 8
     * rows is alive, under the branch and through row ids alike */
    cj[1] = conj_on(1, g_col1, false);
    cal.fetch_sectors = 2;
    double under8 = 800 * (1 - pow(0.75, 8));
    CU_ASSERT(NEAR(plan_cost("0&&1", &q, &cal), 800 + 1.5 * under8 + 100 * 2));
    CU_ASSERT(NEAR(plan_cost("0|1", &q, &cal), 800 + 1000 + 200 + 2 * under8));
    CU_ASSERT(NEAR(plan_cost("0&1", &q, &cal), 2 * 0.75 * 800));
    cal.fetch_sectors = 1;
    cj[1] = conj_on(1, g_col0, false);
    /* costs from the op classes when q.cost is NULL */
    cj[0].ops[RF_SELOP_DIV] = 2;
    cal.op_ns[RF_SELOP_DIV] = 7;
    CU_ASSERT(NEAR(rf_selconj_cost(&cj[0], &cal), 14));
    q.cost = NULL;
    CU_ASSERT(NEAR(plan_cost("0&1", &q, &cal), 800 + 100 * 14));
}

/* A random planning problem over n conjuncts. */
static void random_problem(int n, rf_selconj *cj, int (*cols)[2], double *sel, double *cost, rf_selprob *q,
                           double pinned_p)
{
    for (int i = 0; i < n; i++) {
        int nc = 1 + rndi(2);
        cols[i][0] = rndi(5);
        cols[i][1] = cols[i][0] + 1 + rndi(3);
        cj[i] = conj_on(rndi(6) == 0 ? 0 : nc, cols[i], rndu() < pinned_p);
        double u = rndu();
        sel[i] = u < 0.1 ? 0 : u < 0.2 ? 1 : u < 0.5 ? rndu() * 0.05 : rndu();
        static const double scale[] = {0.003, 0.012, 0.06, 0.1, 2, 50};
        cost[i] = scale[rndi(6)] * rndu();
    }
    q->n = n;
    q->conj = cj;
    q->sel = sel;
    q->cost = cost;
    q->rows = pow(10, 3 + 6 * rndu());
    q->allow_split = rndi(2);
}

static void random_calib(rf_selcalib *cal)
{
    rf_selcalib_defaults(cal);
    if (rndi(2)) /* sometimes the defaults, sometimes odd devices */
        return;
    cal->sector_ns *= 0.2 + 2 * rndu();
    cal->gather_sector_ns = cal->sector_ns * (1 + 4 * rndu());
    for (int k = 1; k < RF_SELCALIB_MAXK; k++)
        cal->rk[k] = 0.5 + 0.5 * rndu();
    cal->branch_ns *= 10 * rndu();
    cal->diverge = 1 + rndu();
    cal->launch_ns *= 2 * rndu();
}

/* The cheapest connectors for a fixed order, by brute force. */
static double brute_groupings(const rf_selprob *q, const rf_selcalib *cal, const int *order)
{
    rf_selplan p;
    rf_selplan_identity(q->n, &p);
    memcpy(p.order, order, (size_t)q->n * sizeof *order);
    int kinds = q->allow_split ? 3 : 2, combos = 1;
    for (int i = 0; i + 1 < q->n; i++)
        combos *= kinds;
    double best = INFINITY;
    for (int code = 0; code < combos; code++) {
        for (int i = 0, c = code; i + 1 < q->n; i++, c /= kinds)
            p.conn[i] = (uint8_t)(c % kinds);
        rf_status st;
        rf_status_init(&st);
        if (!rf_selplan_legal(&p, q->conj, &st))
            continue;
        double v = rf_selplan_cost(&p, q, cal);
        if (v < best)
            best = v;
    }
    return best;
}

static void test_dp_exact_for_order(void)
{
    for (int t = 0; t < 3000; t++) {
        int n = 1 + rndi(6), cols[RF_SELPLAN_MAX][2], order[RF_SELPLAN_MAX];
        rf_selconj cj[RF_SELPLAN_MAX];
        double sel[RF_SELPLAN_MAX], cost[RF_SELPLAN_MAX];
        rf_selprob q;
        rf_selcalib cal;
        random_problem(n, cj, cols, sel, cost, &q, 0.25);
        random_calib(&cal);
        random_legal_order(cj, n, order);
        rf_selplan p;
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE_FATAL(rf_selplan_dp(&q, &cal, order, &p, &st));
        CU_ASSERT_TRUE(rf_selplan_legal(&p, cj, &st));
        CU_ASSERT_EQUAL(memcmp(p.order, order, (size_t)n * sizeof *order), 0);
        CU_ASSERT(NEAR(p.cost, rf_selplan_cost(&p, &q, &cal)));
        double brute = brute_groupings(&q, &cal, order);
        CU_ASSERT(NEAR(p.cost, brute));
        if (!q.allow_split)
            for (int i = 0; i + 1 < n; i++)
                CU_ASSERT(p.conn[i] != RF_SEL_SPLIT);
    }
}

static void test_choose_vs_exhaustive(void)
{
    for (int t = 0; t < 1500; t++) {
        int n = 1 + rndi(5), cols[RF_SELPLAN_MAX][2], order[RF_SELPLAN_MAX];
        rf_selconj cj[RF_SELPLAN_MAX];
        double sel[RF_SELPLAN_MAX], cost[RF_SELPLAN_MAX];
        rf_selprob q;
        rf_selcalib cal;
        random_problem(n, cj, cols, sel, cost, &q, 0.2);
        random_calib(&cal);
        rf_selplan c, e;
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE_FATAL(rf_selplan_choose(&q, &cal, &c, &st));
        CU_ASSERT_TRUE_FATAL(rf_selplan_exhaustive(&q, &cal, &e, &st));
        CU_ASSERT_TRUE(rf_selplan_legal(&c, cj, &st));
        CU_ASSERT_TRUE(rf_selplan_legal(&e, cj, &st));
        CU_ASSERT(NEAR(c.cost, rf_selplan_cost(&c, &q, &cal)));
        CU_ASSERT(NEAR(e.cost, rf_selplan_cost(&e, &q, &cal)));
        CU_ASSERT(c.cost <= e.cost * (1 + 1e-9) + 1e-12); /* never costlier... */
        CU_ASSERT(NEAR(c.cost, e.cost));                    /* ...and in fact as cheap */
        /* any other legal plan costs at least as much */
        rf_selplan o;
        random_legal_order(cj, n, order);
        rf_selplan_identity(n, &o);
        memcpy(o.order, order, (size_t)n * sizeof *order);
        for (int i = 0; i + 1 < n; i++)
            o.conn[i] = (uint8_t)rndi(q.allow_split ? 3 : 2);
        if (rf_selplan_legal(&o, cj, &st))
            CU_ASSERT(e.cost <= rf_selplan_cost(&o, &q, &cal) * (1 + 1e-9));
    }
    /* Larger filters: the rank-order DP, no worse than any grouping of its
     * order, nor than the unchanged filter. */
    for (int t = 0; t < 200; t++) {
        int n = 7 + rndi(10), cols[RF_SELPLAN_MAX][2];
        rf_selconj cj[RF_SELPLAN_MAX];
        double sel[RF_SELPLAN_MAX], cost[RF_SELPLAN_MAX];
        rf_selprob q;
        rf_selcalib cal;
        random_problem(n, cj, cols, sel, cost, &q, 0.15);
        random_calib(&cal);
        rf_selplan c, id, p;
        rf_status st;
        rf_status_init(&st);
        CU_ASSERT_TRUE_FATAL(rf_selplan_choose(&q, &cal, &c, &st));
        CU_ASSERT_TRUE(rf_selplan_legal(&c, cj, &st));
        rf_selplan_identity(n, &id);
        CU_ASSERT(c.cost <= rf_selplan_cost(&id, &q, &cal) * (1 + 1e-9));
        for (int k = 0; k < 50; k++) {
            p = c;
            for (int i = 0; i + 1 < n; i++)
                p.conn[i] = (uint8_t)rndi(q.allow_split ? 3 : 2);
            if (rf_selplan_legal(&p, cj, &st))
                CU_ASSERT(c.cost <= rf_selplan_cost(&p, &q, &cal) * (1 + 1e-9));
            rf_status_init(&st);
        }
    }
}

/* rf_selplan_gain_bound: what the best plan saves over the unchanged
 * filter, at any selectivities, never exceeds it; by hand on three
 * one-column conjuncts. */
static void test_gain_bound(void)
{
    rf_selcalib zc;
    zero_calib(&zc);
    int hc[3][1] = {{0}, {1}, {2}};
    rf_selconj hj[3];
    for (int i = 0; i < 3; i++)
        hj[i] = conj_on(1, hc[i], false);
    /* every conjunct holding, the unchanged filter reads 3 columns; a plan
     * reads at least 1: 2 columns of 10^6 rows at 1 ns a 4-row sector */
    CU_ASSERT(NEAR(rf_selplan_gain_bound(hj, 3, 1e6, &zc), 2 * 1e6 / 4));
    CU_ASSERT(rf_selplan_gain_bound(hj, 1, 1e6, &zc) == 0); /* one conjunct: nothing to plan */
    for (int t = 0; t < 600; t++) {
        int n = 2 + rndi(4), cols[RF_SELPLAN_MAX][2];
        rf_selconj cj[RF_SELPLAN_MAX];
        double sel[RF_SELPLAN_MAX], cost[RF_SELPLAN_MAX];
        rf_selprob q;
        rf_selcalib cal;
        random_problem(n, cj, cols, sel, cost, &q, 0.2);
        random_calib(&cal);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < RF_SELOP_COUNT_; k++)
                cj[i].ops[k] = rndi(3) == 0 ? rndi(4) : 0;
        q.cost = NULL; /* the bound costs conjuncts by their ops, as a run does */
        double bound = rf_selplan_gain_bound(cj, n, q.rows, &cal);
        CU_ASSERT(bound >= 0);
        rf_selplan id, best;
        rf_selplan_identity(n, &id);
        for (int k = 0; k < 8; k++) {
            for (int i = 0; i < n; i++) {
                double u = rndu();
                sel[i] = u < 0.2 ? 0 : u < 0.3 ? 1 : rndu();
            }
            rf_status st;
            rf_status_init(&st);
            CU_ASSERT_TRUE_FATAL(rf_selplan_exhaustive(&q, &cal, &best, &st));
            double gain = rf_selplan_cost(&id, &q, &cal) - best.cost;
            CU_ASSERT(gain <= bound * (1 + 1e-9) + 1e-9);
        }
    }
}

/* The model's choices on the paper's situations, with the default constants. */
static void choose_text(const rf_selprob *q, char *buf)
{
    rf_selcalib cal;
    rf_selcalib_defaults(&cal);
    rf_selplan p;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selplan_choose(q, &cal, &p, &st));
    rf_selplan_format(&p, buf, RF_SELPLAN_FMT_MAX);
}

static void test_paper_shapes(void)
{
    rf_selcalib cal;
    rf_selcalib_defaults(&cal);
    int cols[4][1] = {{0}, {1}, {2}, {3}};
    rf_selconj cj[4];
    for (int i = 0; i < 4; i++) {
        cj[i] = conj_on(1, cols[i], false);
        cj[i].ops[RF_SELOP_INT] = 1;
    }
    double sel[4];
    rf_selprob q = {4, cj, sel, NULL, 1e8, false};
    char text[RF_SELPLAN_FMT_MAX];
    /* unselective: every sector is read anyway, so no branch (the paper's S4) */
    for (int i = 0; i < 4; i++)
        sel[i] = 0.9;
    choose_text(&q, text);
    CU_ASSERT_STRING_EQUAL(text, "0&1&2&3");
    /* very selective: branch after the first conjunct */
    for (int i = 0; i < 4; i++)
        sel[i] = 0.02;
    choose_text(&q, text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "&&"));
    CU_ASSERT_EQUAL(strncmp(text + 1, "&&", 2), 0);
    /* the most selective of equal-cost conjuncts goes first */
    sel[0] = 0.9, sel[1] = 0.05, sel[2] = 0.5, sel[3] = 0.9;
    choose_text(&q, text);
    CU_ASSERT_EQUAL(text[0], '1');
    /* an expensive string function goes after a cheap selective compare */
    rf_selconj two[2] = {conj_on(1, cols[0], false), conj_on(1, cols[1], false)};
    two[0].ops[RF_SELOP_STR] = 3;
    two[1].ops[RF_SELOP_INT] = 1;
    double sel2[2] = {0.5, 0.05};
    rf_selprob q2 = {2, two, sel2, NULL, 1e8, false};
    choose_text(&q2, text);
    CU_ASSERT_STRING_EQUAL(text, "1&&0");
    /* a very selective first conjunct before a very expensive one: a
     * second kernel over the few rows left pays off on a big input... */
    double cost2[2] = {100, 0.003};
    sel2[0] = 0.5;
    sel2[1] = 0.001;
    rf_selprob q3 = {2, two, sel2, cost2, 1e9, true};
    choose_text(&q3, text);
    CU_ASSERT_STRING_EQUAL(text, "1|0");
    /* ...but not on a small one, where the launch dominates */
    q3.rows = 1e4;
    choose_text(&q3, text);
    CU_ASSERT_PTR_NULL(strchr(text, '|'));
    /* and never when the caller cannot split */
    q3.rows = 1e9;
    q3.allow_split = false;
    choose_text(&q3, text);
    CU_ASSERT_STRING_EQUAL(text, "1&&0");
}

/* The default constants on points of the H100 sweep of 2026-11-28
 * (bench/selplan/h100-2026-11-28, tools/selplan_fit): conjunct i is an
 * int64 compare on its own column, 10^8 rows, the sampled selectivities
 * of the log (the 2-predicate points: nominal). The plans asserted are the
 * ones measured fastest there; the constants before the fit chose the
 * splits 0|1 and 1|0 (15-16% slower). */
static void test_h100_sweep_choices(void)
{
    int cols[3][1] = {{1}, {2}, {3}};
    rf_selconj cj[3];
    for (int i = 0; i < 3; i++) {
        cj[i] = conj_on(1, cols[i], false);
        cj[i].ops[RF_SELOP_INT] = 1;
    }
    char text[RF_SELPLAN_FMT_MAX];
    struct { int n; double sel[3]; const char *best; } pts[] = {
        {2, {0.1, 0.3, 0}, "0&&1"},           /* 0.543 ms; 0|1 0.629 */
        {2, {0.3, 0.1, 0}, "1&&0"},           /* 0.575 ms; 1|0 0.668 */
        {2, {0.1, 0.9, 0}, "0&&1"},           /* 0.653 ms; 0|1 0.752 */
        {3, {0.101, 0.298, 0.499}, "0|1&&2"}, /* 0.681 ms */
        {3, {0.101, 0.898, 0.101}, "0|2&&1"}, /* 0.617 ms */
        {3, {0.101, 0.696, 0.699}, "0|1&&2"}, /* 0.798 ms; 0|1&2 0.822 */
    };
    for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
        rf_selprob q = {pts[i].n, cj, pts[i].sel, NULL, 1e8, true};
        choose_text(&q, text);
        if (strcmp(text, pts[i].best) != 0)
            printf("\npoint %zu: want %s, got %s\n", i, pts[i].best, text);
        CU_ASSERT_STRING_EQUAL(text, pts[i].best);
    }
    /* no split on a small input: the launch dominates */
    double sel[2] = {0.101, 0.298};
    rf_selprob q = {2, cj, sel, NULL, 1e5, true};
    choose_text(&q, text);
    CU_ASSERT_PTR_NULL(strchr(text, '|'));
}

/* y != 0 && x / y > 1 */
static rf_expr *guarded_division(void)
{
    return and_(cmp(RF_EX_NE, col(1), i64(0)), cmp(RF_EX_GT, bin(RF_EX_DIV, RF_TYPE_INT64, col(0), col(1)), i64(1)));
}

static void test_fault_guard(void)
{
    rf_expr *e = guarded_division();
    rf_code code;
    rf_code_from_expr(&code, e);
    rf_selsplit s;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selplan_split(&code, &s, &st));
    CU_ASSERT_EQUAL_FATAL(s.n, 2);
    CU_ASSERT_FALSE(s.conj[0].can_fault);
    CU_ASSERT_TRUE(s.conj[1].can_fault);

    /* Whatever the estimates (the division cheap and selective, the test
     * of y expensive and unselective), every plan keeps y first, behind a
     * branch. */
    for (int t = 0; t < 400; t++) {
        double sel[2] = {t == 0 ? 0.999 : rndu(), t == 0 ? 0.001 : rndu()};
        double cost[2] = {t == 0 ? 1000 : 100 * rndu(), t == 0 ? 0 : rndu()};
        rf_selprob q = {2, s.conj, sel, cost, pow(10, 2 + 7 * rndu()), t % 2 == 1};
        rf_selcalib cal;
        random_calib(&cal);
        rf_selplan c, x;
        CU_ASSERT_TRUE_FATAL(rf_selplan_choose(&q, &cal, &c, &st));
        CU_ASSERT_TRUE_FATAL(rf_selplan_exhaustive(&q, &cal, &x, &st));
        CU_ASSERT(c.order[0] == 0 && c.order[1] == 1 && x.order[0] == 0 && x.order[1] == 1);
        if (q.allow_split) {
            CU_ASSERT(c.conn[0] != RF_SEL_AND && x.conn[0] != RF_SEL_AND);
        } else {
            CU_ASSERT(c.conn[0] == RF_SEL_BRANCH && x.conn[0] == RF_SEL_BRANCH);
        }
    }
    /* The reverse order is refused, and would fault where y = 0; the
     * planned one does not. */
    rf_selplan p;
    CU_ASSERT_TRUE(rf_selplan_parse("1&&0", 2, &p, &st));
    CU_ASSERT_FALSE(rf_selplan_legal(&p, s.conj, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "conjunct 1 can fault"));
    rf_status_init(&st);
    CU_ASSERT_TRUE(rf_selplan_parse("0&1", 2, &p, &st));
    CU_ASSERT_FALSE(rf_selplan_legal(&p, s.conj, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "not &"));
    rf_status_init(&st);
    g_data[0][0] = rf_word_from_int(7);
    g_data[1][0] = rf_word_from_int(0);
    for (int c = 0; c < NC; c++)
        g_cols[c] = g_data[c];
    int good[2] = {0, 1}, bad[2] = {1, 0};
    rf_code cg, cb;
    rf_selplan_rebuild(s.conj, good, 2, &cg);
    rf_selplan_rebuild(s.conj, bad, 2, &cb);
    rf_word v = 1;
    CU_ASSERT_TRUE(eval_row(&cg, 0, &v));
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_FALSE(eval_row(&cb, 0, &v));

    /* A later conjunct may not overtake a faulting one either: that would
     * hide the fault the unchanged filter reports. */
    rf_selconj three[3] = {conj_on(1, g_col0, false), conj_on(1, g_col1, true), conj_on(1, g_col0, false)};
    const char *illegal[] = {"2&&0&&1", "0&&2&&1", "0&2&&1", "1&&0&&2", "0&1&&2", "2&&1&&0", "2&&1&0"};
    const char *legal[] = {"0&&1&2", "0|1&&2", "0&&1&&2", "0&&1|2"};
    for (size_t i = 0; i < sizeof illegal / sizeof *illegal; i++) {
        CU_ASSERT_TRUE(rf_selplan_parse(illegal[i], 3, &p, &st));
        CU_ASSERT_FALSE(rf_selplan_legal(&p, three, &st));
        rf_status_init(&st);
    }
    for (size_t i = 0; i < sizeof legal / sizeof *legal; i++) {
        CU_ASSERT_TRUE(rf_selplan_parse(legal[i], 3, &p, &st));
        CU_ASSERT_TRUE(rf_selplan_legal(&p, three, &st));
    }
    /* A forced plan goes through the same guard. */
    setenv("RF_WEAVE_SELPLAN", "1&&0", 1);
    CU_ASSERT_EQUAL(rf_selplan_from_env(s.conj, 2, &p, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "RF_WEAVE_SELPLAN"));
    unsetenv("RF_WEAVE_SELPLAN");
    rf_code_free(&cg);
    rf_code_free(&cb);
    rf_selsplit_free(&s);
    rf_code_free(&code);
    rf_expr_free(e);
}

/* ---- enumeration, lazy ANDs, the environment check ---- */

typedef struct seen_plans {
    const rf_selconj *conj;
    char text[1024][RF_SELPLAN_FMT_MAX];
    int n;
    bool all_legal;
} seen_plans;

static void remember_plan(const rf_selplan *p, void *ctx)
{
    seen_plans *sp = ctx;
    rf_status st;
    rf_status_init(&st);
    sp->all_legal &= rf_selplan_legal(p, sp->conj, &st);
    if (sp->n < 1024)
        rf_selplan_format(p, sp->text[sp->n++], RF_SELPLAN_FMT_MAX);
}

static int cmp_text(const void *a, const void *b) { return strcmp(a, b); }

/* Every plan rf_selplan_enumerate visits is legal, none twice, and it
 * visits as many as brute force over all orders and connectors finds legal. */
static void test_enumerate(void)
{
    rf_selconj free3[3] = {conj_on(1, g_col0, false), conj_on(1, g_col1, false), conj_on(2, g_cols01, false)};
    rf_selconj pinned4[4] = {conj_on(1, g_col0, false), conj_on(1, g_col1, false), conj_on(1, g_col1, true),
                             conj_on(1, g_col0, false)};
    const rf_selconj *sets[2] = {free3, pinned4};
    int ns[2] = {3, 4};
    static seen_plans sp;
    for (int t = 0; t < 2; t++)
        for (int split = 0; split < 2; split++) {
            memset(&sp, 0, sizeof sp);
            sp.conj = sets[t];
            sp.all_legal = true;
            int n = ns[t], got = rf_selplan_enumerate(sets[t], n, split, remember_plan, &sp);
            CU_ASSERT_EQUAL(got, sp.n);
            CU_ASSERT_TRUE(sp.all_legal);
            qsort(sp.text, (size_t)sp.n, sizeof sp.text[0], cmp_text);
            for (int i = 1; i < sp.n; i++)
                CU_ASSERT(strcmp(sp.text[i - 1], sp.text[i]) != 0);
            /* brute force: every permutation (distinct base-n digits) x connector word */
            int perms[24][4], np = 0, words = 1;
            for (int i = 0; i < n; i++)
                words *= n;
            for (int w = 0; w < words; w++) {
                int x[4], distinct = 1;
                for (int u = 0, v = w; u < n; u++, v /= n)
                    x[u] = v % n;
                for (int u = 0; u < n; u++)
                    for (int v = 0; v < u; v++)
                        distinct &= x[u] != x[v];
                if (distinct)
                    memcpy(perms[np++], x, sizeof x);
            }
            CU_ASSERT_EQUAL(np, n == 4 ? 24 : 6);
            int kinds = split ? 3 : 2, combos = 1, legal = 0;
            for (int i = 0; i + 1 < n; i++)
                combos *= kinds;
            rf_status st;
            for (int q = 0; q < np; q++)
                for (int c = 0; c < combos; c++) {
                    rf_selplan p;
                    rf_selplan_identity(n, &p);
                    memcpy(p.order, perms[q], (size_t)n * sizeof(int));
                    for (int i = 0, w = c; i + 1 < n; i++, w /= kinds)
                        p.conn[i] = (uint8_t)(w % kinds);
                    rf_status_init(&st);
                    legal += rf_selplan_legal(&p, sets[t], &st);
                }
            CU_ASSERT_EQUAL(got, legal);
        }
    CU_ASSERT_EQUAL(rf_selplan_enumerate(free3, 3, true, NULL, NULL), 6 * 9);
    CU_ASSERT_EQUAL(rf_selplan_enumerate(free3, 3, false, NULL, NULL), 6 * 4);
    CU_ASSERT_EQUAL(rf_selplan_enumerate(free3, RF_SELPLAN_EXHAUSTIVE_MAX + 1, true, NULL, NULL), -1);
}

/* IF(a, b, false), how weaver/compose.c joins a chain's filters, splits as
 * a && b; other IFs are conjuncts of their own. The rebuilt && chain means
 * what the IF did on every row (faults included). */
static void test_lazy_and(void)
{
    rf_expr *fls = rf_expr_const(RF_TYPE_BOOL, 0);
    rf_expr *e = ifte(RF_TYPE_BOOL, ifte(RF_TYPE_BOOL, cmp(RF_EX_NE, col(1), i64(0)),
                                         cmp(RF_EX_GT, bin(RF_EX_DIV, RF_TYPE_INT64, col(0), col(1)), i64(1)),
                                         rf_expr_clone(fls)),
                      and_(cmp(RF_EX_LT, col(2), i64(3)), cmp(RF_EX_GE, col(0), i64(-2))), fls);
    rf_code code;
    rf_code_from_expr(&code, e);
    rf_selsplit s;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selplan_split(&code, &s, &st));
    CU_ASSERT_EQUAL_FATAL(s.n, 4);
    CU_ASSERT(!s.conj[0].can_fault && s.conj[1].can_fault && !s.conj[2].can_fault && !s.conj[3].can_fault);
    fill_data();
    int order[4] = {0, 1, 3, 2};
    rf_code moved;
    rf_selplan_rebuild(s.conj, order, 4, &moved);
    static bool ka[ROWS], kb[ROWS];
    static rf_word va[ROWS], vb[ROWS];
    eval_each(&code, 0, ROWS, ka, va);
    eval_each(&moved, 0, ROWS, kb, vb);
    int holds = 0;
    for (int r = 0; r < ROWS; r++) {
        CU_ASSERT_EQUAL(ka[r], kb[r]);
        if (ka[r] && kb[r]) {
            CU_ASSERT_EQUAL(va[r] != 0, vb[r] != 0);
            holds += va[r] != 0;
        }
    }
    CU_ASSERT(holds > 0 && holds < ROWS);
    rf_code_free(&moved);
    rf_selsplit_free(&s);
    rf_code_free(&code);
    rf_expr_free(e);
    /* Not lazy ANDs: IF(a, b, true), and an IF of integers. */
    rf_expr *others[2] = {
        ifte(RF_TYPE_BOOL, cmp(RF_EX_NE, col(1), i64(0)), cmp(RF_EX_LT, col(0), i64(1)),
             rf_expr_const(RF_TYPE_BOOL, 1)),
        ifte(RF_TYPE_INT64, cmp(RF_EX_NE, col(1), i64(0)), col(0), i64(0)),
    };
    for (int i = 0; i < 2; i++) {
        rf_code_from_expr(&code, others[i]);
        CU_ASSERT_TRUE(rf_selplan_split(&code, &s, &st));
        CU_ASSERT_EQUAL(s.n, 1);
        rf_selsplit_free(&s);
        rf_code_free(&code);
        rf_expr_free(others[i]);
    }
}

/* rf_selplan_env_check: the backends' check of a fused chain's filter. */
static void test_env_check(void)
{
    rf_expr *e = guarded_division();
    rf_code code;
    rf_code_from_expr(&code, e);
    rf_status st;
    rf_status_init(&st);
    unsetenv("RF_WEAVE_SELPLAN");
    CU_ASSERT_TRUE(rf_selplan_env_check(&code, &st));
    setenv("RF_WEAVE_SELPLAN", "0&&1", 1);
    CU_ASSERT_TRUE(rf_selplan_env_check(&code, &st));
    setenv("RF_WEAVE_SELPLAN", "2&&0&&1", 1); /* another filter's */
    CU_ASSERT_TRUE(rf_selplan_env_check(&code, &st));
    setenv("RF_WEAVE_SELPLAN", "1&&0", 1);
    CU_ASSERT_FALSE(rf_selplan_env_check(&code, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "RF_WEAVE_SELPLAN: select plan '1&&0': conjunct 1 can fault"));
    CU_ASSERT_EQUAL(st.code, RF_EXIT_RUNTIME_ERROR);
    rf_status_init(&st);
    setenv("RF_WEAVE_SELPLAN", "1&", 1);
    CU_ASSERT_FALSE(rf_selplan_env_check(&code, &st));
    unsetenv("RF_WEAVE_SELPLAN");
    rf_code_free(&code);
    rf_expr_free(e);
}

/* ---- plan text ---- */
static void test_parse_format(void)
{
    rf_status st;
    rf_status_init(&st);
    for (int t = 0; t < 2000; t++) {
        int n = rndi(RF_SELPLAN_MAX + 1);
        rf_selplan p, q;
        rf_selplan_identity(n, &p);
        for (int i = n - 1; i > 0; i--) {
            int j = rndi(i + 1), x = p.order[i];
            p.order[i] = p.order[j];
            p.order[j] = x;
        }
        for (int i = 0; i + 1 < n; i++)
            p.conn[i] = (uint8_t)rndi(3);
        char buf[RF_SELPLAN_FMT_MAX];
        rf_selplan_format(&p, buf, sizeof buf);
        CU_ASSERT_TRUE_FATAL(rf_selplan_parse(buf, n, &q, &st));
        CU_ASSERT_EQUAL(q.n, n);
        CU_ASSERT_EQUAL(memcmp(p.order, q.order, (size_t)n * sizeof *p.order), 0);
        CU_ASSERT(n < 2 || memcmp(p.conn, q.conn, (size_t)(n - 1)) == 0);
    }
    rf_selplan p;
    char buf[RF_SELPLAN_FMT_MAX];
    CU_ASSERT_TRUE(rf_selplan_parse(" 2 & 0&&1 |3 ", 4, &p, &st));
    CU_ASSERT_STRING_EQUAL(rf_selplan_format(&p, buf, sizeof buf), "2&0&&1|3");
    CU_ASSERT(p.conn[0] == RF_SEL_AND && p.conn[1] == RF_SEL_BRANCH && p.conn[2] == RF_SEL_SPLIT);
    static const struct { const char *text; int n; const char *msg; } bad[] = {
        {"0&&1&", 2, "expected a conjunct number"},
        {"0&0", 2, "conjunct 0 named twice"},
        {"0&5", 2, "conjunct 5 out of range"},
        {"0&1", 3, "names 2 conjuncts, the filter has 3"},
        {"x", 1, "expected a conjunct number"},
        {"0&&&1", 2, "expected a conjunct number"},
        {"0 1", 2, "expected &, && or |"},
        {"0||1", 2, "expected a conjunct number"},
        {"99999999999999999999", 1, "at most 32 conjuncts"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rf_status_init(&st);
        CU_ASSERT_FALSE(rf_selplan_parse(bad[i].text, bad[i].n, &p, &st));
        if (!strstr(st.message, bad[i].msg))
            printf("\n'%s': got '%s'\n", bad[i].text, st.message);
        CU_ASSERT_PTR_NOT_NULL(strstr(st.message, bad[i].msg));
    }
    /* the environment variable */
    rf_selconj free3[3] = {conj_on(1, g_col0, false), conj_on(1, g_col1, false), conj_on(2, g_cols01, false)};
    rf_status_init(&st);
    unsetenv("RF_WEAVE_SELPLAN");
    CU_ASSERT_EQUAL(rf_selplan_from_env(free3, 3, &p, &st), 0);
    setenv("RF_WEAVE_SELPLAN", "1&0&&2", 1);
    CU_ASSERT_EQUAL(rf_selplan_from_env(free3, 3, &p, &st), 1);
    CU_ASSERT_STRING_EQUAL(rf_selplan_format(&p, buf, sizeof buf), "1&0&&2");
    CU_ASSERT_EQUAL(rf_selplan_from_env(free3, 2, &p, &st), 0); /* another filter */
    setenv("RF_WEAVE_SELPLAN", "1&&", 1);
    CU_ASSERT_EQUAL(rf_selplan_from_env(free3, 3, &p, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "RF_WEAVE_SELPLAN: select plan '1&&'"));
    unsetenv("RF_WEAVE_SELPLAN");
}

/* ---- the calibration file ---- */
static char g_dir[64];

/* Every number and the device name (not the padding). */
static bool calib_equal(const rf_selcalib *a, const rf_selcalib *b)
{
    size_t from = offsetof(rf_selcalib, sector_ns), to = offsetof(rf_selcalib, fetch_sectors) + sizeof a->fetch_sectors;
    return strcmp(a->device, b->device) == 0 && a->calibrated == b->calibrated &&
           memcmp((const char *)a + from, (const char *)b + from, to - from) == 0;
}

static char *write_text(const char *name, const char *text)
{
    char *path = rf_sprintf("%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void expect_bad(const char *text, const char *msg)
{
    char *path = write_text("bad.tsv", text);
    rf_selcalib c;
    rf_selcalib_defaults(&c);
    c.sector_ns = 42;
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_FALSE(rf_selcalib_read(path, &c, &st));
    char *want = rf_sprintf("%s:%s", path, msg);
    if (strcmp(st.message, want) != 0)
        printf("\nwant '%s'\n got '%s'\n", want, st.message);
    CU_ASSERT_STRING_EQUAL(st.message, want);
    CU_ASSERT_EQUAL(c.sector_ns, 42); /* untouched on failure */
    free(want);
    free(path);
}

static void test_calib_file(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/rf_selplan_XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(g_dir));
    rf_selcalib a, b;
    rf_selcalib_defaults(&a);
    CU_ASSERT_FALSE(a.calibrated);
    snprintf(a.device, sizeof a.device, "NVIDIA H100 80GB HBM3");
    a.sector_ns = 0.1 / 3;
    a.gather_sector_ns = 1e-300;
    a.write_sector_ns = 12345.678901234567;
    for (int k = 0; k < RF_SELCALIB_MAXK; k++)
        a.rk[k] = 1.0 / (k + 1.5);
    a.branch_ns = 0;
    a.diverge = 1.0 + 1.0 / 7;
    for (int k = 0; k < RF_SELOP_COUNT_; k++)
        a.op_ns[k] = 0.001 * (k + 1) / 3;
    a.launch_ns = 9e9;
    a.rid_bytes = 8;
    a.fetch_sectors = 1.0 + 1.0 / 3;
    char *path = rf_selcalib_path(g_dir, a.device);
    char *want = rf_sprintf("%s/calib-NVIDIA_H100_80GB_HBM3.tsv", g_dir);
    CU_ASSERT_STRING_EQUAL(path, want);
    rf_status st;
    rf_status_init(&st);
    CU_ASSERT_TRUE_FATAL(rf_selcalib_write(path, &a, &st));
    CU_ASSERT_TRUE_FATAL(rf_selcalib_read(path, &b, &st));
    CU_ASSERT_TRUE(b.calibrated);
    b.calibrated = a.calibrated;
    CU_ASSERT_STRING_EQUAL(a.device, b.device);
    CU_ASSERT_TRUE(calib_equal(&a, &b)); /* every number exactly */
    unlink(path);
    free(path);
    free(want);

    /* missing keys keep their defaults, unknown keys and comments are
     * skipped, CRLF line ends are fine */
    path = write_text("part.tsv", "# comment\n\nsector_ns\t2.5\r\nmeas.and_ns.0.10\t77\nfuture_key\tabc\nr3\t0.5\n");
    rf_selcalib_defaults(&a);
    a.sector_ns = 2.5;
    a.rk[2] = 0.5;
    CU_ASSERT_TRUE(rf_selcalib_read(path, &b, &st));
    b.calibrated = false;
    CU_ASSERT_TRUE(calib_equal(&a, &b));
    free(path);

    expect_bad("sector_ns\t1\nsector_ns 0.1\n", "2: expected key<TAB>value");
    expect_bad("\tvalue\n", "1: expected key<TAB>value");
    expect_bad("# x\n\ndiverge\t0.5\n", "3: diverge: '0.5' is not a number >= 1");
    expect_bad("r2\tabc\n", "1: r2: 'abc' is not a number > 0");
    expect_bad("r1\t0\n", "1: r1: '0' is not a number > 0");
    expect_bad("fetch_sectors\t0.5\n", "1: fetch_sectors: '0.5' is not a number >= 1");
    expect_bad("launch_ns\t-1\n", "1: launch_ns: '-1' is not a number >= 0");
    expect_bad("branch_ns\t\n", "1: branch_ns: '' is not a number >= 0");
    expect_bad("op_str_ns\t1e999\n", "1: op_str_ns: '1e999' is not a number >= 0");
    expect_bad("op_str_ns\tnan\n", "1: op_str_ns: 'nan' is not a number >= 0");
    expect_bad("sector_ns\t1 2\n", "1: sector_ns: '1 2' is not a number >= 0");

    path = rf_sprintf("%s/none.tsv", g_dir);
    CU_ASSERT_FALSE(rf_selcalib_read(path, &b, &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.message, "cannot open"));
    free(path);
    path = rf_sprintf("%s/part.tsv", g_dir);
    unlink(path);
    free(path);
    path = rf_sprintf("%s/bad.tsv", g_dir);
    unlink(path);
    free(path);
    rmdir(g_dir);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("selplan", NULL, NULL);
    CU_add_test(s, "split and rebuild of random AND trees, evaluated", test_split_rebuild_random);
    CU_add_test(s, "split shapes", test_split_shapes);
    CU_add_test(s, "conjunct descriptions: op classes, faults, interning", test_describe);
    CU_add_test(s, "cost model by hand", test_cost_by_hand);
    CU_add_test(s, "dynamic program = brute force for an order", test_dp_exact_for_order);
    CU_add_test(s, "choose = exhaustive", test_choose_vs_exhaustive);
    CU_add_test(s, "no plan saves more than the gain bound", test_gain_bound);
    CU_add_test(s, "the paper's plan shapes", test_paper_shapes);
    CU_add_test(s, "the H100 sweep's fastest plans", test_h100_sweep_choices);
    CU_add_test(s, "fault guard", test_fault_guard);
    CU_add_test(s, "plan text and RF_WEAVE_SELPLAN", test_parse_format);
    CU_add_test(s, "every legal plan enumerated", test_enumerate);
    CU_add_test(s, "IF(a, b, false) splits as a && b", test_lazy_and);
    CU_add_test(s, "RF_WEAVE_SELPLAN checked against a filter", test_env_check);
    CU_add_test(s, "calibration file", test_calib_file);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    rf_str_reset();
    return failed ? 1 : 0;
}
