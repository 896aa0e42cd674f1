/* Stratification: the strongly connected components of the predicate
 * dependency graph (an edge from each rule's head to each predicate in its
 * body), found with Tarjan's algorithm. Tarjan completes a component only
 * after every component it depends on, so the order in which components
 * complete is already a valid evaluation order. */
#include "check.h"

#include <stdlib.h>
#include <string.h>

typedef struct dep_edge {
    int from, to;
    bool negative;          /* through negation or aggregation */
    bool aggregate;
    rf_loc loc;
} dep_edge;

typedef struct graph {
    int n;
    int *first;             /* [n+1]: edges of node u are first[u]..first[u+1] */
    dep_edge *edges;        /* sorted by `from` */
    int nedges;
    /* Tarjan state */
    int *index, *low, *comp, *stack;
    bool *on_stack;
    int next_index, sp, ncomps;
} graph;

static int edge_cmp(const void *a, const void *b)
{
    const dep_edge *x = a, *y = b;
    return x->from != y->from ? (x->from > y->from) - (x->from < y->from)
                              : (x->to > y->to) - (x->to < y->to);
}

static void build_graph(graph *g, const rf_program *p)
{
    int total = 0;
    for (int r = 0; r < p->nrules; r++)
        total += p->rules[r].nbody;
    g->n = p->npreds;
    g->edges = rf_calloc(total > 0 ? (size_t)total : 1, sizeof *g->edges);
    g->nedges = 0;
    for (int r = 0; r < p->nrules; r++) {
        const rf_rule *rule = &p->rules[r];
        for (int j = 0; j < rule->nbody; j++) {
            const rf_literal *l = &rule->body[j];
            if (l->kind != RF_LIT_ATOM && l->kind != RF_LIT_NEGATED)
                continue;
            dep_edge *e = &g->edges[g->nedges++];
            e->from = rule->head;
            e->to = l->pred;
            e->aggregate = rule->naggs > 0;
            e->negative = l->kind == RF_LIT_NEGATED || e->aggregate;
            e->loc = l->kind == RF_LIT_NEGATED ? l->loc : rule->loc;
        }
    }
    /* Stable order so that messages do not depend on qsort's whims. */
    qsort(g->edges, (size_t)g->nedges, sizeof *g->edges, edge_cmp);
    g->first = rf_calloc((size_t)g->n + 1, sizeof *g->first);
    for (int i = 0; i < g->nedges; i++)
        g->first[g->edges[i].from + 1]++;
    for (int u = 0; u < g->n; u++)
        g->first[u + 1] += g->first[u];
}

static void strongconnect(graph *g, int u)
{
    g->index[u] = g->low[u] = g->next_index++;
    g->stack[g->sp++] = u;
    g->on_stack[u] = true;
    for (int i = g->first[u]; i < g->first[u + 1]; i++) {
        int v = g->edges[i].to;
        if (g->index[v] < 0) {
            strongconnect(g, v);
            if (g->low[v] < g->low[u])
                g->low[u] = g->low[v];
        } else if (g->on_stack[v] && g->index[v] < g->low[u]) {
            g->low[u] = g->index[v];
        }
    }
    if (g->low[u] == g->index[u]) {
        int v;
        do {
            v = g->stack[--g->sp];
            g->on_stack[v] = false;
            g->comp[v] = g->ncomps;
        } while (v != u);
        g->ncomps++;
    }
}

/* Reports a negative edge inside a component with the cycle it closes:
 * from -> to -> ... -> from, the path back found by breadth-first search
 * inside the component. */
static void report_cycle(const graph *g, const rf_program *p, const dep_edge *e, rf_diag *diag)
{
    int *prev = rf_malloc(rf_mul_size((size_t)g->n, sizeof *prev));
    int *queue = rf_malloc(rf_mul_size((size_t)g->n, sizeof *queue));
    for (int i = 0; i < g->n; i++)
        prev[i] = -2;
    int head = 0, tail = 0;
    queue[tail++] = e->to;
    prev[e->to] = -1;
    while (head < tail && prev[e->from] == -2) {
        int u = queue[head++];
        for (int i = g->first[u]; i < g->first[u + 1]; i++) {
            int v = g->edges[i].to;
            if (prev[v] == -2 && g->comp[v] == g->comp[e->from]) {
                prev[v] = u;
                queue[tail++] = v;
            }
        }
    }
    /* Path to->...->from, written backwards from `from`. */
    int len = 0;
    for (int v = e->from; v != -1 && len < g->n; v = prev[v])
        queue[len++] = v;
    size_t cap = 64, used = 0;
    char *text = rf_malloc(cap);
    text[0] = '\0';
    for (int i = -1; i < len; i++) {
        const char *name = p->preds[i < 0 ? e->from : queue[len - 1 - i]].name;
        size_t need = used + strlen(name) + 5;
        if (need > cap) {
            cap = 2 * need;
            text = rf_realloc(text, cap);
        }
        used += (size_t)snprintf(text + used, cap - used, "%s%s", i < 0 ? "" : " -> ", name);
    }
    rf_diag_error(diag, e->loc, "%s through recursion: %s", e->aggregate ? "aggregation" : "negation",
                  text);
    free(text);
    free(prev);
    free(queue);
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

bool rf_stratify(rf_program *p, rf_diag *diag)
{
    graph g;
    memset(&g, 0, sizeof g);
    build_graph(&g, p);
    size_t n = p->npreds > 0 ? (size_t)p->npreds : 1;
    g.index = rf_malloc(n * sizeof(int));
    g.low = rf_malloc(n * sizeof(int));
    g.comp = rf_malloc(n * sizeof(int));
    g.stack = rf_malloc(n * sizeof(int));
    g.on_stack = rf_calloc(n, sizeof(bool));
    for (int u = 0; u < p->npreds; u++)
        g.index[u] = -1;
    for (int u = 0; u < p->npreds; u++)
        if (g.index[u] < 0)
            strongconnect(&g, u);

    bool ok = true;
    for (int i = 0; i < g.nedges; i++) {
        const dep_edge *e = &g.edges[i];
        if (e->negative && g.comp[e->from] == g.comp[e->to]) {
            report_cycle(&g, p, e, diag);
            ok = false;
        }
    }
    if (ok) {
        p->nstrata = g.ncomps;
        p->strata = rf_calloc(g.ncomps > 0 ? (size_t)g.ncomps : 1, sizeof *p->strata);
        for (int u = 0; u < p->npreds; u++) {
            rf_stratum *s = &p->strata[g.comp[u]];
            s->preds = rf_realloc(s->preds, ((size_t)s->npreds + 1) * sizeof(int));
            s->preds[s->npreds++] = u;
        }
        for (int r = 0; r < p->nrules; r++) {
            rf_stratum *s = &p->strata[g.comp[p->rules[r].head]];
            s->rules = rf_realloc(s->rules, ((size_t)s->nrules + 1) * sizeof(int));
            s->rules[s->nrules++] = r;
        }
        for (int i = 0; i < g.nedges; i++)
            if (!g.edges[i].negative && g.comp[g.edges[i].from] == g.comp[g.edges[i].to])
                p->strata[g.comp[g.edges[i].from]].recursive = true;
        for (int i = 0; i < p->nstrata; i++)
            qsort(p->strata[i].preds, (size_t)p->strata[i].npreds, sizeof(int), int_cmp);
    }
    free(g.first);
    free(g.edges);
    free(g.index);
    free(g.low);
    free(g.comp);
    free(g.stack);
    free(g.on_stack);
    return ok;
}
