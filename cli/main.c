/* The redfox command line (docs/design.md, "Command line"):
 *   redfox run PROG.dl [-F FACT_DIR] [-D OUT_DIR|-] [-j N] [...]   (Soufflé dialect, docs/souffle.md)
 *   redfox run PROG.lql|PROG.rfx [--input PRED=FILE]... [--output DIR]
 *              [--print PRED]... [--count] [--stats] [--backend=auto|cpu|gpu] [--threads N]
 *              [--max-iterations N] [--device-memory SIZE] [--progress] [--profile TRACE.json] [--no-fuse]
 *              [--join=auto|binary|wcoj]
 *   redfox explain --plan PROG.lql | --ir PROG.lql|PROG.rfx [--no-fuse] [--dot] [-o FILE]
 *                  | --cuda PROG.lql|PROG.rfx | --select-plans PROG.lql|PROG.rfx
 *   redfox compile PROG.lql -o PROG.rfx [--no-fuse]
 *   redfox check PROG.lql|PROG.rfx
 * A program is compiled (.rfx) when its first bytes are the .rfx magic or
 * its name ends in .rfx; anything else is source text.
 * Exit status: 0 ok, 1 compile errors, 2 run-time error, 3 out of memory,
 * 64 usage, 70 internal error (the compiler produced an invalid program). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <limits.h>
#include <malloc.h>
#endif

#include "../frontend/frontend.h"
#include "../harmony_ir/hir.h"
#include "../pipeline/pipeline.h"
#include "../primitives/rf_prims.h"
#include "../queryplan/plan.h"
#include "../common/rf_outfile.h"
#include "../runtime/runtime.h"
#include "../runtime/backend_choice.h"
#include "../runtime/dist_backend.h"
#include "../weaver/weaver.h"
#include "../weaver/selplan.h"

#define RF_VERSION "0.1"
#define EXIT_INTERNAL RF_PIPELINE_INTERNAL_ERROR

static const char usage_text[] =
    "usage: redfox run PROG.lql|PROG.rfx [--input PRED=FILE]... [--output DIR]\n"
    "       redfox run PROG.dl [-F FACT_DIR] [-D OUTPUT_DIR|-] [-j N] [run options]\n"
    "                  [--print PRED]... [--count] [--stats] [--backend=auto|cpu|gpu] [--threads N]\n"
    "                  [--max-iterations N] [--device-memory SIZE] [--progress] [--profile TRACE.json] [--no-fuse]\n"
    "                  [--join=auto|binary|wcoj] [--distribute] [--gpus N] [--output-per-rank]\n"
    "       redfox explain --plan PROG.lql | --ir PROG.lql|PROG.rfx [--no-fuse] [--join=J] [--dot] [-o FILE]\n"
    "       redfox explain --cuda PROG.lql|PROG.rfx | --select-plans PROG.lql|PROG.rfx\n"
    "       redfox compile PROG.lql -o PROG.rfx [--no-fuse] [--join=J]\n"
    "       redfox check PROG.lql|PROG.rfx\n"
    "       redfox --help | --version\n";

static const char help_text[] =
    "\n"
    "commands:\n"
    "  run       compile a .lql program (or load a compiled .rfx) and run it\n"
    "  explain   print the query plan (--plan, needs source), the Harmony kernel\n"
    "            IR (--ir, source or .rfx) or the CUDA generated for each fused\n"
    "            kernel (--cuda; needs no GPU), or every select plan each filter\n"
    "            of several conjuncts allows (--select-plans: for RF_WEAVE_SELPLAN);\n"
    "            --dot draws --plan or --ir as Graphviz (dot -Tsvg), -o FILE writes\n"
    "            --plan or --ir to FILE (whole or not at all)\n"
    "  compile   write the kernel IR as a binary .rfx program (input files named\n"
    "            by @input are stored relative to the .rfx's folder when inside it)\n"
    "  check     parse and type-check a source program, or validate a .rfx\n"
    "\n"
    "Soufflé programs (.dl; docs/souffle.md), with Soufflé's options:\n"
    "  -F DIR, --fact-dir=DIR     read .input files (default NAME.facts) from DIR (default .)\n"
    "  -D DIR, --output-dir=DIR   write .output files (default NAME.csv) into DIR (default .),\n"
    "                             all or none; -D - prints them to stdout as Soufflé does\n"
    "  -j N, --jobs=N             host worker threads (as --threads; auto: one per core)\n"
    "\n"
    "run options:\n"
    "  --input PRED=FILE   read PRED's facts from FILE (TSV, or CSV if it ends in .csv);\n"
    "                      replaces the program's @input file; once per predicate\n"
    "  --output DIR        write each output predicate to DIR/PRED.tsv (all or none)\n"
    "  --print PRED        output PRED too; repeatable. A program without @output\n"
    "                      outputs every predicate defined by rules; --print replaces\n"
    "                      that default with the named predicates\n"
    "  --count             print each output's tuple count and a hash of its rows, not\n"
    "                      the rows (the answers are still computed and brought to host\n"
    "                      memory; equal hashes: equal output files)\n"
    "  --stats             per-kernel times, rows, bytes, loop iterations, peak memory\n"
    "  --backend=B         auto (default: the CPU for inputs under RF_AUTO_CPU_ROWS rows,\n"
    "                      25000 by default, else the GPU if present, with kernels of a\n"
    "                      few rows placed on the host; the GPU starts while the run\n"
    "                      begins on the host, and is not started at all for runs the\n"
    "                      host ends within RF_DEVICE_START_MS, 50), cpu, or gpu (every\n"
    "                      kernel on the device)\n"
    "  --threads N         host worker threads: the CPU backend's kernels, and reading\n"
    "                      input files with either backend (default: one per core)\n"
    "  --max-iterations N  fail (exit 2) when a recursive loop runs more than N\n"
    "                      iterations without reaching its fixpoint\n"
    "  --device-memory SIZE keep the backend's relations under SIZE (bytes; K, M, G, T)\n"
    "                      between kernels: the least recently used wait in host\n"
    "                      memory until a kernel reads them again, and a kernel out\n"
    "                      of memory runs again with the others spilled, then in\n"
    "                      key-range parts (also when its own rows exceed SIZE)\n"
    "  --progress          print loop progress (a line a second after the first\n"
    "                      second) even when stderr is not a terminal\n"
    "  --profile FILE      write a Chrome/Perfetto trace of the run to FILE (JSON;\n"
    "                      open it in ui.perfetto.dev or chrome://tracing): a slice\n"
    "                      per kernel run and per loop iteration, with rows and bytes\n"
    "  --no-fuse           run every kernel on its own (Kernel Weaver off; also for\n"
    "                      explain and compile, and for a .rfx compiled with fusion)\n"
    "  --join=J            how rule bodies of several atoms are joined (source\n"
    "                      programs; also for explain and compile): auto (default:\n"
    "                      cyclic bodies such as triangles and cliques get both a\n"
    "                      worst-case-optimal multiway join and binary joins, one\n"
    "                      chosen at run time from the inputs' sizes, --stats says\n"
    "                      which; RF_WCOJ_AUTO_RATIO tunes it), binary (pairwise\n"
    "                      joins only) or wcoj (a multiway join wherever it can)\n"
    "  --distribute        run over the ranks of MPI (the default under mpirun -np N:\n"
    "                      RF_DISTRIBUTE=0 turns that off); rank 0 writes the\n"
    "                      outputs. The CPU backend in each rank (docs/distributed.md)\n"
    "  --gpus N            run as N processes, one per GPU (devices 0..N-1), the GPU\n"
    "                      backend in each, exchanging through NCCL; rank 0 writes\n"
    "                      the outputs\n"
    "  --output-per-rank   (distributed, with --output DIR) each rank writes its own\n"
    "                      rows of each output to DIR/PRED.part-K-of-N.tsv, none\n"
    "                      gathered to rank 0: the parts are disjoint, each sorted,\n"
    "                      their union the output; every part or none is written\n"
    "\n"
    "Without --output, outputs are printed sorted to stdout. Outputs are the\n"
    "@output predicates plus --print ones; with neither, every predicate defined\n"
    "by rules. Exit status: 0 ok, 1 compile error, 2 run-time error, 3 out of\n"
    "memory, 64 usage. The language: docs/language.md.\n";

static int usage(const char *fmt, const char *arg)
{
    if (fmt) {
        fputs("redfox: ", stderr);
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    fputs(usage_text, stderr);
    return RF_EXIT_USAGE;
}

/* Run-time errors that already carry a location (FILE:LINE: error: ...)
 * are printed as they are, like compiler diagnostics; usage errors found
 * late (an --input naming no predicate) get the usage too. */
static int report(const rf_status *st)
{
    if (st->code == RF_EXIT_USAGE)
        return usage("%s", st->message);
    if (strstr(st->message, ": error: "))
        fprintf(stderr, "%s\n", st->message);
    else
        fprintf(stderr, "redfox: error: %s\n", st->message);
    return st->code ? st->code : RF_EXIT_RUNTIME_ERROR;
}

/* Matches `--name VALUE` or `--name=VALUE`; advances *i past the value. */
static bool opt_value(int argc, char **argv, int *i, const char *name, const char **val, int *err)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return false;
    if (a[n] == '=') {
        *val = a + n + 1;
        return true;
    }
    if (a[n] != '\0')
        return false;
    if (*i + 1 >= argc) {
        *err = usage("option %s needs a value", name);
        return true;
    }
    *val = argv[++*i];
    return true;
}

/* A compiled program is recognised by content: its first bytes are the
 * magic (a file of 4 to 7 bytes counts when they begin it, so that a
 * truncated .rfx is reported as one), or by a .rfx name (so that an empty
 * or damaged one gets the loader's one clear message, not a flood of
 * syntax errors). */
static bool is_rfx(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && strcmp(path + n - 4, ".rfx") == 0)
        return true;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char magic[sizeof RF_HIR_MAGIC];
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got >= 4 && memcmp(magic, RF_HIR_MAGIC, got) == 0;
}

/* Loads a compiled program; NULL with the error printed. */
static rf_hprogram *load_compiled(const char *path, int *rc)
{
    rf_status st;
    rf_status_init(&st);
    rf_hprogram *hp = rf_hir_load(path, &st);
    if (!hp)
        *rc = report(&st);
    return hp;
}

/* Matches Soufflé's short options `-F DIR` and `-FDIR`; advances *i past
 * the value. */
static bool short_opt(int argc, char **argv, int *i, const char *name, const char **val, int *err)
{
    const char *a = argv[*i];
    if (strncmp(a, name, 2) != 0)
        return false;
    if (a[2] != '\0') {
        *val = a + 2;
        return true;
    }
    if (*i + 1 >= argc) {
        *err = usage("option %s needs a value", name);
        return true;
    }
    *val = argv[++*i];
    return true;
}

static rf_program *compile_with(const char *path, const char *fact_dir)
{
    rf_diag diag;
    rf_diag_init(&diag, stderr);
    rf_compile_options co = {.fact_dir = fact_dir};
    rf_program *prog = rf_compile_file_opts(path, &co, &diag);
    if (prog && diag.errors > 0) {
        rf_program_free(prog);
        prog = NULL;
    }
    return prog;
}

static rf_program *compile(const char *path) { return compile_with(path, NULL); }

static void default_outputs(rf_program *prog) { rf_pipeline_default_outputs(prog); }

/* Kernel Weaver on (the default) or off (--no-fuse). */
static bool fuse = true;

/* How bodies of several atoms are joined (--join=binary|wcoj|auto). */
static rf_join_mode join_mode = RF_JOIN_AUTO;

/* Takes --join's value; a usage error for anything else. */
static int set_join(const char *v)
{
    if (!v || !rf_join_mode_parse(v, &join_mode))
        return usage("--join expects binary, wcoj or auto, not '%s'", v ? v : "");
    return 0;
}

/* Fuses (or, with --no-fuse, unfuses a compiled program's groups) and
 * verifies; false with an internal error printed. */
static bool weave(rf_hprogram *hp)
{
    rf_status st;
    rf_status_init(&st);
    if (!rf_pipeline_weave(hp, fuse, &st)) {
        fprintf(stderr, "redfox: internal error: %s\n", st.message);
        return false;
    }
    return true;
}

/* Program -> verified Harmony IR (pipeline/pipeline.h); NULL with an
 * internal error printed. */
static rf_hprogram *lower(const rf_program *prog)
{
    rf_status st;
    rf_status_init(&st);
    rf_hprogram *hp = rf_pipeline_lower(prog, fuse, join_mode, &st);
    if (!hp)
        fprintf(stderr, "redfox: internal error: %s\n", st.message);
    return hp;
}

/* Whether this machine has an NVIDIA device node: a check of a file, where
 * asking the driver (cuInit) takes tens of milliseconds even to say no. */
static bool nvidia_device_node(void)
{
    return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0;
}

/* When an arriving device is started (rf_backend_hybrid_new_arriving):
 * at once for inputs of RF_HOST_WAIT_ROWS rows and more (their first
 * kernels will wait for it anyway, and it starts while they are parsed),
 * else once the run has gone on RF_DEVICE_START_MS milliseconds (default
 * 50): runs the host's cores finish sooner never start it. */
static double device_start_after(const rf_hprogram *hp, int ninputs, const rf_input_override *inputs)
{
    const char *ms = getenv("RF_DEVICE_START_MS");
    char *end = NULL;
    double after = ms && *ms ? strtod(ms, &end) / 1000 : 0.050;
    if (ms && *ms && (*end || after < 0))
        after = 0.050;
    const char *w = getenv("RF_HOST_WAIT_ROWS");
    size_t wait = w && *w ? (size_t)strtoull(w, NULL, 10) : RF_HOST_WAIT_ROWS_DEFAULT;
    if (after > 0 && rf_input_rows_upto(hp, ninputs, inputs, wait) >= wait)
        after = 0;
    return after;
}

/* RF_TEST_HYBRID_DEVICE=cpu-arriving (tests): a CPU backend stands for a
 * device that arrives RF_TEST_ARRIVE_MS milliseconds into the run. */
static int g_test_arrival_threads;
static rf_backend *start_test_device(rf_status *st)
{
    (void)st;
    const char *ms = getenv("RF_TEST_ARRIVE_MS");
    long wait = ms ? strtol(ms, NULL, 10) : 0;
    if (wait > 0) {
        struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return rf_backend_cpu_new(g_test_arrival_threads);
}

/* "8G", "256M", "1048576": bytes, K/M/G/T binary multiples; > 0. */
static bool parse_size(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    if (!*text || text[0] == '-')
        return false;
    unsigned long long n = strtoull(text, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    else if (*end == 'T' || *end == 't')
        shift = 40;
    if (shift)
        end++;
    if (errno || end == text || *end || n == 0 || n > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)n << shift;
    return true;
}

static int run_program(int argc, char **argv, rf_comm *comm)
{
    const char *prog_path = NULL, *output_dir = NULL, *backend = "auto", *threads_s = NULL;
    const char *max_iter_s = NULL, *device_memory_s = NULL, *profile_path = NULL, *fact_dir = NULL, *souffle_out_dir = NULL;
    RF_VEC(rf_input_override) inputs = {0};
    RF_VEC(rf_output_sink) sinks = {0};
    RF_VEC(const char *) prints = {0};
    bool stats = false, count_only = false, progress = false, per_rank = false;
    int err = 0, rc = RF_EXIT_OK;
    for (int i = 2; i < argc && !err; i++) {
        const char *v = NULL;
        if (opt_value(argc, argv, &i, "--input", &v, &err)) {
            if (err)
                break;
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1]) {
                err = usage("--input expects PRED=FILE, not '%s'", v);
                break;
            }
            rf_input_override o = {rf_strndup(v, (size_t)(eq - v)), eq + 1};
            RF_PUSH(inputs, o);
            for (size_t k = 0; k + 1 < inputs.len; k++)
                if (strcmp(inputs.items[k].pred, o.pred) == 0) {
                    err = usage("--input: '%s' is given more than once", o.pred);
                    break;
                }
        } else if (opt_value(argc, argv, &i, "--output", &v, &err)) {
            output_dir = v;
        } else if (opt_value(argc, argv, &i, "--print", &v, &err)) {
            if (v)
                RF_PUSH(prints, v);
        } else if (opt_value(argc, argv, &i, "--backend", &v, &err)) {
            backend = v;
        } else if (opt_value(argc, argv, &i, "--join", &v, &err)) {
            if (!err)
                err = set_join(v);
        } else if (opt_value(argc, argv, &i, "--threads", &v, &err)) {
            threads_s = v;
        } else if (opt_value(argc, argv, &i, "--max-iterations", &v, &err)) {
            max_iter_s = v;
        } else if (opt_value(argc, argv, &i, "--device-memory", &v, &err)) {
            device_memory_s = v;
        } else if (opt_value(argc, argv, &i, "--profile", &v, &err)) {
            profile_path = v;
        } else if (opt_value(argc, argv, &i, "--fact-dir", &v, &err) || short_opt(argc, argv, &i, "-F", &v, &err)) {
            fact_dir = v;
        } else if (opt_value(argc, argv, &i, "--output-dir", &v, &err) || short_opt(argc, argv, &i, "-D", &v, &err)) {
            souffle_out_dir = v;
        } else if (opt_value(argc, argv, &i, "--jobs", &v, &err) || short_opt(argc, argv, &i, "-j", &v, &err)) {
            threads_s = v && strcmp(v, "auto") == 0 ? NULL : v;
        } else if (strcmp(argv[i], "--progress") == 0) {
            progress = true;
        } else if (strcmp(argv[i], "--stats") == 0) {
            stats = true;
        } else if (strcmp(argv[i], "--count") == 0) {
            count_only = true;
        } else if (strcmp(argv[i], "--no-fuse") == 0) {
            fuse = false;
        } else if (strcmp(argv[i], "--output-per-rank") == 0) {
            per_rank = true;
        } else if (strcmp(argv[i], "--distribute") == 0) {
            /* (cmd_run looked for it) */
        } else if (argv[i][0] == '-' && argv[i][1]) {
            err = usage("unknown option '%s'", argv[i]);
        } else if (!prog_path) {
            prog_path = argv[i];
        } else {
            err = usage("unexpected argument '%s'", argv[i]);
        }
    }
    int threads = 0;
    if (!err && !prog_path)
        err = usage("run: no program given%s", "");
    bool souffle = !err && rf_is_souffle_path(prog_path);
    if (!err && !souffle && (fact_dir || souffle_out_dir))
        err = usage("-F/--fact-dir and -D/--output-dir are for Soufflé programs (.dl); '%s' is not one "
                    "(use --input and --output)", prog_path);
    if (!err && souffle && souffle_out_dir && output_dir)
        err = usage("give -D or --output, not both (%s)", "they name the same folder");
    if (!err && souffle && !souffle_out_dir)
        souffle_out_dir = output_dir ? output_dir : count_only ? NULL : ".";
    if (!err && souffle)
        output_dir = !count_only && souffle_out_dir && strcmp(souffle_out_dir, "-") != 0 ? souffle_out_dir : NULL;
    if (!err && count_only && output_dir)
        err = usage("--count prints counts and hashes to stdout; it does not go with --output %s", output_dir);
    if (!err && per_rank && (souffle || !output_dir))
        err = usage("--output-per-rank writes each rank's rows to DIR/PRED.part-K-of-N.tsv: it needs --output DIR%s",
                    souffle ? " and a .lql program" : "");
    if (!err && per_rank && !comm)
        err = usage("--output-per-rank is for distributed runs (mpirun -np N, --gpus N or --distribute; %s)",
                    "docs/distributed.md");
    if (!err && strcmp(backend, "auto") && strcmp(backend, "cpu") && strcmp(backend, "gpu"))
        err = usage("unknown backend '%s' (auto, cpu or gpu)", backend);
    if (!err && threads_s) {
        char *end;
        long t = strtol(threads_s, &end, 10);
        if (*end || t < 1 || t > 1024)
            err = usage("--threads expects a number from 1 to 1024, not '%s'", threads_s);
        threads = (int)t;
    }
    /* A distributed run (docs/distributed.md): the CPU backend in every
     * rank under MPI, the GPU backend under --gpus (NCCL); what would make
     * ranks take different paths is refused. */
    bool comm_gpus = comm && strncmp(comm->name, "nccl", 4) == 0;
    if (!err && comm && !comm_gpus && strcmp(backend, "gpu") == 0)
        err = usage("--backend=gpu: distributed runs over MPI use the CPU backend for now; "
                    "redfox run --gpus N runs one process per GPU (%s)", "docs/distributed.md");
    if (!err && comm && profile_path)
        err = usage("--profile is not supported in distributed runs yet (%s)", "docs/distributed.md");
    /* (A progress line counts rows, a collective call, when a second has
     * passed on the rank's own clock: ranks would disagree.) */
    if (!err && comm && progress)
        err = usage("--progress is not supported in distributed runs yet (%s)", "docs/distributed.md");
    if (!err && comm) {
        backend = comm_gpus && strcmp(backend, "cpu") != 0 ? "gpu" : "cpu";
        if (!threads) {   /* the host's cores shared among the ranks on it */
            const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
            long ranks_here = local ? strtol(local, NULL, 10) : comm->size;
            long cores = sysconf(_SC_NPROCESSORS_ONLN);   /* (rf_prims_threads is 1 until set) */
            threads = ranks_here > 0 && cores / ranks_here > 1 ? (int)(cores / ranks_here) : 1;
        }
    }
    size_t device_memory = 0;
    if (!err && device_memory_s && !parse_size(device_memory_s, &device_memory))
        err = usage("--device-memory expects a size in bytes, with K, M, G or T for binary multiples (256M, "
                    "8G), not '%s'", device_memory_s);
    if (!err && device_memory && comm)
        err = usage("--device-memory is not supported in distributed runs yet (%s)", "docs/distributed.md");
    if (!err && device_memory)
        rf_backend_gpu_set_memory_budget(device_memory);
    size_t max_iterations = 0;
    if (!err && max_iter_s) {
        char *end;
        errno = 0;
        unsigned long long m = strtoull(max_iter_s, &end, 10);
        if (!*max_iter_s || *end || max_iter_s[0] == '-' || m < 1 || errno)
            err = usage("--max-iterations expects a positive number, not '%s'", max_iter_s);
        max_iterations = (size_t)m;
    }
    rf_program *prog = NULL;
    rf_hprogram *hp = NULL;
    rf_backend *be = NULL;
    rf_status st;
    rf_status_init(&st);
    if (err) {
        rc = err;
        goto done;
    }
    /* The host's worker threads are made now, while the program compiles
     * and the device starts, not by the first kernel (reading the inputs). */
    rf_par_prestart(threads);
    if (is_rfx(prog_path)) {
        if (!(hp = load_compiled(prog_path, &rc)))
            goto done;
        /* A predicate to print that the compiled program keeps inside a
         * fused kernel is never stored: such a program runs unfused. */
        for (size_t i = 0; i < prints.len && fuse; i++)
            for (int v = 0; v < hp->nvars; v++)
                if (hp->vars[v].internal && hp->vars[v].pred && strcmp(hp->vars[v].pred, prints.items[i]) == 0)
                    fuse = false;
        if (!fuse && !weave(hp)) {
            rc = EXIT_INTERNAL;
            goto done;
        }
    } else {
        if (!(prog = compile_with(prog_path, fact_dir))) {
            rc = RF_EXIT_COMPILE_ERROR;
            goto done;
        }
        for (size_t i = 0; i < inputs.len; i++)
            if (rf_program_find_pred(prog, inputs.items[i].pred) < 0) {
                rf_fail(&st, RF_EXIT_USAGE, "--input: unknown predicate '%s'", inputs.items[i].pred);
                rc = report(&st);
                goto done;
            }
        for (size_t i = 0; i < prints.len; i++) {
            int p = rf_program_find_pred(prog, prints.items[i]);
            if (p < 0) {
                rf_fail(&st, RF_EXIT_USAGE, "--print: unknown predicate '%s'", prints.items[i]);
                rc = report(&st);
                goto done;
            }
            prog->preds[p].is_output = true;
            if (prog->souffle)
                RF_PUSH(sinks, ((rf_output_sink){prints.items[i], RF_SINK_STDOUT, NULL, '\t'}));
        }
        prints.len = 0; /* now outputs of the compiled program */
        /* A Soufflé program's outputs go where its directives say; with
         * `-D -` the files go to stdout, as Soufflé prints them. */
        for (int i = 0; i < prog->nsouffle_outputs; i++) {
            const rf_souffle_output *so = &prog->souffle_outputs[i];
            rf_output_sink sk = {so->pred, RF_SINK_FILE, so->file, so->delimiter};
            if (so->kind == RF_SOUFFLE_SIZE && count_only)
                continue;
            if (so->kind == RF_SOUFFLE_SIZE) {
                sk.kind = RF_SINK_SIZE;
                prog->preds[rf_program_find_pred(prog, so->pred)].is_output = true;
            } else if (so->kind == RF_SOUFFLE_STDOUT || !output_dir)
                sk.kind = RF_SINK_STDOUT;
            RF_PUSH(sinks, sk);
        }
        default_outputs(prog);
        if (!(hp = lower(prog))) {
            rc = EXIT_INTERNAL;
            goto done;
        }
    }
    /* auto: small inputs run on the CPU without starting the GPU (its
     * start-up costs more than their whole run there; backend_choice.h). */
    char auto_note[160] = "";
    if (strcmp(backend, "auto") == 0) {
        size_t threshold = rf_auto_cpu_threshold(getenv("RF_AUTO_CPU_ROWS"));
        size_t rows = rf_input_rows_upto(hp, (int)inputs.len, inputs.items, threshold);
        bool cpu = rf_auto_prefers_cpu(rows, threshold);
        if (cpu)
            snprintf(auto_note, sizeof auto_note, "auto: inputs %zu rows < %zu, RF_AUTO_CPU_ROWS", rows, threshold);
        else
            snprintf(auto_note, sizeof auto_note, "auto: inputs >= %zu rows, RF_AUTO_CPU_ROWS", threshold);
        if (cpu)
            backend = "cpu";
    }
    /* auto on a machine with a GPU: the run begins on the host's cores
     * while the device starts (0.1-0.3 s) on a thread of its own; it takes
     * over the kernels it is placed once there (backend_hybrid.c), and a
     * run done before it never waits for it. RF_DEVICE_ARRIVING=off starts
     * it first, as --backend=gpu does. */
    const char *arriving = getenv("RF_DEVICE_ARRIVING");
    const char *kernels_env = getenv("RF_HOST_KERNELS");
    if (strcmp(backend, "auto") == 0 && !comm && nvidia_device_node() &&
        !(arriving && strcmp(arriving, "off") == 0) && !(kernels_env && strcmp(kernels_env, "off") == 0)) {
        if (threads)
            rf_prims_set_threads(threads);
        be = rf_backend_hybrid_new_arriving(rf_backend_gpu_new, rf_backend_cpu_new(threads),
                                            device_start_after(hp, (int)inputs.len, inputs.items));
        strncat(auto_note, "; the device starting meanwhile, kernels of a few rows on the host",
                sizeof auto_note - strlen(auto_note) - 1);
    } else if (strcmp(backend, "cpu") != 0) {
        rf_status gst;
        rf_status_init(&gst);
        be = rf_backend_gpu_new(&gst);
        if (be)
            fprintf(stderr, "redfox: using GPU: %s\n", be->device);
        else if (strcmp(backend, "gpu") == 0) {
            rc = report(&gst);
            goto done;
        }
    }
    if (be && threads)
        rf_prims_set_threads(threads); /* the GPU backend's host work: reading inputs, copies */
    if (!be && auto_note[0] && strcmp(backend, "auto") == 0)
        strncat(auto_note, "; no GPU", sizeof auto_note - strlen(auto_note) - 1);
    if (!be)
        be = rf_backend_cpu_new(threads);
    /* auto on the GPU: kernels of a few rows run on the host instead
     * (backend_hybrid.c; RF_HOST_KERNELS=off keeps every kernel on the
     * device). RF_TEST_HYBRID_DEVICE=cpu puts a second CPU backend in
     * the device's place, so that machines without a GPU test the
     * placement (tests/golden, tests/differential). */
    const char *host_kernels = getenv("RF_HOST_KERNELS");
    const char *test_device = getenv("RF_TEST_HYBRID_DEVICE");
    if (strstr(auto_note, "device starting")) {
        /* (made above) */
    } else if (strcmp(backend, "auto") == 0 && strcmp(be->name, "gpu") == 0 &&
               !(host_kernels && strcmp(host_kernels, "off") == 0)) {
        be = rf_backend_hybrid_new(be, rf_backend_cpu_new(threads));
        strncat(auto_note, "; kernels of a few rows on the host", sizeof auto_note - strlen(auto_note) - 1);
    } else if (test_device && strcmp(test_device, "cpu") == 0 && strcmp(be->name, "cpu") == 0) {
        be = rf_backend_hybrid_new(rf_backend_cpu_new(threads), be);
    } else if (test_device && strcmp(test_device, "cpu-arriving") == 0 && strcmp(be->name, "cpu") == 0) {
        g_test_arrival_threads = threads;
        be = rf_backend_hybrid_new_arriving(start_test_device, be, device_start_after(hp, (int)inputs.len, inputs.items));
    }
    if (comm) {
        be = rf_backend_dist_new(be, comm);
        if (!threads_s)   /* the cores were shared among the ranks on this host: rank 0 writes with all */
            rf_backend_dist_set_output_threads(be, 0);
        snprintf(auto_note, sizeof auto_note, "distributed: %d ranks over %s, %d threads each", comm->size,
                 comm->name, threads);
    }
    if (stats)
        fprintf(stderr, "redfox: backend: %s%s%s%s\n", be->name, auto_note[0] ? " (" : "", auto_note,
                auto_note[0] ? ")" : "");
    rf_run_options ro = {
        .backend = be,
        .ninputs = (int)inputs.len,
        .inputs = inputs.items,
        .output_dir = output_dir,
        .nprint = (int)prints.len,
        .print = prints.items,
        .stats = stats,
        .count_only = count_only,
        /* Distributed, no progress lines: whether stderr is a terminal
         * differs between ranks, and a progress line counts rows, which
         * every rank must do alike. */
        .progress = progress ? RF_PROGRESS_ALWAYS : comm ? RF_PROGRESS_NONE : RF_PROGRESS_TERMINAL,
        .discard_outputs = comm && comm->rank != 0 && !per_rank,
        .output_parts = per_rank ? comm->size : 0,
        .output_part = per_rank ? comm->rank : 0,
        .max_iterations = max_iterations,
        .device_memory = device_memory,
        /* A device's memory is not the host's: spilling to it can help. */
        .spill_on_oom = strcmp(be->name, "gpu") == 0 && !comm,
        .profile_path = profile_path,
        .program_name = prog_path,
        .nsinks = (int)sinks.len,
        .sinks = sinks.items,
    };
    if (!rf_run(hp, &ro, &st))
        rc = report(&st);
done:
    if (be && rf_backend_hybrid_device_starting(be)) {
        /* The run needed no device and is over: end now rather than wait
         * for the driver's start-up to finish (outputs are written and
         * closed; the device thread goes with the process). */
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    if (be)
        be->destroy(be);
    if (hp)
        rf_hir_free(hp);
    if (prog)
        rf_program_free(prog);
    for (size_t i = 0; i < inputs.len; i++)
        free((char *)inputs.items[i].pred);
    RF_VEC_FREE(inputs);
    RF_VEC_FREE(prints);
    RF_VEC_FREE(sinks);
    return rc;
}

/* `redfox run`: distributed when started by an MPI launcher (mpirun -np N
 * redfox run ...; RF_DISTRIBUTE=0 turns that off) or given --distribute
 * (a single process is then a run of one rank). Every rank parses,
 * compiles and runs the same program; rank 0 alone writes and prints
 * (the other ranks' stdout and stderr go to /dev/null unless
 * RF_DIST_VERBOSE=1: they would repeat rank 0's messages). */
/* `redfox run --gpus N ...`: N processes, one per GPU (rank r on CUDA
 * device r), each this same command without --gpus, joined by NCCL
 * (runtime/nccl/comm_nccl.c). Rank 0 makes the NCCL id and writes it up a
 * pipe; this process hands it down a pipe to every other rank, then waits
 * for them all. A rank that fails ends the others (NCCL cannot): the exit
 * status is the first failing rank's, rank 0 having printed the message
 * (the dist layer makes every rank fail with rank 0's). */
static int launch_gpus(int argc, char **argv, int at, const char *count)
{
    char *end = NULL;
    long n = strtol(count, &end, 10);
    if (!*count || *end || n < 1 || n > 64)
        return usage("--gpus expects a number of GPUs from 1 to 64, not '%s'", count);
    /* The ranks' command: this one without --gpus N (or --gpus=N). */
    char **args = rf_calloc((size_t)argc + 1, sizeof *args);
    int na = 0;
    for (int i = 0; i < argc; i++) {
        if (i == at) {
            if (strcmp(argv[i], "--gpus") == 0)
                i++;
            continue;
        }
        args[na++] = argv[i];
    }
    args[na] = NULL;
    int up[2];
    int (*down)[2] = rf_calloc((size_t)n, sizeof *down);
    pid_t *pids = rf_calloc((size_t)n, sizeof *pids);
    if (pipe(up) != 0) {
        perror("redfox: pipe");
        return RF_EXIT_RUNTIME_ERROR;
    }
    for (long r = 1; r < n; r++)
        if (pipe(down[r]) != 0) {
            perror("redfox: pipe");
            return RF_EXIT_RUNTIME_ERROR;
        }
    /* NVLink multicast (NVLS) stays off unless asked for: the machines
     * this runs on are shared, and their operators ask for it off. */
    setenv("NCCL_NVLS_ENABLE", getenv("NCCL_NVLS_ENABLE") ? getenv("NCCL_NVLS_ENABLE") : "0", 1);
    fflush(stdout);
    fflush(stderr);
    for (long r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("redfox: fork");
            for (long q = 0; q < r; q++)
                kill(pids[q], SIGTERM);
            return RF_EXIT_RUNTIME_ERROR;
        }
        if (pid == 0) {
            char v[32];
            int fd = r == 0 ? up[1] : down[r][0];
            snprintf(v, sizeof v, "%ld", r);
            setenv("RF_NCCL_RANK", v, 1);
            if (!getenv("RF_CUDA_DEVICE_BASE"))
                setenv("RF_CUDA_DEVICE", v, 1);
            else {
                snprintf(v, sizeof v, "%ld", r + strtol(getenv("RF_CUDA_DEVICE_BASE"), NULL, 10));
                setenv("RF_CUDA_DEVICE", v, 1);
            }
            snprintf(v, sizeof v, "%ld", n);
            setenv("RF_NCCL_SIZE", v, 1);
            snprintf(v, sizeof v, "%d", fd);
            setenv("RF_NCCL_ID_FD", v, 1);
            close(up[0]);
            if (r != 0)
                close(up[1]);
            for (long q = 1; q < n; q++) {
                close(down[q][1]);
                if (q != r)
                    close(down[q][0]);
            }
            execv("/proc/self/exe", args);
            perror("redfox: exec");
            _exit(RF_EXIT_RUNTIME_ERROR);
        }
        pids[r] = pid;
    }
    close(up[1]);
    for (long r = 1; r < n; r++)
        close(down[r][0]);
    unsigned char id[RF_COMM_NCCL_ID_BYTES];
    size_t got = 0;
    while (got < sizeof id) {
        ssize_t k = read(up[0], id + got, sizeof id - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(up[0]);
    for (long r = 1; r < n; r++) {   /* short: rank 0 failed first; the others then read nothing */
        if (got == sizeof id && write(down[r][1], id, sizeof id) != (ssize_t)sizeof id)
            got = 0;
        close(down[r][1]);
    }
    int rc = 0;
    for (long left = n; left > 0; left--) {
        int status = 0;
        pid_t pid = wait(&status);
        if (pid < 0)
            break;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : RF_EXIT_RUNTIME_ERROR;
        if (code != 0 && rc == 0) {
            rc = code;
            for (long q = 0; q < n; q++)
                if (pids[q] != pid)
                    kill(pids[q], SIGTERM);
        }
    }
    free(args);
    free(down);
    free(pids);
    return rc;
}

/* A rank of a --gpus run (RF_NCCL_RANK set by launch_gpus): its NCCL
 * communicator, the id made (rank 0) or received through RF_NCCL_ID_FD. */
static rf_comm *open_gpus_rank(char *err, size_t cap)
{
    int rank = atoi(getenv("RF_NCCL_RANK")), size = getenv("RF_NCCL_SIZE") ? atoi(getenv("RF_NCCL_SIZE")) : 1;
    int fd = getenv("RF_NCCL_ID_FD") ? atoi(getenv("RF_NCCL_ID_FD")) : -1;
    int device = getenv("RF_CUDA_DEVICE") ? atoi(getenv("RF_CUDA_DEVICE")) : rank;
    unsigned char id[RF_COMM_NCCL_ID_BYTES];
    bool ok = true;
    if (rank == 0) {
        ok = rf_comm_nccl_unique_id(id, sizeof id, err, cap);
        if (ok && fd >= 0 && write(fd, id, sizeof id) != (ssize_t)sizeof id) {
            snprintf(err, cap, "cannot hand the NCCL id to the launcher");
            ok = false;
        }
    } else {
        size_t got = 0;
        while (fd >= 0 && got < sizeof id) {
            ssize_t k = read(fd, id + got, sizeof id - got);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        if (got != sizeof id) {
            snprintf(err, cap, "rank %d: no NCCL id from the launcher (rank 0 failed to start)", rank);
            ok = false;
        }
    }
    if (fd >= 0)
        close(fd);
    double t0 = rf_now();
    rf_comm *c = ok ? rf_comm_nccl_open(rank, size, id, sizeof id, device, err, cap) : NULL;
    const char *trace = getenv("RF_DIST_TRACE");
    if (c && trace && *trace && strcmp(trace, "0") != 0)
        fprintf(stderr, "redfox: rank %d: NCCL communicator opened in %.3f s\n", rank, rf_now() - t0);
    return c;
}

/* One rank's run over comm (NULL: it could not be opened, err says why;
 * what names the kind of run in that message). Ranks other than 0 write
 * nothing unless RF_DIST_VERBOSE=1: they would repeat rank 0's lines. */
static int run_as_rank(int argc, char **argv, rf_comm *comm, const char *what, const char *err)
{
    if (!comm) {
        fprintf(stderr, "redfox: error: %s: %s\n", what, err);
        return RF_EXIT_RUNTIME_ERROR;
    }
    const char *verbose = getenv("RF_DIST_VERBOSE");
    if (comm->rank != 0 && !(verbose && strcmp(verbose, "1") == 0)) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            comm->abort(comm, RF_EXIT_RUNTIME_ERROR);
    }
    int rc = run_program(argc, argv, comm);
    fflush(stdout);
    fflush(stderr);
    comm->close(comm);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--gpus") == 0 || strncmp(argv[i], "--gpus=", 7) == 0) {
            if (getenv("RF_NCCL_RANK"))
                return usage("--gpus is for the launching process; this one is rank %s of a --gpus run",
                             getenv("RF_NCCL_RANK"));
            if (strcmp(argv[i], "--gpus") == 0 && i + 1 >= argc)
                return usage("--gpus expects a number of GPUs%s", "");
            return launch_gpus(argc, argv, i, strcmp(argv[i], "--gpus") == 0 ? argv[i + 1] : argv[i] + 7);
        }
    if (getenv("RF_NCCL_RANK")) {
        char err[512] = "";
        return run_as_rank(argc, argv, open_gpus_rank(err, sizeof err), "--gpus run", err);
    }
    bool distribute = false;
    for (int i = 2; i < argc; i++)
        distribute |= strcmp(argv[i], "--distribute") == 0;
    const char *env = getenv("RF_DISTRIBUTE");
    if (!distribute && rf_comm_launched_by_mpi() && !(env && strcmp(env, "0") == 0))
        distribute = true;
    if (!distribute)
        return run_program(argc, argv, NULL);
    char err[512] = "";
    return run_as_rank(argc, argv, rf_comm_mpi_open(err, sizeof err), "distributed run", err);
}

/* `explain --cuda`: the generated CUDA of each FUSED kernel, in program
 * order, each introduced by the block and kernel it stands at. */
static int print_fused_cuda(const rf_hprogram *hp)
{
    int n = 0;
    for (int b = 0; b < hp->nblocks; b++)
        for (int i = 0; i < hp->blocks[b].nkernels; i++) {
            const rf_kernel *k = &hp->blocks[b].kernels[i];
            if (k->op != RF_K_FUSED)
                continue;
            char *src = rf_gpu_fused_source(hp, k);
            if (!src) {
                fputs("redfox: explain --cuda: this redfox was built without the GPU backend\n", stderr);
                return RF_EXIT_RUNTIME_ERROR;
            }
            printf("%s// ==== block %d (%s), kernel %d ====\n%s", n++ ? "\n" : "", b,
                   hp->blocks[b].label ? hp->blocks[b].label : "", i, src);
            free(src);
        }
    if (n == 0)
        puts("// no fused kernels (every kernel runs on its own)");
    return RF_EXIT_OK;
}

/* `explain --select-plans`: for each kernel whose filter has 2 or more
 * conjuncts (a MAP or JOIN, or the chain a FUSED group composes), its
 * conjuncts as '#' comments, then every plan the guard allows, one line
 * each: OUTPUT<TAB>CONJUNCTS<TAB>PLAN, in RF_WEAVE_SELPLAN's syntax. What
 * bench/selplan_sweep.py and tests/weaver/selplan_forced.py force one by
 * one. A reducing gather's chain is one kernel: no `|` plans. */
typedef struct plan_printer {
    const char *out;
    int n;
} plan_printer;

static void print_one_plan(const rf_selplan *p, void *ctx)
{
    const plan_printer *pp = ctx;
    char text[RF_SELPLAN_FMT_MAX];
    printf("%s\t%d\t%s\n", pp->out, pp->n, rf_selplan_format(p, text, sizeof text));
}

static int print_select_plans(const rf_hprogram *hp)
{
    int found = 0;
    for (int b = 0; b < hp->nblocks; b++)
        for (int i = 0; i < hp->blocks[b].nkernels; i++) {
            const rf_kernel *k = &hp->blocks[b].kernels[i];
            rf_kernel chain;
            const rf_kernel *planned = NULL;
            bool composed = false, splits = true;
            if (k->op == RF_K_MAP || k->op == RF_K_JOIN) {
                planned = k;
            } else if (k->op == RF_K_FUSED && k->fused->nout == 1) {
                bool reduce = k->gather == RF_GATHER_REDUCE;
                int last = reduce ? k->fused->nmembers - 3 : k->fused->nmembers - 1;
                composed = last >= 0 && rf_fused_chain_end(hp, k) >= last && rf_fused_compose(hp, k, 0, last, &chain);
                planned = composed ? &chain : NULL;
                splits = !reduce;
            }
            rf_selsplit s = {0, NULL};
            rf_status st;
            rf_status_init(&st);
            if (planned && rf_selplan_split(&planned->filter, &s, &st) && s.n >= 2) {
                const char *name = hp->vars[k->out].name ? hp->vars[k->out].name : "?";
                printf("# block %d (%s), kernel %d: %s := %s%s, %d conjuncts%s\n", b,
                       hp->blocks[b].label ? hp->blocks[b].label : "", i, name, rf_kop_name(k->op),
                       composed ? " (its chain composed)" : "", s.n, splits ? "" : ", one kernel (no | plans)");
                for (int c = 0; c < s.n; c++) {
                    printf("#   %d: ", c);
                    rf_code_print(stdout, &s.conj[c].code);
                    printf("%s\n", s.conj[c].can_fault ? "   (can fault: stays after the ones before it)"
                                    : s.conj[c].interns ? "   (interns strings: stays after the ones before it)"
                                                        : "");
                }
                plan_printer pp = {name, s.n};
                int n = rf_selplan_enumerate(s.conj, s.n, splits, print_one_plan, &pp);
                if (n < 0)
                    printf("# more than %d conjuncts: plans not listed\n", RF_SELPLAN_EXHAUSTIVE_MAX);
                found++;
            }
            rf_selsplit_free(&s);
            if (composed)
                rf_kernel_free(&chain);
        }
    if (!found)
        puts("# no filter of 2 or more conjuncts");
    return RF_EXIT_OK;
}

/* Where `explain --plan|--ir` (text or --dot) writes: stdout, or with
 * -o FILE a file written whole or not at all (rf_outfile). */
typedef struct explain_sink {
    rf_outfile file;
    bool to_file;
} explain_sink;

static int sink_open(explain_sink *s, const char *path, FILE **out)
{
    memset(s, 0, sizeof *s);
    *out = stdout;
    if (!path)
        return RF_EXIT_OK;
    rf_status st;
    rf_status_init(&st);
    if (!rf_outfile_open(&s->file, path, &st))
        return report(&st);
    s->to_file = true;
    *out = s->file.f;
    return RF_EXIT_OK;
}

/* Commits the file when everything before succeeded (rc 0), else leaves
 * the path as it was. */
static int sink_close(explain_sink *s, int rc)
{
    if (!s->to_file)
        return rc;
    if (rc != RF_EXIT_OK) {
        rf_outfile_abort(&s->file);
        return rc;
    }
    rf_status st;
    rf_status_init(&st);
    return rf_outfile_commit(&s->file, &st) ? RF_EXIT_OK : report(&st);
}

/* --plan / --ir as text or (--dot) Graphviz. */
static void write_plan(const rf_plan *plan, bool dot, FILE *out)
{
    if (dot)
        rf_plan_write_dot(plan, out);
    else
        rf_plan_print(plan, out);
}

static void write_ir(const rf_hprogram *hp, bool dot, FILE *out)
{
    if (dot)
        rf_hir_write_dot(hp, out);
    else
        rf_hir_print(hp, out);
}

static int cmd_explain(int argc, char **argv)
{
    const char *mode = NULL, *path = NULL, *out_path = NULL;
    bool dot = false;
    int err = 0;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--plan") == 0 || strcmp(argv[i], "--ir") == 0 || strcmp(argv[i], "--cuda") == 0 ||
            strcmp(argv[i], "--select-plans") == 0)
            mode = argv[i];
        else if (strcmp(argv[i], "--dot") == 0)
            dot = true;
        else if (opt_value(argc, argv, &i, "-o", &v, &err) || opt_value(argc, argv, &i, "--output", &v, &err)) {
            if (err)
                return err;
            out_path = v;
        } else if (opt_value(argc, argv, &i, "--join", &v, &err)) {
            if (err || (err = set_join(v)))
                return err;
        } else if (strcmp(argv[i], "--no-fuse") == 0)
            fuse = false;
        else if (argv[i][0] == '-' && argv[i][1])
            return usage("unknown option '%s'", argv[i]);
        else if (!path)
            path = argv[i];
        else
            return usage("unexpected argument '%s'", argv[i]);
    }
    if (!mode || !path)
        return usage("explain needs --plan, --ir, --cuda or --select-plans and a program%s", "");
    bool text_mode = strcmp(mode, "--plan") == 0 || strcmp(mode, "--ir") == 0;
    if (dot && !text_mode)
        return usage("explain --dot draws --plan or --ir, not %s", mode);
    if (out_path && !text_mode)
        return usage("explain -o FILE writes --plan or --ir (with or without --dot), not %s", mode);
    if (is_rfx(path)) {
        if (strcmp(mode, "--plan") == 0)
            return usage("explain --plan needs the program's source: '%s' is compiled (explain --ir shows "
                         "its kernels)", path);
        int rc = RF_EXIT_OK;
        rf_hprogram *hp = load_compiled(path, &rc);
        if (hp && !fuse && !weave(hp))
            rc = EXIT_INTERNAL;
        else if (hp && !text_mode)
            rc = strcmp(mode, "--cuda") == 0 ? print_fused_cuda(hp) : print_select_plans(hp);
        else if (hp) {
            explain_sink sink;
            FILE *out;
            if ((rc = sink_open(&sink, out_path, &out)) == RF_EXIT_OK) {
                write_ir(hp, dot, out);
                rc = sink_close(&sink, rc);
            }
        }
        rf_hir_free(hp);
        return rc;
    }
    rf_program *prog = compile(path);
    if (!prog)
        return RF_EXIT_COMPILE_ERROR;
    default_outputs(prog);
    int rc = RF_EXIT_OK;
    explain_sink sink;
    FILE *out = stdout;
    if (text_mode && (rc = sink_open(&sink, out_path, &out)) != RF_EXIT_OK) {
        rf_program_free(prog);
        return rc;
    }
    if (strcmp(mode, "--plan") == 0) {
        rf_plan_options po = {.optimize = true, .join = join_mode};
        rf_plan *plan = rf_plan_build(prog, &po);
        if (plan) {
            write_plan(plan, dot, out);
            rf_plan_free(plan);
        } else {
            fputs("redfox: internal error: the planner failed\n", stderr);
            rc = EXIT_INTERNAL;
        }
    } else {
        rf_hprogram *hp = lower(prog);
        if (hp) {
            if (strcmp(mode, "--cuda") == 0)
                rc = print_fused_cuda(hp);
            else if (strcmp(mode, "--select-plans") == 0)
                rc = print_select_plans(hp);
            else
                write_ir(hp, dot, out);
            rf_hir_free(hp);
        } else {
            rc = EXIT_INTERNAL;
        }
    }
    if (text_mode)
        rc = sink_close(&sink, rc);
    rf_program_free(prog);
    return rc;
}

static int cmd_compile(int argc, char **argv)
{
    const char *path = NULL, *out = NULL;
    int err = 0;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (opt_value(argc, argv, &i, "-o", &v, &err) || opt_value(argc, argv, &i, "--output", &v, &err)) {
            if (err)
                return err;
            out = v;
        } else if (opt_value(argc, argv, &i, "--join", &v, &err)) {
            if (err || (err = set_join(v)))
                return err;
        } else if (strcmp(argv[i], "--no-fuse") == 0) {
            fuse = false;
        } else if (strcmp(argv[i], "--distribute") == 0) {
            /* (cmd_run looked for it) */
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage("unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return usage("unexpected argument '%s'", argv[i]);
        }
    }
    if (!path || !out)
        return usage("compile needs a program and -o FILE%s", "");
    if (is_rfx(path))
        return usage("compile needs a source program: '%s' is already compiled", path);
    rf_program *prog = compile(path);
    if (!prog)
        return RF_EXIT_COMPILE_ERROR;
    default_outputs(prog);
    rf_hprogram *hp = lower(prog);
    rf_program_free(prog);
    if (!hp)
        return EXIT_INTERNAL;
    rf_status st;
    rf_status_init(&st);
    int rc = rf_hir_save(hp, out, &st) ? RF_EXIT_OK : report(&st);
    rf_hir_free(hp);
    return rc;
}

static int cmd_check(int argc, char **argv)
{
    if (argc != 3 || argv[2][0] == '-')
        return usage("check needs exactly one program%s", "");
    if (is_rfx(argv[2])) {
        /* The loader validates every field and runs the verifier. */
        int rc = RF_EXIT_OK;
        rf_hprogram *hp = load_compiled(argv[2], &rc);
        rf_hir_free(hp);
        return rc;
    }
    rf_program *prog = compile(argv[2]);
    if (!prog)
        return RF_EXIT_COMPILE_ERROR;
    rf_program_free(prog);
    return RF_EXIT_OK;
}

/* The process keeps the memory it frees for the columns it allocates next
 * (glibc: blocks up to 32 MB from the heap rather than each its own
 * mapping, and the heap's top never given back). Why: a query frees its
 * inputs and intermediates as it goes (liveness), and with glibc's
 * defaults each column of a few MB was unmapped on free (12 ms for
 * lineitem's at SF 0.1, in the middle of q12's 33 ms) and the next one
 * mapped and faulted in afresh: TPC-H SF 0.1 on the CPU, 2 threads,
 * 1.24 -> 0.98 s in sum (docs/performance.md). Only the CLI: a library
 * leaves its host's allocator alone. */
static void keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

int main(int argc, char **argv)
{
    keep_freed_memory();
    if (argc < 2)
        return usage(NULL, NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        fputs(help_text, stdout);
        return RF_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("redfox " RF_VERSION "\n");
        return RF_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc, argv);
    if (strcmp(cmd, "explain") == 0)
        return cmd_explain(argc, argv);
    if (strcmp(cmd, "compile") == 0)
        return cmd_compile(argc, argv);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc, argv);
    return usage("unknown command '%s'", cmd);
}
