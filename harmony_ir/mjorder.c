/* A multiway join's variable orders (hir.h: rf_multijoin.alt_order,
 * rf_mj_last_level, rf_mj_reorder). The leapfrog's deepest level does most
 * of its work: each binding of the variables before it intersects the
 * lists of the last variable that the inputs hold for them, driving the
 * shortest. Which lists those are depends on the order. On a triangle
 * query over edges stored once with the smaller id first (programs/
 * triangles.lql's uedge), binding z last intersects the upper neighbours
 * of x and y, binding x last the lower neighbours of y and z; where hubs
 * have the low ids (R-MAT, most crawled graphs) the second tests 1.5x
 * fewer values (docs/performance.md, twenty-fourth session). Which order
 * wins is the data's, so the planner's order and its reverse are both
 * kept and the backend estimates each one's last level before running. */
#include "hir.h"

#include <string.h>

/* The variables of input i as a bit set. */
static unsigned input_set(const int *in_first, const int *in_vars, int i)
{
    unsigned s = 0;
    for (int j = in_first[i]; j < in_first[i + 1]; j++)
        s |= 1u << in_vars[j];
    return s;
}

/* The binary input over exactly {a, b} (its columns of a and b), or -1. */
static int binary_input(int nin, const int *in_first, const int *in_vars, int a, int b, int *col_a, int *col_b)
{
    for (int i = 0; i < nin; i++) {
        if (in_first[i + 1] - in_first[i] != 2 || input_set(in_first, in_vars, i) != ((1u << a) | (1u << b)))
            continue;
        *col_a = in_vars[in_first[i]] == a ? 0 : 1;
        *col_b = 1 - *col_a;
        return i;
    }
    return -1;
}

bool rf_mj_last_level(int nin, const int *in_first, const int *in_vars, int nvars, const int *order,
                      rf_mj_last *out)
{
    if (nvars < 3 || nvars > 32)
        return false;
#define ORD(k) (order ? order[(k)] : (k))
    int v = ORD(nvars - 1);
    for (int qk = nvars - 2; qk >= 1; qk--)
        for (int pk = qk - 1; pk >= 0; pk--) {
            int p = ORD(pk), q = ORD(qk), c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0;
            int pq = binary_input(nin, in_first, in_vars, p, q, &c1, &c2);
            int pv = binary_input(nin, in_first, in_vars, p, v, &c3, &c4);
            int qv = binary_input(nin, in_first, in_vars, q, v, &c5, &c6);
            if (pq < 0 || pv < 0 || qv < 0)
                continue;
            *out = (rf_mj_last){pq, c1, c2, pv, c3, qv, c5};
            return true;
        }
#undef ORD
    return false;
}

void rf_mj_reorder(int nin, const int *in_first, const int *in_vars, int nvars, const int *order, int *newnum,
                   int *col_perm, int *new_in_vars)
{
    for (int k = 0; k < nvars; k++)
        newnum[order[k]] = k;
    for (int i = 0; i < nin; i++) {
        int f = in_first[i], a = in_first[i + 1] - f;
        /* the input's columns by increasing new number (insertion sort:
         * a few columns) */
        for (int j = 0; j < a; j++) {
            int k = j;
            while (k > 0 && newnum[in_vars[f + col_perm[f + k - 1]]] > newnum[in_vars[f + j]]) {
                col_perm[f + k] = col_perm[f + k - 1];
                k--;
            }
            col_perm[f + k] = j;
        }
        for (int j = 0; j < a; j++)
            new_in_vars[f + j] = newnum[in_vars[f + col_perm[f + j]]];
    }
}

bool rf_mj_order_connected(int nin, const int *in_first, const int *in_vars, int nvars, const int *order)
{
    if (nvars > 32)
        return false;
    unsigned bound = 1u << order[0];
    for (int k = 1; k < nvars; k++) {
        bool linked = false;
        for (int i = 0; i < nin && !linked; i++) {
            unsigned s = input_set(in_first, in_vars, i);
            linked = (s >> order[k] & 1) && (s & bound);
        }
        if (!linked)
            return false;
        bound |= 1u << order[k];
    }
    return true;
}
