/* Conjunctive select planning (Kernel Weaver, docs/weaver.md s. 5), after
 * Sitaridi & Ross, "Optimizing select conditions on GPUs" (DaMoN'13).
 *
 * A compute stage's filter that is an RF_EX_AND tree is split into its
 * conjuncts; the planner picks the order in which a generated kernel
 * evaluates them, where consecutive conjuncts are combined with `&` (both
 * evaluated, no branch) or `&&` (a branch: the rest runs only on the lanes
 * still alive), and where the work is cut into several kernels with a
 * row-id list between them. Nothing here changes what a filter means: a
 * plan only reorders conjuncts that cannot fault or intern strings, and
 * evaluates each conjunct that can on exactly the rows the original filter
 * evaluated it on (the guard below).
 *
 * Typical use (the GPU code generator):
 *     rf_selsplit s;  rf_selplan_split(&k->filter, &s, st);
 *     sel[i] = a sample's estimate for s.conj[i];
 *     rf_selprob q = {s.n, s.conj, sel, NULL, rows, true};
 *     if (rf_selplan_from_env(s.conj, s.n, &plan, st) == 0)
 *         rf_selplan_choose(&q, calib, &plan, st);
 *     ... emit plan.order with plan.conn; rf_selplan_rebuild for a kernel's
 *     conjuncts as one rf_code (an && chain) where a backend wants code.
 *
 * RF_EX_AND in rf_code is `&&` (it short-circuits on every backend:
 * primitives/cpu/eval.c, primitives/cuda/codegen.c); `&` exists only in
 * plans, for the generator to emit. */
#ifndef RF_SELPLAN_H
#define RF_SELPLAN_H

#include "hir.h"

#define RF_SELPLAN_MAX 32            /* conjuncts a plan can hold */
#define RF_SELPLAN_SEARCH_MAX 6      /* choose tries every legal order up to this many */
#define RF_SELPLAN_EXHAUSTIVE_MAX 6  /* rf_selplan_exhaustive refuses more */
#define RF_SELPLAN_FMT_MAX (RF_SELPLAN_MAX * 4 + 1) /* rf_selplan_format's buffer */
#define RF_SELCALIB_MAXK 8           /* r_k measured for k = 1..8 columns */

/* ---- Conjuncts ---- */

/* Operation classes, each with a calibrated cost per warp (rf_selcalib). */
typedef enum rf_selop {
    RF_SELOP_INT,   /* compare of int32/int64/date/bool words, string =/!=, not/and/or/if */
    RF_SELOP_DEC,   /* compare of decimals */
    RF_SELOP_FLOAT, /* float64 compare and + - * */
    RF_SELOP_ARITH, /* checked integer/decimal/date arithmetic, casts, date parts */
    RF_SELOP_DIV,   /* / and % (any type) */
    RF_SELOP_STR,   /* a string function or string order compare: a lookup table on the GPU */
    RF_SELOP_COUNT_
} rf_selop;

typedef struct rf_selconj {
    int first, last;          /* its instructions [first, last] in the filter (a postfix subtree) */
    rf_code code;             /* those instructions as code of their own (owned) */
    int ncols;
    int *cols;                /* distinct input columns read, ascending (owned) */
    int ops[RF_SELOP_COUNT_]; /* instructions of each class */
    bool can_fault;           /* some instruction can raise a run-time error */
    bool interns;             /* it interns strings (rf_code_interns) */
} rf_selconj;

/* Pinned conjuncts (can fault or intern) must be evaluated on exactly the
 * rows the original filter evaluated them on: more rows could raise an
 * error the original never does (`y != 0 && x / y > 1`), fewer could hide
 * one that `--no-fuse` reports, and either could number strings
 * differently. */
static inline bool rf_selconj_pinned(const rf_selconj *c) { return c->can_fault || c->interns; }

typedef struct rf_selsplit {
    int n;                    /* 0: the filter is absent (always true) */
    rf_selconj *conj;         /* [n] in the filter's left-to-right order */
} rf_selsplit;

/* Flattens the top-level RF_EX_AND tree of `filter` into its conjuncts, in
 * evaluation order (nested ANDs included: (a && b) && c and a && (b && c)
 * both give a, b, c), and describes each. IF(a, b, false) of booleans
 * counts as a && b (weaver/compose.c joins a chain's filters so). Fails
 * only on malformed code. */
bool rf_selplan_split(const rf_code *filter, rf_selsplit *out, rf_status *st);
void rf_selsplit_free(rf_selsplit *s);

/* Code evaluating conj[idx[0]] && conj[idx[1]] && ... as a left-deep AND
 * chain (m = 0: absent code, always true). Same meaning as the original
 * filter whenever idx is a legal order (rf_selplan_legal). */
void rf_selplan_rebuild(const rf_selconj *conj, const int *idx, int m, rf_code *out);

/* ---- Calibration ---- */

/* Per-device constants of the cost model, in ns of kernel time amortised
 * over the whole device (a kernel's time divided by the sectors it moves
 * or the warps it runs). "Per warp" = per 32 rows evaluated together. */
typedef struct rf_selcalib {
    char device[64];               /* the device measured ("" for the defaults) */
    double sector_ns;              /* one 32-byte sector read by a branch-free, coalesced scan */
    double gather_sector_ns;       /* one sector read through a row-id list (kernels after a split) */
    double write_sector_ns;        /* one sector of row ids written by a compaction */
    double rk[RF_SELCALIB_MAXK];   /* rk[k-1] = r_k = scan_k / (k * scan_1): loads of k columns
                                      issued together, without a branch, overlap (paper s. 3.1) */
    double branch_ns;              /* a warp executing one && (branch and reconvergence) */
    double diverge;                /* >= 1: memory and compute of a group under a branch cost this
                                      much more than branch-free (loads scheduled one group at a time) */
    double op_ns[RF_SELOP_COUNT_]; /* one instruction of the class, per warp */
    double launch_ns;              /* each extra kernel of a split plan: launch and the host
                                      sync that reads its row count */
    double rid_bytes;              /* bytes per row id between kernels (4) */
    double fetch_sectors;          /* >= 1: sectors the memory fetches together: under a branch or
                                      through row ids, a run of 4 fetch_sectors rows (8-byte
                                      words) costs its fetch_sectors sectors when one row of it
                                      is alive (1: a 32-byte sector; 4: a 128-byte line) */
    bool calibrated;               /* false: the defaults below, not a measurement */
} rf_selcalib;

/* Conservative defaults, estimated for an H100-class device (3 TB/s). */
void rf_selcalib_defaults(rf_selcalib *c);

/* The TSV file: one `key<TAB>value` per line; blank lines and lines starting
 * with '#' are skipped; keys: device, sector_ns, gather_sector_ns,
 * write_sector_ns, r1..r8, branch_ns, diverge, op_int_ns, op_dec_ns,
 * op_float_ns, op_arith_ns, op_div_ns, op_str_ns, launch_ns, rid_bytes,
 * fetch_sectors.
 * Reading starts from the defaults (a key not in the file keeps its
 * default), ignores unknown keys (newer tools, raw measurements), and fails
 * on a malformed line with "PATH:LINE: ..." (no tab, empty key, a value
 * that is not a finite number >= 0, r_k not > 0, diverge or fetch_sectors
 * < 1). Writing
 * prints every key with 17 significant digits, so a read gives back the
 * same numbers. */
bool rf_selcalib_read(const char *path, rf_selcalib *c, rf_status *st);
bool rf_selcalib_write(const char *path, const rf_selcalib *c, rf_status *st);
/* "DIR/calib-<device>.tsv", characters other than [A-Za-z0-9._-] of the
 * device name as '_' (malloc'd). */
char *rf_selcalib_path(const char *dir, const char *device);

/* Compute cost of one evaluation of c by a warp: sum of ops[k] * op_ns[k]. */
double rf_selconj_cost(const rf_selconj *c, const rf_selcalib *cal);

/* ---- Plans ---- */

typedef enum rf_selconn {
    RF_SEL_AND,     /* "&":  both evaluated on the rows that reach them, no branch */
    RF_SEL_BRANCH,  /* "&&": the right side only on lanes where everything before holds */
    RF_SEL_SPLIT    /* "|":  a new kernel over the row ids of the rows that passed */
} rf_selconn;

/* A plan: the conjuncts in evaluation order, and between each consecutive
 * pair how they are combined. A maximal run joined by & is a group; groups
 * are joined by && or |; the runs between |s are kernels. */
typedef struct rf_selplan {
    int n;
    int order[RF_SELPLAN_MAX];   /* conjunct indices (into the split) */
    uint8_t conn[RF_SELPLAN_MAX];/* conn[i] joins order[i] and order[i+1] (rf_selconn), i < n-1 */
    double cost;                 /* model cost (ns), set by choose/exhaustive/dp */
} rf_selplan;

/* The plan equal to the unchanged filter: original order, all &&. */
void rf_selplan_identity(int n, rf_selplan *out);

/* Text form, also the syntax of RF_WEAVE_SELPLAN: conjunct indices in
 * evaluation order separated by "&", "&&" or "|", e.g. "2&0&&1|3" (blanks
 * allowed): conjuncts 2 and 0 without a branch, then 1 under a branch, then
 * a second kernel evaluating 3 over the rows that passed. Each index
 * 0..n-1 exactly once. rf_selplan_format writes into buf (cap >=
 * RF_SELPLAN_FMT_MAX) and returns it. */
bool rf_selplan_parse(const char *text, int n, rf_selplan *out, rf_status *st);
char *rf_selplan_format(const rf_selplan *p, char *buf, size_t cap);

/* The plan forced by the environment variable RF_WEAVE_SELPLAN (for the
 * benchmark sweep): 1 and *out set when it is set and names n conjuncts;
 * 0 when it is unset or names another number of conjuncts (another filter:
 * planned by the model); -1 and st filled when it does not parse or is
 * illegal for these conjuncts (the guard). */
int rf_selplan_from_env(const rf_selconj *conj, int n, rf_selplan *out, rf_status *st);
/* false (st filled) when RF_WEAVE_SELPLAN does not parse, or names this
 * filter's number of conjuncts in an order the guard forbids. Backends
 * check a fused chain's composed filter first: the error must not turn
 * into a quiet fallback to the group's members (whose filters are others). */
bool rf_selplan_env_check(const rf_code *filter, rf_status *st);

/* The guard. A plan is legal when it is a permutation of 0..n-1 and every
 * pinned conjunct p (rf_selconj_pinned) stays at position p, after exactly
 * the conjuncts 0..p-1 (in any order), and is joined to what precedes it
 * by && or |. Then p is evaluated on the rows where all conjuncts that
 * preceded it originally hold, and on no other: the original's rows.
 * (Conjuncts originally after p may share p's group, after it.) */
bool rf_selplan_legal(const rf_selplan *p, const rf_selconj *conj, rf_status *st);

/* What the cost model needs to know of one filter. */
typedef struct rf_selprob {
    int n;                    /* conjuncts, 0..RF_SELPLAN_MAX */
    const rf_selconj *conj;   /* [n]: columns read, pinned */
    const double *sel;        /* [n]: fraction of rows each conjunct holds on, 0..1 */
    const double *cost;       /* [n]: compute ns per warp evaluation; NULL: rf_selconj_cost */
    double rows;              /* input rows */
    bool allow_split;         /* may a plan use several kernels (RF_SEL_SPLIT) */
} rf_selprob;

/* Model cost of a plan in ns (docs/weaver.md s. 5; selplan.c explains the
 * formulas). Conjuncts are assumed independent. p must be legal for q. */
double rf_selplan_cost(const rf_selplan *p, const rf_selprob *q, const rf_selcalib *cal);

/* The most any plan could save over the identity plan (the unchanged
 * filter: its order, all &&) on `rows` rows, whatever the selectivities
 * turn out to be: the identity's cost where every conjunct holds (it only
 * grows with them) less what every plan pays at least (its first group,
 * over all rows, computes one conjunct and reads one column). A caller
 * whose plan would have to pay for something first (a module's load) skips
 * the selectivity sample when this bound cannot. */
double rf_selplan_gain_bound(const rf_selconj *conj, int n, double rows, const rf_selcalib *cal);

/* The cheapest grouping (& / && / |) of the conjuncts in the given order,
 * by the paper's dynamic program (exact for the order, O(n^3)). order must
 * be a legal order. */
bool rf_selplan_dp(const rf_selprob *q, const rf_selcalib *cal, const int *order, rf_selplan *out,
                   rf_status *st);

/* The planner: the order by rank (sel - 1) / cost per row (pinned
 * conjuncts where the guard keeps them), then rf_selplan_dp; for n <=
 * RF_SELPLAN_SEARCH_MAX it also runs the DP on every other legal order and
 * keeps the cheapest (the rank order is optimal only in the simpler model
 * of Hellerstein; r_k, shared columns and warp divergence break it). */
bool rf_selplan_choose(const rf_selprob *q, const rf_selcalib *cal, rf_selplan *out, rf_status *st);

/* Every legal plan (orders x connectors), the cheapest by rf_selplan_cost.
 * n <= RF_SELPLAN_EXHAUSTIVE_MAX. For tests and the benchmark sweep. */
bool rf_selplan_exhaustive(const rf_selprob *q, const rf_selcalib *cal, rf_selplan *out, rf_status *st);

/* Calls visit (unless NULL) on every legal plan of the n conjuncts
 * (orders the guard allows x connectors; `|` only with allow_split), in a
 * fixed order: orders lexicographically, then connectors. Returns how many,
 * -1 when n > RF_SELPLAN_EXHAUSTIVE_MAX. The plans' cost is not set. For
 * the benchmark sweep (`redfox explain --select-plans`) and tests. */
typedef void (*rf_selplan_visit)(const rf_selplan *p, void *ctx);
int rf_selplan_enumerate(const rf_selconj *conj, int n, bool allow_split, rf_selplan_visit visit, void *ctx);

#endif
