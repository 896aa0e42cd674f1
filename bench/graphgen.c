/* Synthetic graphs for the join benchmarks (bench/wcoj_bench.py): an edge
 * list as TSV (one "src<TAB>dst" line an edge) on stdout or in a file.
 *
 *   rf_graphgen rmat SCALE EDGES [SEED] [-o FILE]
 *       R-MAT / Kronecker (Chakrabarti et al. 2004; the Graph500 parameters
 *       a=0.57 b=0.19 c=0.19 d=0.05): 2^SCALE vertices, EDGES edges drawn
 *       by recursive quadrant choice, so degrees are skewed (power law)
 *       with a few hubs: the case that makes binary join plans explode.
 *   rf_graphgen uniform VERTICES EDGES [SEED] [-o FILE]
 *       the thesis' uniform generator: each edge's endpoints uniform over
 *       the vertices (Erdos-Renyi G(n, m)).
 *
 * Self-loops and repeated edges are written as drawn (the programs drop
 * them). Deterministic for a seed (splitmix64), whatever the platform. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 bits */
static double next_unit(void) { return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

static int usage(void)
{
    fputs("usage: rf_graphgen rmat SCALE EDGES [SEED] [-o FILE]\n"
          "       rf_graphgen uniform VERTICES EDGES [SEED] [-o FILE]\n",
          stderr);
    return 64;
}

int main(int argc, char **argv)
{
    const char *out_path = NULL;
    char *pos[5];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else if (npos < 5)
            pos[npos++] = argv[i];
        else
            return usage();
    }
    if (npos < 3)
        return usage();
    int rmat = strcmp(pos[0], "rmat") == 0;
    if (!rmat && strcmp(pos[0], "uniform") != 0)
        return usage();
    uint64_t size = strtoull(pos[1], NULL, 10), edges = strtoull(pos[2], NULL, 10);
    rng_state = npos > 3 ? strtoull(pos[3], NULL, 10) : 1;
    if ((rmat && (size < 1 || size > 40)) || (!rmat && size < 1))
        return usage();
    FILE *out = out_path ? fopen(out_path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "rf_graphgen: cannot write %s: %s\n", out_path, strerror(errno));
        return 1;
    }
    static char buf[1 << 20];
    setvbuf(out, buf, _IOFBF, sizeof buf);
    const double a = 0.57, b = 0.19, c = 0.19;
    for (uint64_t e = 0; e < edges; e++) {
        uint64_t s = 0, d = 0;
        if (rmat) {
            for (uint64_t bit = 0; bit < size; bit++) {
                double r = next_unit();
                int right = 0, down = 0;   /* quadrant: a (0,0) b (0,1) c (1,0) d (1,1) */
                if (r < a) {
                } else if (r < a + b) {
                    right = 1;
                } else if (r < a + b + c) {
                    down = 1;
                } else {
                    right = down = 1;
                }
                s = s << 1 | (uint64_t)down;
                d = d << 1 | (uint64_t)right;
            }
        } else {
            s = next_u64() % size;
            d = next_u64() % size;
        }
        fprintf(out, "%llu\t%llu\n", (unsigned long long)s, (unsigned long long)d);
    }
    if (fclose(out) != 0) {
        fprintf(stderr, "rf_graphgen: write failed\n");
        return 1;
    }
    return 0;
}
