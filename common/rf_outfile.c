/* Whole-or-nothing output files that never replace a device, FIFO or
 * symbolic link (rf_outfile.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "rf_outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool fail_path(rf_status *st, const char *path, const char *why)
{
    return rf_fail(st, RF_EXIT_RUNTIME_ERROR, "cannot write '%s': %s", path, why);
}

static void release(rf_outfile *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    free(o->path);
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

void rf_outfile_abort(rf_outfile *o) { release(o); }

bool rf_outfile_open(rf_outfile *o, const char *path, rf_status *st)
{
    memset(o, 0, sizeof *o);
    struct stat lsb, sb;
    char *target = NULL;
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        if (stat(path, &sb) != 0)
            return fail_path(st, path, errno == ENOENT ? "dangling symbolic link" : strerror(errno));
        char *real = S_ISREG(sb.st_mode) ? realpath(path, NULL) : NULL;
        if (S_ISREG(sb.st_mode) && !real)
            return fail_path(st, path, strerror(errno));
        /* A regular file: replace what the link names, keep the link.
         * Anything else is written through the link itself (which also
         * serves /proc/self/fd/N, whose target has no name). */
        target = rf_strdup(real ? real : path);
        free(real);
    } else {
        target = rf_strdup(path);
    }
    bool exists = stat(target, &sb) == 0;
    if (!exists && errno != ENOENT) {
        fail_path(st, path, strerror(errno));
        free(target);
        return false;
    }
    if (exists && S_ISDIR(sb.st_mode)) {
        free(target);
        return fail_path(st, path, "is a directory");
    }
    o->path = rf_strdup(path);
    o->target = target;
    if (exists && !S_ISREG(sb.st_mode)) {
        /* A device, FIFO or terminal: stage the data, copy it in on commit. */
        if (access(target, W_OK) != 0) {
            fail_path(st, path, strerror(errno));
            release(o);
            return false;
        }
        o->direct = true;
        o->f = tmpfile();
        if (!o->f) {
            fail_path(st, path, strerror(errno));
            release(o);
            return false;
        }
        return true;
    }
    /* A temporary beside the target: rename is atomic within a folder. */
    const char *slash = strrchr(target, '/');
    o->tmp = slash ? rf_sprintf("%.*s/.%s.tmp.XXXXXX", (int)(slash - target), target, slash + 1)
                   : rf_sprintf(".%s.tmp.XXXXXX", target);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        fail_path(st, path, strerror(errno));
        release(o);
        return false;
    }
    /* mkstemp makes the file private; keep the old file's mode, or give a
     * new one the usual mode under the umask. */
    mode_t mode;
    if (exists) {
        mode = sb.st_mode & 07777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "wb"))) {
        fail_path(st, path, strerror(errno));
        if (!o->f)
            close(fd);
        release(o);
        return false;
    }
    return true;
}

/* Flushes the staged data and checks that every byte was written. */
static bool finish_writing(rf_outfile *o, rf_status *st)
{
    if (fflush(o->f) != 0 || ferror(o->f))
        return fail_path(st, o->path, strerror(errno ? errno : EIO));
    if (!o->direct && fsync(fileno(o->f)) != 0)
        return fail_path(st, o->path, strerror(errno));
    return true;
}

/* Copies the staged data into the device or FIFO. */
static bool copy_into_target(rf_outfile *o, rf_status *st)
{
    rewind(o->f);
    int fd = open(o->target, O_WRONLY | O_NOCTTY);
    if (fd < 0)
        return fail_path(st, o->path, strerror(errno));
    char buf[1 << 16];
    bool ok = true;
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, o->f)) > 0) {
        size_t done = 0;
        while (ok && done < n) {
            ssize_t w = write(fd, buf + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                ok = fail_path(st, o->path, w < 0 ? strerror(errno) : "short write");
            else
                done += (size_t)w;
        }
    }
    if (ok && ferror(o->f))
        ok = fail_path(st, o->path, "cannot read the staged data back");
    if (close(fd) != 0 && ok)
        ok = fail_path(st, o->path, strerror(errno));
    return ok;
}

static bool install(rf_outfile *o, rf_status *st)
{
    if (o->direct)
        return copy_into_target(o, st);
    FILE *f = o->f;
    o->f = NULL;
    if (fclose(f) != 0)
        return fail_path(st, o->path, strerror(errno));
    if (rename(o->tmp, o->target) != 0)
        return fail_path(st, o->path, strerror(errno));
    free(o->tmp);
    o->tmp = NULL;   /* now the file itself: release() must not unlink it */
    return true;
}

bool rf_outfile_commit(rf_outfile *o, rf_status *st) { return rf_outfile_commit_all(o, 1, st); }

bool rf_outfile_commit_all(rf_outfile *o, int n, rf_status *st)
{
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = finish_writing(&o[i], st);
    /* Devices first: they are the ones that can still refuse the data
     * (a full disk behind /dev/full); renames within a folder do not. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n && ok; i++)
            if (o[i].direct == (pass == 0))
                ok = install(&o[i], st);
    for (int i = 0; i < n; i++)
        release(&o[i]);
    return ok;
}

bool rf_write_file_whole(const char *path, const void *data, size_t len, rf_status *st)
{
    rf_outfile o;
    if (!rf_outfile_open(&o, path, st))
        return false;
    if (len && fwrite(data, 1, len, o.f) != len) {
        fail_path(st, path, strerror(errno ? errno : EIO));
        rf_outfile_abort(&o);
        return false;
    }
    return rf_outfile_commit(&o, st);
}
