#!/usr/bin/env python3
"""Writes a chain graph (src<TAB>dst per line: 0->1, 1->2, ..., n-1->n) to
stdout or to the file named by -o: the high-diameter input of the
chain-reachability benchmark (programs/reach.lql; docs/performance.md,
"chain reachability, CPU"). Generated data is not committed: write it to a
temporary or git-ignored directory (.data/).

    python3 bench/chain_graph.py 100000 -o .data/chain100k.tsv
    ./redfox run programs/reach.lql --input e=.data/chain100k.tsv --count
    (100,001 nodes reachable from node 0)
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("edges", type=int, help="number of edges (the chain has edges + 1 nodes)")
    ap.add_argument("-o", "--output", help="file to write (default: stdout)")
    ap.add_argument("--shuffle", action="store_true",
                    help="write the edges in a random order (same graph)")
    args = ap.parse_args()
    lines = [f"{i}\t{i + 1}\n" for i in range(args.edges)]
    if args.shuffle:
        import random
        random.Random(14).shuffle(lines)
    out = open(args.output, "w") if args.output else sys.stdout
    out.writelines(lines)
    if args.output:
        out.close()


if __name__ == "__main__":
    main()
