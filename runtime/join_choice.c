/* --join=auto's run-time choice (RF_TERM_BRANCH_JOIN; the planner's side
 * is plan_build.c, auto_join). A cyclic rule body is planned twice, as a
 * multiway join (leapfrog triejoin) and as binary joins, and this decides
 * which runs, each time the block is reached, from the relations as they
 * are then (they are often computed: `uedge` of programs/triangles.lql,
 * or a delta in a loop).
 *
 * The statistic is the size J of the binary plan's first join, counted
 * without making it (the backend's join_size: sum over key values of the
 * rows holding it on each side; for a triangle query the number of 2-paths
 * sum_v indeg(v) x outdeg(v)). Against the rows N of its two inputs it
 * says how much a join that brings in a variable grows the bindings,
 * g = J / N: about 1 or below on road networks and meshes, a few on
 * uniform random graphs, tens and more on skewed graphs (social networks,
 * R-MAT). A body of v variables brings in v - 2 of them after the first
 * two, so the binary plan's largest intermediate is about N x g^(v - 2)
 * (a triangle: J itself; a 4-clique: J x g) and can exhaust memory. The
 * multiway join's work stays within the AGM bound whatever the degrees;
 * what it pays regardless is its inputs, one re-keyed sorted copy an atom,
 * about a x N / 2 rows for a atoms (each taken as large as the first two).
 * So the multiway join runs when N x g^(v - 2) > ratio x a x N / 2: for a
 * triangle (a = 3) when g > 1.5 x ratio, for a 4-clique (a = 6) when
 * g^2 > 3 x ratio.
 *
 * The ratio is the backend's (backend.h: RF_WCOJ_AUTO_RATIO_CPU/_GPU),
 * measured with bench/wcoj_bench.py (docs/performance.md):
 *  - GPU, 0.05 (triangles: g > 0.075; 4-cliques: g^2 > 0.15): with the
 *    multiway join's level kernels rebuilt (directories, balanced work
 *    items, match bitmaps; H200 rows of 2026-11-26, later session) the
 *    binary plan was slower on every row measured: triangles 1.06-1.23x
 *    on the shared graphs (usroads g = 0.6, delaunay_n16 1.0, CA-HepTh
 *    1.9, up to wiki-Vote 24.6), 3.0x and 4.0x on uniform graphs of 10^7
 *    and 10^8 edges (g = 3.3), out of memory on R-MAT; 4-cliques 1.1-4.0x
 *    (usroads g^2 = 0.36: 1.5x). The first rule (3, from the H100 rows
 *    before that rework, where binary won up to g = 3.3) would now pick
 *    the slower plan on those rows; binary is kept for the sparsest
 *    bodies only, where both plans take the same few milliseconds.
 *  - CPU, 0.15 (triangles: g > 0.225; 4-cliques: g^2 > 0.45): on the 2-core
 *    build machine (the variants taking turns, fastest of 3-7 runs) the
 *    binary plan was as fast as the multiway join on triangles of sparse
 *    uniform graphs up to g = 0.17 (1.20x, 1.02x, 0.99x at g = 0.05, 0.08,
 *    0.17) and slower from g = 0.33 (1.30x; 1.24x, 1.35x at 0.50, 0.67;
 *    1.4-1.7x on luxembourg_osm 0.48 and usroads 0.63; 2-4x on the social
 *    graphs): the CPU's binary joins re-sort every intermediate. On
 *    4-cliques of the sparsest graphs (g^2 = 0.36: uniform, 0.70x;
 *    luxembourg_osm 0.41: 0.95x) binary was faster, since the multiway
 *    join re-keys six inputs there, and slower from usroads (0.60: 1.07x)
 *    on.
 * RF_WCOJ_AUTO_RATIO (a number >= 0) overrides it: 0 always picks the
 * multiway join where the first join makes any row, a huge value the
 * binary plan. */
#include "runtime.h"
#include "rf_prims.h"

#include <math.h>
#include <stdlib.h>

double rf_wcoj_auto_ratio(const rf_backend *be)
{
    const char *env = getenv("RF_WCOJ_AUTO_RATIO");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v >= 0)
            return v;
    }
    return be->wcoj_auto_ratio > 0 ? be->wcoj_auto_ratio : RF_WCOJ_AUTO_RATIO_CPU;
}

/* A backend without join_size: both relations downloaded and counted on
 * the host. */
static bool count_on_host(rf_backend *be, const rf_hblock *hb, const rf_dvar *l, const rf_dvar *r, int arity_l,
                          int arity_r, uint64_t *rows, rf_status *st)
{
    rf_table tl, tr;
    rf_table_init(&tl, arity_l);
    rf_table_init(&tr, arity_r);
    bool ok = be->download(be, l, &tl, st) && be->download(be, r, &tr, st);
    if (ok)
        *rows = rf_prim_join_size(&tl, hb->lkeys, &tr, hb->rkeys, hb->nkeys);
    rf_table_free(&tl);
    rf_table_free(&tr);
    return ok;
}

bool rf_join_choose(rf_backend *be, const rf_hblock *hb, const rf_dvar *l, const rf_dvar *r, int arity_l,
                    int arity_r, rf_join_choice *out, rf_status *st)
{
    double t0 = rf_now();
    size_t nl = l ? be->var_rows(be, l) : 0, nr = r ? be->var_rows(be, r) : 0;
    out->inputs = nl + nr;
    out->ratio = rf_wcoj_auto_ratio(be);
    out->first_join = 0;
    if (nl > 0 && nr > 0) {
        bool ok = be->join_size ? be->join_size(be, l, r, hb->nkeys, hb->lkeys, hb->rkeys, &out->first_join, st)
                                : count_on_host(be, hb, l, r, arity_l, arity_r, &out->first_join, st);
        if (!ok)
            return false;
    }
    /* growth per variable brought in, compounded over the body's
     * variables after the first two (hir.h, RF_TERM_BRANCH_JOIN) */
    double n = (double)out->inputs, growth = n > 0 ? (double)out->first_join / n : 0;
    out->estimate = n * pow(growth, hb->nvars > 2 ? hb->nvars - 2 : 1);
    out->budget = (double)hb->natoms * n / 2;
    out->wcoj = out->estimate > out->ratio * out->budget;
    out->seconds = rf_now() - t0;
    return true;
}
