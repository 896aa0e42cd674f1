/* The Harmony runtime: interprets a kernel CFG (hir.h) on a backend
 * (backend.h), reading input facts and writing the outputs.
 *
 * Interpretation: from block 0, a variable's storage is created when it is
 * first defined; LOAD kernels are executed by the runtime itself (inline
 * facts ∪ input file, sorted and deduplicated, uploaded), and so are
 * CHECK_KEYS kernels (download, scan adjacent rows for a repeated key);
 * every other kernel goes to be->run. After each kernel its `frees` are released, and on entry
 * to a block its `free_entry`; a COPY whose source is freed right after it
 * is executed as a move (the storage changes hands, nothing is copied).
 * At HALT every output variable is downloaded, sorted in typed order (or
 * by its @order: rf_hvar.order_cols), cut to its @limit and written
 * (design.md, "Output format").
 *
 * In memory (libredfox, lib/): memory_inputs give a predicate's rows as
 * words instead of its input file, through the same LOAD (inline facts ∪
 * these rows, needed-column pruning, sorted, deduplicated); a
 * result_callback receives each output's rows, in exactly the order and
 * with the @limit the files get, instead of any file or printing. */
#ifndef RF_RUNTIME_H
#define RF_RUNTIME_H

#include <stdio.h>

#include "backend.h"

typedef struct rf_input_override {
    const char *pred;        /* predicate name */
    const char *path;        /* file; format from the extension (.csv = CSV, .tbl = TBL) */
} rf_input_override;

/* Progress of long loops (over 1 s): on a terminal one line rewritten in
 * place each iteration; elsewhere (RF_PROGRESS_ALWAYS) a line a second. */
typedef enum rf_progress {
    RF_PROGRESS_NONE = 0,
    RF_PROGRESS_TERMINAL,    /* only when `err` is a terminal (the default) */
    RF_PROGRESS_ALWAYS       /* --progress */
} rf_progress;

/* Soufflé-style outputs (redfox run PROG.dl; docs/souffle.md): where each
 * output predicate goes instead of DIR/PRED.tsv or the "# pred" block. */
typedef enum rf_sink_kind {
    RF_SINK_FILE,            /* `file`, fields separated by `delimiter` */
    RF_SINK_STDOUT,          /* Soufflé's framed block on `out` */
    RF_SINK_SIZE             /* "pred<TAB>rows" on `out` (.printsize) */
} rf_sink_kind;

typedef struct rf_output_sink {
    const char *pred;        /* an output predicate */
    rf_sink_kind kind;
    const char *file;        /* FILE: relative to output_dir (NULL: ".") unless absolute */
    char delimiter;
} rf_output_sink;

/* Facts of one predicate from memory: words of the predicate's declared
 * types (strings already interned in the dictionary), rows.arity = the
 * predicate's arity, in any order, duplicates allowed. They replace the
 * predicate's input file (as --input does); its inline facts stay. */
typedef struct rf_memory_input {
    const char *pred;
    const rf_table *rows;
} rf_memory_input;

/* Receives one output predicate's rows at the end of a run (sorted as the
 * output files are, cut to its @limit); the table is the runtime's, valid
 * during the call only. Returns false with st set to fail the run. */
typedef bool (*rf_result_callback)(void *ctx, const char *pred, const rf_table *rows, const rf_type *types,
                                   rf_status *st);

typedef struct rf_run_options {
    rf_backend *backend;     /* required */
    int ninputs;
    const rf_input_override *inputs;   /* --input PRED=FILE */
    const char *output_dir;  /* --output DIR; NULL: print to `out` */
    FILE *out;               /* NULL: stdout */
    FILE *err;               /* stats and progress; NULL: stderr */
    int nprint;
    const char *const *print;/* --print PRED: also output these predicates */
    bool stats;              /* --stats: per-kernel table on `err` */
    bool count_only;         /* --count: print "# pred (N tuples, hash H)" lines only */
    rf_progress progress;    /* loop progress lines on `err` */
    size_t max_iterations;   /* > 0: a loop running more iterations than this
                                fails the run (--max-iterations) */
    const char *profile_path;/* --profile FILE: a Chrome/Perfetto trace of the
                                run (trace.h), written whole or not at all,
                                also after a failed run; NULL: none */
    const char *program_name;/* the trace's title; may be NULL */
    /* nsinks > 0 (and not count_only): write these, in this order, instead
     * of the usual outputs; the files whole or not at all, like --output. */
    int nsinks;
    const rf_output_sink *sinks;
    /* In memory (libredfox): see rf_memory_input. Each predicate at most
     * once; one named here may not also be in `inputs`. */
    int nmemory_inputs;
    const rf_memory_input *memory_inputs;
    /* Non-NULL: every output goes to it (in variable order) and nothing is
     * written or printed; output_dir, count_only and sinks are ignored. */
    rf_result_callback result_callback;
    void *result_ctx;
    /* Runs the program but neither writes nor prints its outputs (nor calls
     * result_callback): a distributed run's ranks other than 0, which
     * take part in every kernel while rank 0 alone writes the answers. */
    bool discard_outputs;
    /* > 0 (--output-per-rank, a distributed run's rank): this process
     * writes part output_part (0-based) of output_parts of every output,
     * its own rows only, to output_dir/PRED.part-K-of-N.tsv (K from 1);
     * the backend's outputs_local keeps each rank's rows instead of
     * gathering them, and the parts are committed only where every rank
     * wrote its own (the backend's agree). Needs output_dir; an output with
     * @limit is refused (a limit needs all of its rows in one place). */
    int output_parts;
    int output_part;
    /* > 0 (--device-memory): the backend's relations are kept under this
     * many bytes between kernels by holding the least recently used ones
     * in host memory until a kernel reads them again (spilling; one
     * kernel's own inputs and output may still exceed it). 0: no limit. */
    size_t device_memory;
    /* With a device (the CLI sets it for the GPU): a kernel that runs out
     * of memory runs once more after every variable it neither reads nor
     * writes has been spilled to host memory, also without device_memory. */
    bool spill_on_oom;
} rf_run_options;

/* Counters of one run (for tests and tools); all optional. */
typedef struct rf_run_info {
    size_t kernels_run;      /* kernels executed, LOADs included */
    size_t fused_run_as_members; /* FUSED kernels the backend ran unfused */
    size_t copies_moved;     /* COPY kernels executed as moves */
    size_t loop_iterations;  /* sum over loops of their iterations */
    size_t bytes_peak;       /* backend peak */
    double seconds;
} rf_run_info;

/* Runs p. Returns false with st filled (bad input row, division by zero,
 * unwritable output; an unknown predicate in --input/--print has code
 * RF_EXIT_USAGE). Errors of a kernel name its rule ("prog.lql:5:1: error:
 * division by zero" and a note with the rule), errors of an input file the
 * @input directive or the --input option. On failure with output_dir set,
 * no output file is left behind and DIR is as it was. */
bool rf_run(const rf_hprogram *p, const rf_run_options *opt, rf_status *st);
bool rf_run_ex(const rf_hprogram *p, const rf_run_options *opt, rf_run_info *info, rf_status *st);

/* ---- --join=auto's run-time choice (join_choice.c) ---- */
/* What one RF_TERM_BRANCH_JOIN decided: the binary plan's first join
 * would make `first_join` rows from inputs of `inputs` rows in all, and
 * its largest intermediate about `estimate` = inputs x (first_join /
 * inputs)^(nvars - 2) rows; the multiway join's inputs are about `budget`
 * = natoms x inputs / 2 rows; it runs when estimate > ratio x budget. */
typedef struct rf_join_choice {
    bool wcoj;
    uint64_t first_join;
    size_t inputs;
    double estimate, budget;
    double ratio;
    double seconds;          /* counting, downloads included */
} rf_join_choice;
/* The ratio in force on backend be: RF_WCOJ_AUTO_RATIO when set (a number
 * >= 0), else the backend's wcoj_auto_ratio. */
double rf_wcoj_auto_ratio(const rf_backend *be);
/* Decides block hb's join choice over l and r (NULL: never written, so
 * empty); false with st filled when the backend fails. */
bool rf_join_choose(rf_backend *be, const rf_hblock *hb, const rf_dvar *l, const rf_dvar *r, int arity_l,
                    int arity_r, rf_join_choice *out, rf_status *st);

/* ---- Input column pruning (needed_cols.c) ---- */
/* For every variable defined by a LOAD kernel, which of its columns the
 * program can observe: MAP's filter and projections, JOIN's keys and the
 * columns its codes read (of l ++ r), ANTIJOIN's keys when it is in1; a
 * code with an operator not known to read only values, any other reader,
 * an output, keep[v] (outputs and --print; may be NULL) or a loop
 * condition needs them all. Returns an array of nvars entries: NULL
 * where every column is needed (or v is not loaded), else a bool per
 * column. Filling the unneeded columns with 0 before the load
 * deduplicates changes no answer's rows (needed_cols.c says why, and what
 * it may change: string ids, the last bits of a float64 total). Free with
 * rf_needed_columns_free. positions (nvars entries, may be NULL) is set
 * where a pruned variable's readers also see its row positions
 * (RF_EX_ROWID): its load must keep the file's distinct rows apart. */
bool **rf_needed_columns(const rf_hprogram *p, const bool *keep, bool *positions);
void rf_needed_columns_free(bool **needed, int nvars);

/* ---- Input files (io.c) ---- */
/* .csv (case-insensitive) = CSV, .tbl = TBL (dbgen), anything else TSV. */
rf_file_format rf_format_from_path(const char *path);
/* Appends the rows of a fact file to t (initialised with `arity`), in file
 * order; field syntax and escapes as in docs/design.md "Input files", so
 * that every file rf_write_tsv writes reads back as the same rows.
 * needed (NULL: all): columns c with !needed[c] are checked as usual (a bad
 * value is still an error) but stored as 0, and their strings are not
 * interned. TBL and TSV text from 512 KB on is parsed by rf_prims_threads()
 * threads; the rows, string ids and errors are exactly those of a
 * sequential parse. On an error, t holds the rows before the bad one.
 * Errors:
 * "PATH:LINE: error: expected 2 fields, found 3",
 * "PATH:LINE: error: field 2: not an integer: 'abc'",
 * "PATH:LINE: error: field 1: bad escape '\q': 'x\qy'",
 * "cannot open 'PATH': REASON"; TBL errors add the byte column of the
 * field: "PATH:LINE:COL: error: field 6: 12.345 has more than 2 decimal
 * places", "PATH:LINE:COL: error: the line does not end with '|' (tbl
 * format)". */
bool rf_read_facts(const char *path, rf_file_format fmt, int arity, const rf_type *types,
                   const bool *needed, rf_table *t, rf_status *st);
/* The same, with the first unread column (needed[c] false) holding a
 * fingerprint of the row's unread fields instead of 0: rows that differ
 * only there stay apart (unless their fingerprints collide), so the
 * deduplication of a pruned load merges only rows that may be equal. The
 * column's words are no values of its type: nothing may read them. */
bool rf_read_facts_fingerprinted(const char *path, rf_file_format fmt, int arity, const rf_type *types,
                                 const bool *needed, rf_table *t, rf_status *st);
/* Whether path names a regular file of at least one byte (one that
 * rf_read_facts_share can read a share of). */
bool rf_regular_file(const char *path);
/* The rows of share `part` of `nparts` of the file's lines (shares cut at
 * newlines, in file order: a distributed run's process reads its own),
 * parsed as rf_read_facts parses the whole file (rf_read_facts_fingerprinted
 * where fingerprint); lines_before(ctx, lines)
 * is told how many lines this share holds and returns how many the
 * shares before it hold (every caller calls it exactly once, also when
 * its share cannot be read), so that messages name the file's line. The
 * caller excludes CSV (a record may span lines) and string columns (their
 * ids would differ between processes). */
bool rf_read_facts_share(const char *path, rf_file_format fmt, int arity, const rf_type *types, const bool *needed,
                         bool fingerprint, int part, int nparts, uint64_t (*lines_before)(void *ctx, uint64_t lines),
                         void *ctx, rf_table *t, rf_status *st);
/* The same over text in memory (tests); `name` is used in messages. */
bool rf_parse_facts(const char *name, const char *text, size_t len, rf_file_format fmt, int arity,
                    const rf_type *types, const bool *needed, rf_table *t, rf_status *st);
/* Lines of numbers in the common forms take a fast path (io.c) that gives
 * exactly the general path's rows and errors; off, every line takes the
 * general path (tests compare the two). On by default. */
void rf_set_parse_fast_path(bool on);
/* Tests: texts of at least par_min bytes are parsed in pieces of about
 * piece_min bytes or more (as many as rf_prims_threads() x 4); 0, 0 sets
 * the defaults back (512 KB, 128 KB). The rows, ids and errors are those
 * of one piece either way. */
void rf_set_parse_pieces(size_t par_min, size_t piece_min);

/* ---- Output (output.c) ---- */
/* Sorts rows in typed value order (rf_value_compare column by column) and
 * drops duplicates. */
void rf_sort_typed(rf_table *t, const rf_type *types);
/* The distinct strings of some columns in text order: by_text[r] the id of
 * rank r, ids[] the same ids by id (rf_str_ranks_of searches them). Only
 * the ids the rows hold are ordered, never the whole dictionary (90M
 * strings at TPC-H SF 10). */
typedef struct rf_str_ranks {
    size_t n;
    rf_word *ids, *rank_of, *by_text;   /* [n]: distinct ids by id; rank of ids[i]; ids by text */
} rf_str_ranks;
/* False, nothing made, where the columns hold more than max_distinct
 * distinct strings (SIZE_MAX: always made). */
bool rf_str_ranks_make(rf_str_ranks *r, const rf_word *const *cols, int ncols, size_t nrows, size_t max_distinct);
rf_word rf_str_ranks_of(const rf_str_ranks *r, rf_word id);   /* id must be one of the columns' */
void rf_str_ranks_free(rf_str_ranks *r);
/* Writes rows as TSV, values as rf_value_format writes them (design.md
 * "Output format"). */
bool rf_write_tsv(FILE *f, const rf_table *t, const rf_type *types);
/* The same with another field separator, and a row of no columns written
 * "()" as Soufflé does (Soufflé-style outputs). */
bool rf_write_delimited(FILE *f, const rf_table *t, const rf_type *types, char delimiter);

#endif
