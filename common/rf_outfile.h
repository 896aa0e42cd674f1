/* Output files written whole or not at all, without destroying what is at
 * the path. Used by `redfox compile -o` and `redfox run --output`.
 *
 *   - A regular file (or nothing) at the path: data goes to a temporary file
 *     in the same folder, renamed over the path on commit; a failed or
 *     aborted write leaves the old file untouched.
 *   - A symbolic link: followed; the file it names is replaced as above and
 *     the link itself stays a link.
 *   - Anything else (a character device such as /dev/null or /dev/full, a
 *     FIFO, a terminal, /proc/self/fd/1): replacing it would destroy it, so
 *     data is staged in an anonymous temporary file and copied into it on
 *     commit (a device that refuses the data, e.g. /dev/full, fails the
 *     commit with its error).
 *   - A directory: refused when opened, before anything is written.
 *
 * Several files that must appear together (the outputs of one run) are
 * all opened first (which validates every path), then written, then
 * committed: device copies first, renames last, so that a failure leaves
 * no regular file changed. */
#ifndef RF_OUTFILE_H
#define RF_OUTFILE_H

#include <stdio.h>

#include "rf_common.h"

typedef struct rf_outfile {
    char *path;      /* as given (for messages) */
    char *target;    /* what is replaced: path with symlinks resolved */
    char *tmp;       /* temporary beside target; NULL when staging for a device */
    FILE *f;         /* where the caller writes */
    bool direct;     /* target is not a regular file: copy into it on commit */
} rf_outfile;

/* Validates the path and opens the staging file; on failure fills st
 * ("cannot write 'PATH': is a directory") and leaves nothing behind. */
bool rf_outfile_open(rf_outfile *o, const char *path, rf_status *st);
/* Flushes and installs the data at the path; on failure removes the
 * temporary and fills st. Always releases o. */
bool rf_outfile_commit(rf_outfile *o, rf_status *st);
/* Discards what was written (the path is left as it was). Safe on a
 * zeroed or already released rf_outfile. */
void rf_outfile_abort(rf_outfile *o);

/* Commits several files as one: every file's data is flushed and checked
 * first, then devices are written, then regular files renamed. On failure
 * the remaining ones are aborted. Always releases all of them. */
bool rf_outfile_commit_all(rf_outfile *o, int n, rf_status *st);

/* Writes a whole buffer to path with the rules above. */
bool rf_write_file_whole(const char *path, const void *data, size_t len, rf_status *st);

#endif
