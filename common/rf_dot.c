/* See rf_dot.h. */
#include "rf_dot.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rf_utf8_length(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0)))
        return 0;
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90)))
        return 0;
    return n;
}

void rf_dot_html(FILE *out, const char *s, size_t max_chars)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (size_t chars = 0; *p; chars++) {
        if (max_chars && chars == max_chars) {
            fputs("...", out);
            return;
        }
        int n = rf_utf8_length(p);
        if (n == 0) {
            fputc('?', out);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, (size_t)n, out);
            p += n;
            continue;
        }
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*p < 0x20 || *p == 0x7F ? ' ' : *p, out); break;
        }
        p++;
    }
}

typedef struct loop_range {
    int head, tail;
} loop_range;

static int cmp_loops(const void *a, const void *b)
{
    const loop_range *x = a, *y = b;
    if (x->head != y->head)
        return x->head < y->head ? -1 : 1;
    return x->tail > y->tail ? -1 : x->tail < y->tail;   /* outer loops first */
}

static bool is_back_edge(int from, int to) { return to >= 0 && to <= from; }

/* Writes blocks [lo, hi] of the CFG, opening a cluster for each loop that
 * starts inside the range (loops[*next..] are sorted, outer first). */
static void write_range(FILE *out, const rf_dot_block *blocks, int lo, int hi, const loop_range *loops,
                        int nloops, int *next, int depth, void (*write_node)(FILE *, int, void *), void *ctx)
{
    for (int b = lo; b <= hi; b++) {
        while (*next < nloops && loops[*next].head < b)
            (*next)++;   /* overlaps an enclosing range without nesting: not drawn */
        if (*next < nloops && loops[*next].head == b && loops[*next].tail <= hi) {
            loop_range l = loops[(*next)++];
            fprintf(out, "%*ssubgraph cluster_loop_b%d {\n", 2 * depth, "", l.head);
            fprintf(out, "%*s  label=<<B>fixpoint loop ", 2 * depth, "");
            rf_dot_html(out, blocks[l.head].label, 60);
            fprintf(out, "</B>>; style=\"rounded,dashed\"; color=\"#c0392b\"; fontcolor=\"#c0392b\";\n");
            write_range(out, blocks, l.head, l.tail, loops, nloops, next, depth + 1, write_node, ctx);
            fprintf(out, "%*s}\n", 2 * depth, "");
            b = l.tail;
            continue;
        }
        fprintf(out, "%*s", 2 * depth, "");
        write_node(out, b, ctx);
    }
}

void rf_dot_write_cfg(FILE *out, const char *name, int nblocks, const rf_dot_block *blocks,
                      void (*write_node)(FILE *out, int b, void *ctx), void *ctx)
{
    loop_range *loops = rf_calloc((size_t)nblocks * 2 + 1, sizeof *loops);
    int nloops = 0;
    for (int b = 0; b < nblocks; b++)
        for (int i = 0; i < 2; i++)
            if (is_back_edge(b, blocks[b].next[i]))
                loops[nloops++] = (loop_range){blocks[b].next[i], b};
    qsort(loops, (size_t)nloops, sizeof *loops, cmp_loops);
    fprintf(out, "digraph \"%s\" {\n", name);
    fputs("  graph [fontname=\"Helvetica\", rankdir=TB, nodesep=0.4, ranksep=0.5, pad=0.6];\n"
          "  node [shape=plain, fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9];\n",
          out);
    int next = 0;
    write_range(out, blocks, 0, nblocks - 1, loops, nloops, &next, 1, write_node, ctx);
    for (int b = 0; b < nblocks; b++) {
        const rf_dot_block *blk = &blocks[b];
        for (int i = 0; i < 2; i++) {
            int to = blk->next[i];
            if (to < 0 || to >= nblocks)
                continue;
            fprintf(out, "  b%d -> b%d [", b, to);
            if (blk->cond && i == 1 && is_back_edge(b, to)) {
                /* (the exit edge names the condition; a long label on a
                 * loop edge gets clipped by Graphviz) */
                fputs("label=<next iteration>, ", out);
            } else if (blk->cond) {
                fputs("label=<", out);
                if (i == 1)
                    fputs("not ", out);
                rf_dot_html(out, blk->cond, 60);
                fputs(">, ", out);
            }
            if (is_back_edge(b, to))
                fputs("color=\"#c0392b\", fontcolor=\"#c0392b\", style=\"bold,dashed\", penwidth=2", out);
            else
                fputs(blk->cond ? "style=solid" : "style=solid, color=\"#555555\"", out);
            fputs("];\n", out);
        }
    }
    fputs("}\n", out);
    free(loops);
}

rf_rowest rf_rowest_exact(double rows) { return (rf_rowest){RF_ROWS_EXACT, false, rows}; }

/* The first 64 KiB give the line length; a smaller file is counted. */
#define SAMPLE_BYTES (64 * 1024)

rf_rowest rf_rowest_input(size_t nfacts, const char *path)
{
    if (!path && nfacts == 0)   /* its rows can only come from --input */
        return (rf_rowest){RF_ROWS_UNKNOWN, false, 0};
    if (!path)   /* the load drops duplicate facts */
        return rf_rowest_at_most(rf_rowest_exact((double)nfacts));
    struct stat sb;
    FILE *f = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? fopen(path, "rb") : NULL;
    if (!f)
        return (rf_rowest){RF_ROWS_UNKNOWN, false, 0};
    char *sample = rf_malloc(SAMPLE_BYTES);
    size_t got = fread(sample, 1, SAMPLE_BYTES, f);
    fclose(f);
    size_t lines = 0;
    for (size_t i = 0; i < got; i++)
        lines += sample[i] == '\n';
    if (got > 0 && sample[got - 1] != '\n' && (off_t)got == sb.st_size)
        lines++;   /* a last line without its newline */
    free(sample);
    rf_rowest e = {RF_ROWS_AT_MOST, false, (double)nfacts + (double)lines};
    if ((off_t)got < sb.st_size && lines > 0) {
        e.approx = true;
        e.rows = (double)nfacts + round((double)lines * ((double)sb.st_size / (double)got));
    }
    return e;
}

rf_rowest rf_rowest_at_most(rf_rowest a)
{
    if (a.kind == RF_ROWS_EXACT)
        a.kind = RF_ROWS_AT_MOST;
    return a;
}

rf_rowest rf_rowest_sum(rf_rowest a, rf_rowest b)
{
    if (a.kind == RF_ROWS_UNKNOWN || b.kind == RF_ROWS_UNKNOWN)
        return (rf_rowest){RF_ROWS_UNKNOWN, false, 0};
    return (rf_rowest){RF_ROWS_AT_MOST, a.approx || b.approx, a.rows + b.rows};
}

rf_rowest rf_rowest_product(rf_rowest a, rf_rowest b)
{
    if (a.kind == RF_ROWS_UNKNOWN || b.kind == RF_ROWS_UNKNOWN)
        return (rf_rowest){RF_ROWS_UNKNOWN, false, 0};
    rf_rowest_kind k = a.kind == RF_ROWS_EXACT && b.kind == RF_ROWS_EXACT ? RF_ROWS_EXACT : RF_ROWS_AT_MOST;
    return (rf_rowest){k, a.approx || b.approx, a.rows * b.rows};
}

void rf_rowest_format(rf_rowest e, char *buf, size_t cap)
{
    if (e.kind == RF_ROWS_UNKNOWN) {
        snprintf(buf, cap, "rows ?");
        return;
    }
    char num[32];
    double r = e.rows;
    if (r < 10000)
        snprintf(num, sizeof num, "%.0f", r);
    else if (r < 1e6)
        snprintf(num, sizeof num, "%.1fK", r / 1e3);
    else if (r < 1e9)
        snprintf(num, sizeof num, "%.1fM", r / 1e6);
    else
        snprintf(num, sizeof num, "%.1fG", r / 1e9);
    snprintf(buf, cap, "rows %s%s%s", e.kind == RF_ROWS_AT_MOST ? "<= " : "", e.approx ? "~" : "", num);
}
