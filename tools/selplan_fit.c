/* Checks and fits the select planner's constants (rf_selcalib,
 * weaver/selplan.h) against a measured sweep: for each sweep point, the
 * plan the code generator would choose, its measured time against the best
 * measured plan's (the gap), and a search of the constants for the set
 * that minimises the worst gap over all points (then the mean).
 *
 *   rf_selplan_fit [--calib FILE|defaults]... [--fit] [--train 2|3|all]
 *                  [--fix KEY=VALUE]... [--evals N] [--seed N] [--write FILE]
 *                  [--md] [--max-gap G] LOG...
 *
 * LOG: what `RF_WEAVE_SELPLAN_SWEEP=3 redfox run ... --stats --backend=gpu`
 * prints for one sweep point (bench/selplan_sweep.py): lines
 *   redfox: selplan sweep: t0 PLAN MS ROWS [chosen]
 * (every legal plan of the filter, its best-of-3 kernel time) and the
 *   gpu: select plan of t0: ... (chosen: sampled sel S0 S1 ... of R rows; ...)
 * line with the selectivities the planner saw. Logs with the same file name
 * (in different folders) are repeated measurements of the same point: a
 * plan's time is their mean. Logs without sweep lines are skipped.
 *
 * The planning problem of a point is rebuilt as the code generator builds
 * it (primitives/cuda/prims.c plan_filter): the filter of the sweep's
 * programs (bench/selplan_sweep.py: conjunct i is `c_i < K`, an int64
 * column i + 1 of the input against a constant) split by rf_cg_plan_split,
 * planned by rf_cg_plan_choose with the sampled selectivities over 10^8
 * rows (RF_SELPLAN_FIT_ROWS), splits allowed.
 *
 * --calib: the constants to check (a calibration file, or "defaults" for
 * rf_selcalib_defaults); given twice, a before/after table. Without one,
 * the defaults. --max-gap G: exit 1 when the worst gap of the (last)
 * constants exceeds G (a fraction: 0.10), for the test of the defaults.
 *
 * --fit: searches the constants (random search in physically sensible
 * bounds, then coordinate refinement) on the points of --train (2: the
 * 2-predicate points, 3: the 3-predicate ones, all: both), minimising the
 * worst gap, then the mean gap, over those points; prints the result and
 * its gaps on every point, and with --train all also the two
 * cross-validations (fit on 2, test on 3; fit on 3, test on 2). sector_ns
 * stays fixed (the plan chosen does not change when every ns constant is
 * scaled alike); --fix KEY=VALUE pins another (KEY as in the calibration
 * file). --write FILE writes the fitted constants as a calibration file. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_plan.h"
#include "selplan.h"

#define MAXPOINTS 256
#define MAXPLANS 256
#define MAXRUNS 4
#define RF_SELPLAN_FIT_ROWS 1e8

typedef struct point {
    char name[64];
    int n;                        /* conjuncts */
    double sel[RF_SELPLAN_MAX];   /* sampled */
    char untimed[RF_SELPLAN_FMT_MAX + 10]; /* the last plan chosen that the sweep did not time */
    double sample_rows;
    int nplans;
    char plan[MAXPLANS][RF_SELPLAN_FMT_MAX];
    double ms[MAXPLANS][MAXRUNS]; /* per run; NAN where that run lacks it */
    double mean[MAXPLANS];
    int nruns;
    char chosen[MAXRUNS][RF_SELPLAN_FMT_MAX]; /* what each run chose (as logged) */
    rf_cg_plan cg;                /* the conjuncts, as the code generator splits the filter */
    rf_selplan parsed[MAXPLANS];
} point;

static point g_pts[MAXPOINTS];
static int g_npts;

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "rf_selplan_fit: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    exit(1);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The sweep programs' filter: c_0 < K && c_1 < K && ... (int64 columns
 * 1..n of the input), as device code. */
static void sweep_filter(int n, rf_code *f)
{
    f->n = 0;
    f->ins = rf_calloc((size_t)(4 * n), sizeof *f->ins);
    for (int i = 0; i < n; i++) {
        rf_instr *c = &f->ins[f->n++];
        c->op = RF_EX_COL, c->type = c->arg_type = RF_TYPE_INT64, c->index = i + 1;
        rf_instr *k = &f->ins[f->n++];
        k->op = RF_EX_CONST, k->type = k->arg_type = RF_TYPE_INT64, k->value = rf_word_from_int(429496730);
        rf_instr *lt = &f->ins[f->n++];
        lt->op = RF_EX_LT, lt->type = RF_TYPE_BOOL, lt->arg_type = RF_TYPE_INT64;
        if (i > 0) {
            rf_instr *a = &f->ins[f->n++];
            a->op = RF_EX_AND, a->type = a->arg_type = RF_TYPE_BOOL;
        }
    }
}

static point *find_point(const char *name)
{
    for (int i = 0; i < g_npts; i++)
        if (strcmp(g_pts[i].name, name) == 0)
            return &g_pts[i];
    return NULL;
}

static void read_log(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot read %s", path);
    char name[64];
    snprintf(name, sizeof name, "%s", base_name(path));
    char *dot = strrchr(name, '.');
    if (dot)
        *dot = '\0';
    /* read the run first, merge it into its point when it has sweep lines */
    point run;
    memset(&run, 0, sizeof run);
    char line[4096], chosen[RF_SELPLAN_FMT_MAX] = "";
    while (fgets(line, sizeof line, f)) {
        char plan[RF_SELPLAN_FMT_MAX];
        double ms;
        const char *p;
        if ((p = strstr(line, "redfox: selplan sweep: ")) != NULL) {
            char tail[32] = "";
            if (sscanf(p, "redfox: selplan sweep: %*s %128s %lf %*s %31s", plan, &ms, tail) < 2)
                die("%s: malformed sweep line", path);
            if (run.nplans == MAXPLANS)
                die("%s: too many plans", path);
            snprintf(run.plan[run.nplans], RF_SELPLAN_FMT_MAX, "%s", plan);
            run.ms[run.nplans][0] = ms;
            run.nplans++;
            if (strcmp(tail, "chosen") == 0)
                snprintf(chosen, sizeof chosen, "%s", plan);
        } else if ((p = strstr(line, "sampled sel ")) != NULL) {
            p += strlen("sampled sel ");
            char *end;
            run.n = 0;
            for (;;) {
                double s = strtod(p, &end);
                if (end == p || run.n == RF_SELPLAN_MAX)
                    break;
                run.sel[run.n++] = s;
                p = end;
            }
            if (sscanf(p, " of %lf rows", &run.sample_rows) != 1)
                die("%s: malformed select plan line", path);
        }
    }
    fclose(f);
    if (run.nplans == 0) {
        fprintf(stderr, "rf_selplan_fit: %s: no sweep lines, skipped\n", path);
        return;
    }
    if (run.n < 2)
        die("%s: no sampled selectivities", path);
    point *pt = find_point(name);
    if (!pt) {
        if (g_npts == MAXPOINTS)
            die("%s: too many points", path);
        pt = &g_pts[g_npts++];
        memset(pt, 0, sizeof *pt);
        snprintf(pt->name, sizeof pt->name, "%s", name);
        pt->n = run.n;
        memcpy(pt->sel, run.sel, sizeof run.sel);
        pt->sample_rows = run.sample_rows;
        pt->nplans = run.nplans;
        for (int i = 0; i < run.nplans; i++) {
            memcpy(pt->plan[i], run.plan[i], RF_SELPLAN_FMT_MAX);
            for (int r = 0; r < MAXRUNS; r++)
                pt->ms[i][r] = NAN;
        }
        rf_code filter;
        sweep_filter(pt->n, &filter);
        rf_status st;
        rf_status_init(&st);
        int nc = rf_cg_plan_split(&filter, &pt->cg, &st);
        if (nc != pt->n) {
            fprintf(stderr, "rf_selplan_fit: %s: the filter splits into %d conjuncts, not %d (%s)\n", path, nc,
                    pt->n, nc < 0 ? st.message : "");
            exit(1);
        }
        rf_code_free(&filter);
    } else if (pt->n != run.n || memcmp(pt->sel, run.sel, (size_t)run.n * sizeof *run.sel) != 0) {
        die("%s: another run of the point sampled other selectivities", path);
    }
    if (pt->nruns == MAXRUNS)
        die("%s: too many runs of one point", path);
    int r = pt->nruns++;
    snprintf(pt->chosen[r], RF_SELPLAN_FMT_MAX, "%s", chosen);
    for (int i = 0; i < run.nplans; i++) {
        int j = 0;
        while (j < pt->nplans && strcmp(pt->plan[j], run.plan[i]) != 0)
            j++;
        if (j == pt->nplans)
            die("%s: a plan the point's first run did not time", path);
        pt->ms[j][r] = run.ms[i][0];
    }
}

static void finish_points(void)
{
    for (int p = 0; p < g_npts; p++) {
        point *pt = &g_pts[p];
        for (int i = 0; i < pt->nplans; i++) {
            double s = 0;
            int k = 0;
            for (int r = 0; r < pt->nruns; r++)
                if (!isnan(pt->ms[i][r]))
                    s += pt->ms[i][r], k++;
            pt->mean[i] = k ? s / k : NAN;
            if (!k)
                die("%s: a plan without a time", pt->name);
            rf_status st;
            rf_status_init(&st);
            if (!rf_selplan_parse(pt->plan[i], pt->n, &pt->parsed[i], &st))
                die("%s", st.message);
        }
    }
}

/* ---- Gaps ---- */

static int best_plan(const point *pt)
{
    int b = 0;
    for (int i = 1; i < pt->nplans; i++)
        if (pt->mean[i] < pt->mean[b])
            b = i;
    return b;
}

/* The plan the code generator chooses with cal: its index in pt->plan, or
 * -1 where the sweep did not time it (4 predicates: plans with | are timed
 * only when chosen), which counts as an infinite gap (pt->untimed: its
 * text and a question mark). */
static int chosen_plan(point *pt, const rf_selcalib *cal)
{
    rf_status st;
    rf_status_init(&st);
    if (!rf_cg_plan_choose(&pt->cg, pt->sel, pt->sample_rows, RF_SELPLAN_FIT_ROWS, true, cal, &st))
        die("planning failed: %s", st.message);
    char text[RF_SELPLAN_FMT_MAX];
    rf_selplan_format(&pt->cg.plan, text, sizeof text);
    for (int i = 0; i < pt->nplans; i++)
        if (strcmp(pt->plan[i], text) == 0)
            return i;
    snprintf(pt->untimed, sizeof pt->untimed, "%s?", text);
    return -1;
}

static double gap_of(const point *pt, int i) { return i < 0 ? INFINITY : pt->mean[i] / pt->mean[best_plan(pt)] - 1; }
static const char *plan_text(const point *pt, int i) { return i < 0 ? pt->untimed : pt->plan[i]; }
static double plan_ms(const point *pt, int i) { return i < 0 ? NAN : pt->mean[i]; }

static bool in_set(const point *pt, int which) { return which == 0 || pt->n == which; }

typedef struct score {
    double worst, mean;
    double sq;  /* mean squared error of the model's cost differences, ms^2 (below) */
    int within; /* points within 10% */
    int count;
} score;

/* How well the model's cost differences between plans match the measured
 * ones: per point, for every timed plan p, (model(p) - model(best)) against
 * (t(p) - t(best)) with best the plan measured fastest. The model leaves
 * out what every plan pays alike (the input's first column, the output),
 * so only differences compare. The fit's last criterion, which picks
 * physically consistent constants among the many that choose alike. */
static double diff_error(point *pt, const rf_selcalib *cal)
{
    rf_selprob q = {pt->n, pt->cg.split.conj, pt->sel, NULL, RF_SELPLAN_FIT_ROWS, true};
    int b = best_plan(pt);
    double mb = rf_selplan_cost(&pt->parsed[b], &q, cal) / 1e6, e = 0;
    for (int i = 0; i < pt->nplans; i++) {
        double d = (rf_selplan_cost(&pt->parsed[i], &q, cal) / 1e6 - mb) - (pt->mean[i] - pt->mean[b]);
        e += d * d;
    }
    return e / pt->nplans;
}

static score evaluate(const rf_selcalib *cal, int which)
{
    score s = {0, 0, 0, 0, 0};
    for (int p = 0; p < g_npts; p++) {
        point *pt = &g_pts[p];
        if (!in_set(pt, which))
            continue;
        double g = gap_of(pt, chosen_plan(pt, cal));
        s.worst = g > s.worst ? g : s.worst;
        s.mean += g;
        s.sq += diff_error(pt, cal);
        s.within += g <= 0.10;
        s.count++;
    }
    if (s.count)
        s.mean /= s.count, s.sq /= s.count;
    return s;
}

/* Lexicographic: the worst gap, then the mean gap (ties within 1e-9),
 * then the error of the model's cost differences. */
static bool better(score a, score b)
{
    if (a.worst < b.worst - 1e-9)
        return true;
    if (a.worst > b.worst + 1e-9)
        return false;
    if (a.mean < b.mean - 1e-9)
        return true;
    if (a.mean > b.mean + 1e-9)
        return false;
    return a.sq < b.sq;
}

/* ---- The search ---- */

typedef struct param {
    const char *key;
    double lo, hi;
    bool log;     /* search on a log scale */
    bool fixed;
    double value; /* when fixed */
} param;

/* Bounds: physically sensible ranges on an H100-class device (sector_ns
 * fixed at 32 bytes / 3 TB/s). */
static param g_params[] = {
    {"gather_sector_ns", 0.0107, 0.064, true, false, 0},  /* at least a streamed sector, at most 6x */
    {"write_sector_ns", 0.0054, 0.064, true, false, 0},   /* a compaction's write: 0.5x .. 6x a read */
    {"launch_ns", 5000, 40000, true, false, 0},           /* launch + count read back + host sync */
    {"branch_ns", 0.0, 0.05, false, false, 0},            /* per warp and && */
    {"diverge", 1.0, 2.5, false, false, 0},
    {"r2", 0.75, 1.0, false, false, 0},
    {"r3", 0.7, 1.0, false, false, 0},                    /* r4..r8 = r3 */
    {"op_int_ns", 0.001, 0.02, true, false, 0},
    {"fetch_sectors", 1, 8, true, false, 0},              /* 32 .. 256 bytes */
};
#define NPARAMS (sizeof g_params / sizeof *g_params)

static double *field(rf_selcalib *c, const char *key)
{
    if (strcmp(key, "sector_ns") == 0) return &c->sector_ns;
    if (strcmp(key, "gather_sector_ns") == 0) return &c->gather_sector_ns;
    if (strcmp(key, "write_sector_ns") == 0) return &c->write_sector_ns;
    if (strcmp(key, "launch_ns") == 0) return &c->launch_ns;
    if (strcmp(key, "branch_ns") == 0) return &c->branch_ns;
    if (strcmp(key, "diverge") == 0) return &c->diverge;
    if (strcmp(key, "r2") == 0) return &c->rk[1];
    if (strcmp(key, "r3") == 0) return &c->rk[2];
    if (strcmp(key, "op_int_ns") == 0) return &c->op_ns[RF_SELOP_INT];
    if (strcmp(key, "fetch_sectors") == 0) return &c->fetch_sectors;
    return NULL;
}

static void apply(const double *x, const rf_selcalib *base, rf_selcalib *c)
{
    *c = *base;
    for (size_t i = 0; i < NPARAMS; i++)
        *field(c, g_params[i].key) = g_params[i].fixed ? g_params[i].value : x[i];
    if (c->rk[2] > c->rk[1]) /* more columns overlap at least as well */
        c->rk[2] = c->rk[1];
    for (int k = 3; k < RF_SELCALIB_MAXK; k++)
        c->rk[k] = c->rk[2];
    c->calibrated = false;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rndu(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static double sample(const param *p)
{
    double u = rndu();
    return p->log ? p->lo * pow(p->hi / p->lo, u) : p->lo + (p->hi - p->lo) * u;
}

static void fit(const rf_selcalib *base, int which, long evals, rf_selcalib *out, score *out_score)
{
    double x[NPARAMS], bx[NPARAMS];
    rf_selcalib c;
    for (size_t i = 0; i < NPARAMS; i++) { /* start from the base constants, clamped */
        double v = *field((rf_selcalib *)base, g_params[i].key);
        bx[i] = v < g_params[i].lo ? g_params[i].lo : v > g_params[i].hi ? g_params[i].hi : v;
    }
    apply(bx, base, &c);
    score bs = evaluate(&c, which);
    for (long e = 0; e < evals; e++) {
        for (size_t i = 0; i < NPARAMS; i++)
            x[i] = sample(&g_params[i]);
        apply(x, base, &c);
        score s = evaluate(&c, which);
        if (better(s, bs))
            bs = s, memcpy(bx, x, sizeof x);
    }
    /* Coordinate refinement: each parameter over a grid of its range, while it helps. */
    for (int sweep = 0; sweep < 6; sweep++) {
        bool improved = false;
        for (size_t i = 0; i < NPARAMS; i++) {
            if (g_params[i].fixed)
                continue;
            for (int g = 0; g <= 64; g++) {
                memcpy(x, bx, sizeof x);
                double u = g / 64.0;
                const param *p = &g_params[i];
                x[i] = p->log ? p->lo * pow(p->hi / p->lo, u) : p->lo + (p->hi - p->lo) * u;
                apply(x, base, &c);
                score s = evaluate(&c, which);
                if (better(s, bs))
                    bs = s, memcpy(bx, x, sizeof x), improved = true;
            }
        }
        if (!improved)
            break;
    }
    apply(bx, base, out);
    *out_score = bs;
}

/* ---- Output ---- */

static void print_calib(const char *title, const rf_selcalib *c)
{
    printf("%s: sector_ns %.4g gather_sector_ns %.4g write_sector_ns %.4g launch_ns %.0f branch_ns %.4g "
           "diverge %.3f r2 %.3f r3 %.3f op_int_ns %.4g fetch_sectors %.3g\n",
           title, c->sector_ns, c->gather_sector_ns, c->write_sector_ns, c->launch_ns, c->branch_ns, c->diverge,
           c->rk[1], c->rk[2], c->op_ns[RF_SELOP_INT], c->fetch_sectors);
}

static void print_score(const char *title, const rf_selcalib *c, int which)
{
    score s = evaluate(c, which);
    printf("%s: %d points, within 10%% at %d, worst gap %.1f%%, mean gap %.2f%%; cost differences off by %.3f ms "
           "(rms)\n",
           title, s.count, s.within, 100 * s.worst, 100 * s.mean, sqrt(s.sq));
}

/* A plan for a Markdown table cell: `|` escaped. */
static const char *md_plan(const char *plan, char *buf)
{
    char *o = buf;
    for (const char *p = plan; *p; p++) {
        if (*p == '|')
            *o++ = '\\';
        *o++ = *p;
    }
    *o = '\0';
    return buf;
}

static void print_table(const rf_selcalib *before, const rf_selcalib *after, bool md)
{
    if (md)
        printf("| point | sampled sel | best measured (ms) | chosen before (ms) | gap before | chosen after (ms) "
               "| gap after |\n|---|---|---|---|---|---|---|\n");
    for (int p = 0; p < g_npts; p++) {
        point *pt = &g_pts[p];
        int b = best_plan(pt), c0 = chosen_plan(pt, before);
        char t0[sizeof pt->untimed]; /* before's plan text: after's choice may overwrite pt->untimed */
        snprintf(t0, sizeof t0, "%s", plan_text(pt, c0));
        int c1 = after ? chosen_plan(pt, after) : -1;
        char sels[128] = "";
        for (int i = 0; i < pt->n; i++)
            snprintf(sels + strlen(sels), sizeof sels - strlen(sels), "%s%.3f", i ? " " : "", pt->sel[i]);
        if (md) {
            char m0[2 * RF_SELPLAN_FMT_MAX], m1[2 * RF_SELPLAN_FMT_MAX];
            printf("| %s | %s | %s %.3f | %s %.3f | %.1f%% |", pt->name, sels, md_plan(pt->plan[b], m0), pt->mean[b],
                   md_plan(t0, m1), plan_ms(pt, c0), 100 * gap_of(pt, c0));
            if (after)
                printf(" %s %.3f | %.1f%% |", md_plan(plan_text(pt, c1), m0), plan_ms(pt, c1), 100 * gap_of(pt, c1));
            printf("\n");
        } else {
            printf("%-12s sel %-18s runs %d best %-8s %.3f  chosen %-8s %.3f gap %5.1f%%", pt->name, sels, pt->nruns,
                   pt->plan[b], pt->mean[b], t0, plan_ms(pt, c0), 100 * gap_of(pt, c0));
            if (after)
                printf("  -> %-8s %.3f gap %5.1f%%", plan_text(pt, c1), plan_ms(pt, c1), 100 * gap_of(pt, c1));
            printf("\n");
        }
    }
}

/* Run-to-run noise: per plan, the spread of its runs around their mean. */
static void print_noise(void)
{
    double worst = 0, sum = 0;
    int k = 0;
    for (int p = 0; p < g_npts; p++)
        for (int i = 0; i < g_pts[p].nplans; i++) {
            int m = 0;
            double lo = INFINITY, hi = -INFINITY;
            for (int r = 0; r < g_pts[p].nruns; r++)
                if (!isnan(g_pts[p].ms[i][r]))
                    m++, lo = fmin(lo, g_pts[p].ms[i][r]), hi = fmax(hi, g_pts[p].ms[i][r]);
            if (m < 2)
                continue;
            double d = (hi - lo) / g_pts[p].mean[i];
            worst = fmax(worst, d);
            sum += d;
            k++;
        }
    if (k)
        printf("run-to-run spread of a plan's time (max - min) / mean over %d plans timed twice or more: mean %.2f%%, "
               "max %.1f%%\n",
               k, 100 * sum / k, 100 * worst);
}

static int usage(void)
{
    fprintf(stderr, "usage: rf_selplan_fit [--calib FILE|defaults]... [--fit] [--train 2|3|all] [--fix KEY=VALUE]...\n"
                    "                      [--evals N] [--seed N] [--write FILE] [--md] [--max-gap G] LOG...\n");
    return RF_EXIT_USAGE;
}

static void load_calib(const char *arg, rf_selcalib *c)
{
    if (strcmp(arg, "defaults") == 0) {
        rf_selcalib_defaults(c);
        return;
    }
    rf_status st;
    rf_status_init(&st);
    if (!rf_selcalib_read(arg, c, &st))
        die("%s", st.message);
}

int main(int argc, char **argv)
{
    rf_selcalib cal[2];
    int ncal = 0, train = 0;
    bool do_fit = false, md = false;
    long evals = 200000;
    double max_gap = -1;
    const char *write = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--calib") == 0 && i + 1 < argc) {
            if (ncal == 2)
                return usage();
            load_calib(argv[++i], &cal[ncal++]);
        } else if (strcmp(a, "--fit") == 0) {
            do_fit = true;
        } else if (strcmp(a, "--md") == 0) {
            md = true;
        } else if (strcmp(a, "--train") == 0 && i + 1 < argc) {
            const char *t = argv[++i];
            train = strcmp(t, "2") == 0 ? 2 : strcmp(t, "3") == 0 ? 3 : strcmp(t, "all") == 0 ? 0 : -1;
            if (train < 0)
                return usage();
        } else if (strcmp(a, "--fix") == 0 && i + 1 < argc) {
            char key[64];
            double v;
            if (sscanf(argv[++i], "%63[^=]=%lf", key, &v) != 2)
                return usage();
            size_t k = 0;
            while (k < NPARAMS && strcmp(g_params[k].key, key) != 0)
                k++;
            if (k == NPARAMS)
                die("--fix: no parameter %s", key);
            g_params[k].fixed = true;
            g_params[k].value = v;
        } else if (strcmp(a, "--evals") == 0 && i + 1 < argc) {
            evals = atol(argv[++i]);
        } else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
            g_rng = strtoull(argv[++i], NULL, 10) | 1;
        } else if (strcmp(a, "--write") == 0 && i + 1 < argc) {
            write = argv[++i];
        } else if (strcmp(a, "--max-gap") == 0 && i + 1 < argc) {
            max_gap = atof(argv[++i]);
        } else if (a[0] == '-') {
            return usage();
        } else {
            read_log(a);
        }
    }
    if (g_npts == 0)
        return usage();
    finish_points();
    if (ncal == 0)
        rf_selcalib_defaults(&cal[ncal++]);
    print_noise();
    if (!do_fit) {
        const rf_selcalib *last = &cal[ncal - 1];
        print_table(&cal[0], ncal == 2 ? &cal[1] : NULL, md);
        for (int c = 0; c < ncal; c++) {
            char title[32];
            snprintf(title, sizeof title, ncal == 2 ? (c ? "after" : "before") : "constants");
            print_calib(title, &cal[c]);
            for (int w = 2; w <= 3; w++) {
                char t[64];
                snprintf(t, sizeof t, "%s, %d predicates", title, w);
                print_score(t, &cal[c], w);
            }
            snprintf(title + strlen(title), sizeof title - strlen(title), ", all");
            print_score(title, &cal[c], 0);
        }
        score s = evaluate(last, 0);
        if (max_gap >= 0 && s.worst > max_gap) {
            printf("FAIL: worst gap %.1f%% > %.1f%%\n", 100 * s.worst, 100 * max_gap);
            return 1;
        }
        return 0;
    }
    const rf_selcalib *base = &cal[ncal - 1];
    rf_selcalib best;
    score s;
    fit(base, train, evals, &best, &s);
    print_calib("fitted", &best);
    printf("fitted on %s points: worst gap %.1f%%, mean %.2f%%\n", train == 0 ? "all" : train == 2 ? "2-predicate" : "3-predicate",
           100 * s.worst, 100 * s.mean);
    print_table(base, &best, md);
    print_score("fitted, 2 predicates", &best, 2);
    print_score("fitted, 3 predicates", &best, 3);
    print_score("fitted, all", &best, 0);
    if (train == 0) {
        for (int w = 2; w <= 3; w++) {
            rf_selcalib cv;
            score cs;
            fit(base, w, evals, &cv, &cs);
            char t[96];
            snprintf(t, sizeof t, "cross-validation: fitted on %d predicates", w);
            print_calib(t, &cv);
            snprintf(t, sizeof t, "  trained on %d predicates", w);
            print_score(t, &cv, w);
            snprintf(t, sizeof t, "  tested on %d predicates", 5 - w);
            print_score(t, &cv, 5 - w);
        }
    }
    if (write) {
        rf_status st;
        rf_status_init(&st);
        snprintf(best.device, sizeof best.device, "fitted by rf_selplan_fit");
        if (!rf_selcalib_write(write, &best, &st))
            die("%s", st.message);
    }
    return 0;
}
