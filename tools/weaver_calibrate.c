/* Measures the constants of the select planner's cost model (rf_selcalib,
 * weaver/selplan.h) on CUDA device 0 and writes them as calib-<device>.tsv.
 *
 *   rf_weaver_calibrate [--rows N] [--out FILE|DIR]
 *
 * N rows per synthetic column (default 2^25; eight 8-byte columns, so 2 GiB
 * of device memory at the default). DIR defaults to $RF_CUDA_CACHE, else
 * ~/.cache/redfox (where the NVRTC cache lives). Without a CUDA device it
 * prints "skipped: no CUDA device" and exits 0 (CI builds and runs it on
 * machines without one).
 *
 * What is measured (kernels: weaver_calibrate.cu) and what it gives, with
 * W = N / 32 warps and N / 4 sectors per column:
 *   scan_k, k = 1..8 (branch-free k-column test)
 *       sector_ns = scan_1 / (N / 4);  r_k = scan_k / (k scan_1)  (the paper's r_k)
 *   ops: R = 64 chained operations of a class per row, minus R = 0
 *       op_<class>_ns = (t_R - t_0) / (R W)
 *   c0 < t(s) && c1 < t(.5) for s = 0.02, 0.1 .. 0.9, against scan_1, in
 *   the generated select kernel's shape (8 rows per thread: the branch keeps
 *   the second column's loads from issuing with the first's):
 *       y(s) = t_&&(s) - scan_1 - W op_int_ns is fitted by least squares as
 *       diverge * m_f(s) + W branch_ns, where m_f(s) = (N/4)(1 - (1-s)^(4f))
 *       sector_ns + W (1 - (1-s)^32) op_int_ns is the model's cost of the
 *       second test under the branch, for f = fetch_sectors on a grid of
 *       1..8, keeping the best f; the & variant is recorded for comparison
 *       (UNTESTED ON A DEVICE since this change: the sweep's fit in
 *       tools/selplan_fit is what the defaults come from)
 *   compaction of the rows with c0 < t(.5) into 4-byte row ids
 *       write_sector_ns = (t - scan_1) / (kept * 4 / 32)
 *   ordered row ids of c0 < t(s), s = 0.05, 0.2, 0.5: c1 read through them
 *       gather_sector_ns = mean of (t_gather - t_ids) / ((N/4)(1 - (1-s)^4))
 *   empty kernel + 4-byte download, averaged: launch_ns
 * Derived values are clamped to what the model accepts (diverge in [1, 4],
 * costs >= 0), a gathered sector costs at least a streamed one, and a write
 * cost lost in noise (<= 0) is taken as a streamed sector. The raw times
 * follow as meas.* keys, which readers ignore. The file is read back with
 * rf_selcalib_read before the tool reports success. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "selplan.h"
#include "weaver_calibrate.h"

_Static_assert((int)WC_OP_COUNT == (int)RF_SELOP_COUNT_ && (int)WC_OP_INT == (int)RF_SELOP_INT &&
                   (int)WC_OP_DEC == (int)RF_SELOP_DEC && (int)WC_OP_FLOAT == (int)RF_SELOP_FLOAT &&
                   (int)WC_OP_ARITH == (int)RF_SELOP_ARITH && (int)WC_OP_DIV == (int)RF_SELOP_DIV &&
                   (int)WC_OP_STR == (int)RF_SELOP_STR,
               "the tool's op classes are rf_selop's");

#define REPS 64
#define NAND 10
static const double and_sel[NAND] = {0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
#define NGATHER 3
static const double gather_sel[NGATHER] = {0.05, 0.2, 0.5};
static const char *const op_names[RF_SELOP_COUNT_] = {"int", "dec", "float", "arith", "div", "str"};

static double miss(double s, int lanes) { return pow(1.0 - s, lanes); }

/* The model's cost of the second test of c0 < t(s) && c1 < t(.5) under
 * the branch, without diverge and branch_ns: its sectors (N/4 of them, scan
 * cost `col` in all) fetched f at a time, all of a fetch when one of its 4f
 * rows is alive, and its compare in every warp with a live lane. */
static double under_branch(double s, double f, double col, double W, double op)
{
    return col * (1 - pow(1 - s, 4 * f)) + W * (1 - miss(s, 32)) * op;
}

/* y[i] = t_&&(s_i) - scan_1 - W op_int (what && adds to one column's scan)
 * = diverge * under_branch(s_i, f) + W branch_ns, by least squares in
 * (diverge, branch_ns) for each f on a grid of 1..8 sectors, keeping the f
 * with the least squared error (the same model the planner uses, fitted the
 * way tools/selplan_fit fits it to timed plans). diverge >= 1 and
 * branch_ns >= 0: where the free solution breaks one, it is pinned there
 * and the other refitted. */
static void fit_branch(const double *y, double col, double W, double op, rf_selcalib *cal)
{
    double best_err = INFINITY;
    for (double f = 1; f <= 8.0001; f *= 1.02) {
        double m[NAND], mm = 0, my = 0;
        for (int i = 0; i < NAND; i++) {
            m[i] = under_branch(and_sel[i], f, col, W, op);
            mm += m[i] / NAND;
            my += y[i] / NAND;
        }
        double sxy = 0, sxx = 0;
        for (int i = 0; i < NAND; i++) {
            sxy += (m[i] - mm) * (y[i] - my);
            sxx += (m[i] - mm) * (m[i] - mm);
        }
        double d = sxx > 0 ? sxy / sxx : 1, b = (my - d * mm) / W;
        if (d > 4)
            d = 4, b = (my - d * mm) / W;
        if (d < 1)
            d = 1, b = (my - mm) / W;
        if (b < 0) { /* no branch cost: diverge alone, through the origin */
            double mxy = 0, mxx = 0;
            for (int i = 0; i < NAND; i++)
                mxy += m[i] * y[i], mxx += m[i] * m[i];
            b = 0;
            d = mxx > 0 ? mxy / mxx : 1;
            d = d < 1 ? 1 : d > 4 ? 4 : d;
        }
        double err = 0;
        for (int i = 0; i < NAND; i++)
            err += (d * m[i] + W * b - y[i]) * (d * m[i] + W * b - y[i]);
        if (err < best_err) {
            best_err = err;
            cal->fetch_sectors = f;
            cal->diverge = d;
            cal->branch_ns = b;
        }
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: rf_weaver_calibrate [--rows N] [--out FILE|DIR]\n");
    return RF_EXIT_USAGE;
}

/* The folder for the file when --out names none: $RF_CUDA_CACHE, else
 * ~/.cache/redfox (created). */
static char *default_dir(void)
{
    const char *env = getenv("RF_CUDA_CACHE");
    if (env && *env)
        return rf_strdup(env);
    const char *home = getenv("HOME");
    if (!home || !*home)
        return rf_strdup(".");
    char *base = rf_sprintf("%s/.cache", home), *dir = rf_sprintf("%s/.cache/redfox", home);
    mkdir(base, 0755);
    mkdir(dir, 0755);
    free(base);
    return dir;
}

int main(int argc, char **argv)
{
    size_t rows = (size_t)1 << 25;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || errno || v < ((size_t)1 << 20) || v > ((size_t)1 << 31))
                return fprintf(stderr, "rf_weaver_calibrate: --rows takes 2^20 .. 2^31\n"), RF_EXIT_USAGE;
            rows = (size_t)v;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else {
            return usage();
        }
    }
    if (wc_device_count() <= 0) {
        printf("skipped: no CUDA device\n");
        return 0;
    }

    rf_selcalib cal;
    rf_selcalib_defaults(&cal);
    wc_ctx *c = wc_open(rows, cal.device, sizeof cal.device);
    const char *name = cal.device;
    double N = (double)rows, W = N / 32.0, sectors = N / 4.0;
    printf("device %s, %zu rows per column\n", name, rows);

    double scan[RF_SELCALIB_MAXK + 1];
    for (int k = 1; k <= RF_SELCALIB_MAXK; k++)
        scan[k] = wc_scan_ns(c, k);
    cal.sector_ns = scan[1] / sectors;
    for (int k = 1; k <= RF_SELCALIB_MAXK; k++)
        cal.rk[k - 1] = k == 1 ? 1.0 : scan[k] / (k * scan[1]);

    double ops0[RF_SELOP_COUNT_], opsR[RF_SELOP_COUNT_];
    for (int o = 0; o < RF_SELOP_COUNT_; o++) {
        ops0[o] = wc_ops_ns(c, o, 0);
        opsR[o] = wc_ops_ns(c, o, REPS);
        double v = (opsR[o] - ops0[o]) / (REPS * W);
        cal.op_ns[o] = v > 0 ? v : 0;
    }

    /* && against &: fit fetch_sectors, diverge and branch_ns over the
     * selectivities (fit_branch). */
    double t_and[NAND], t_br[NAND], y[NAND];
    for (int i = 0; i < NAND; i++) {
        t_and[i] = wc_and_ns(c, and_sel[i], 0);
        t_br[i] = wc_and_ns(c, and_sel[i], 1);
        y[i] = t_br[i] - scan[1] - W * cal.op_ns[RF_SELOP_INT];
    }
    fit_branch(y, sectors * cal.sector_ns, W, cal.op_ns[RF_SELOP_INT], &cal);

    /* Row ids between kernels: their writing, and reads through them. */
    size_t kept = 0;
    double t_compact = wc_compact_ns(c, 0.5, &kept);
    double wsec = kept ? (t_compact - scan[1]) / (kept * 4.0 / 32.0) : 0;
    cal.write_sector_ns = wsec > 0 ? wsec : cal.sector_ns;
    double t_gather[NGATHER], t_ids[NGATHER], g = 0;
    size_t nid[NGATHER];
    for (int i = 0; i < NGATHER; i++) {
        double s = gather_sel[i];
        t_gather[i] = wc_gather_ns(c, s, 0, &nid[i]);
        t_ids[i] = wc_gather_ns(c, s, 1, &nid[i]);
        g += (t_gather[i] - t_ids[i]) / (sectors * (1 - miss(s, 4))) / NGATHER;
    }
    /* No cheaper than a streamed sector: the same DRAM sectors, fewer per request. */
    cal.gather_sector_ns = g > cal.sector_ns ? g : cal.sector_ns;
    cal.launch_ns = wc_launch_sync_ns(c, 200);
    cal.rid_bytes = 4;
    wc_close(c);

    char *dir = NULL, *path;
    struct stat sb;
    if (!out || (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode))) {
        dir = out ? rf_strdup(out) : default_dir();
        path = rf_selcalib_path(dir, name);
    } else {
        path = rf_strdup(out);
    }
    rf_status st;
    rf_status_init(&st);
    if (!rf_selcalib_write(path, &cal, &st)) {
        fprintf(stderr, "rf_weaver_calibrate: %s\n", st.message);
        return 1;
    }
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "rf_weaver_calibrate: cannot append to %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f, "# raw measurements (ns of kernel time), ignored by readers\nmeas.rows\t%zu\n", rows);
    for (int k = 1; k <= RF_SELCALIB_MAXK; k++)
        fprintf(f, "meas.scan_ns.k%d\t%.6g\n", k, scan[k]);
    for (int o = 0; o < RF_SELOP_COUNT_; o++)
        fprintf(f, "meas.ops_ns.%s.r0\t%.6g\nmeas.ops_ns.%s.r%d\t%.6g\n", op_names[o], ops0[o], op_names[o], REPS,
                opsR[o]);
    for (int i = 0; i < NAND; i++)
        fprintf(f, "meas.and_ns.s%.2f\t%.6g\nmeas.andand_ns.s%.2f\t%.6g\n", and_sel[i], t_and[i], and_sel[i], t_br[i]);
    fprintf(f, "meas.compact_ns.s0.50\t%.6g\n", t_compact);
    for (int i = 0; i < NGATHER; i++)
        fprintf(f, "meas.gather_ns.s%.2f\t%.6g\nmeas.ids_ns.s%.2f\t%.6g\n", gather_sel[i], t_gather[i], gather_sel[i],
                t_ids[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "rf_weaver_calibrate: cannot write %s\n", path);
        return 1;
    }

    /* What the planner will read: the file must parse and hold these numbers. */
    rf_selcalib back;
    if (!rf_selcalib_read(path, &back, &st)) {
        fprintf(stderr, "rf_weaver_calibrate: the file written does not read back: %s\n", st.message);
        return 1;
    }
    if (back.sector_ns != cal.sector_ns || back.diverge != cal.diverge || back.launch_ns != cal.launch_ns ||
        strcmp(back.device, cal.device) != 0) {
        fprintf(stderr, "rf_weaver_calibrate: %s reads back different values\n", path);
        return 1;
    }

    printf("sector_ns %.4g  gather_sector_ns %.4g  write_sector_ns %.4g\n", cal.sector_ns, cal.gather_sector_ns,
           cal.write_sector_ns);
    printf("r_k:");
    for (int k = 0; k < RF_SELCALIB_MAXK; k++)
        printf(" %.3f", cal.rk[k]);
    printf("\nop ns per warp:");
    for (int o = 0; o < RF_SELOP_COUNT_; o++)
        printf(" %s %.4g", op_names[o], cal.op_ns[o]);
    printf("\nbranch_ns %.4g  diverge %.3f  fetch_sectors %.2f  launch_ns %.0f\n", cal.branch_ns, cal.diverge,
           cal.fetch_sectors, cal.launch_ns);
    printf("sectors vs live lanes (second column under &&):\n"
           "  live   sectors/warp   measured ns/warp   model ns/warp   & ns/warp\n");
    for (int i = 0; i < NAND; i++)
        printf("  %.2f   %12.3f   %16.5f   %13.5f   %9.5f\n", and_sel[i],
               8 * (1 - miss(and_sel[i], (int)lround(4 * cal.fetch_sectors))), y[i] / W,
               cal.diverge * under_branch(and_sel[i], cal.fetch_sectors, sectors * cal.sector_ns, W,
                                          cal.op_ns[RF_SELOP_INT]) / W + cal.branch_ns,
               (t_and[i] - scan[1]) / W);
    printf("wrote %s\n", path);
    free(path);
    free(dir);
    return 0;
}
