#include "rf_path.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *rf_path_absolute(const char *path)
{
    char *joined;
    if (path[0] == '/') {
        joined = rf_strdup(path);
    } else {
        char *cwd = getcwd(NULL, 0);
        joined = rf_sprintf("%s/%s", cwd ? cwd : ".", path);
        free(cwd);
    }
    /* Normalise component by component into out (never longer than joined). */
    size_t n = strlen(joined);
    char *out = rf_malloc(n + 2);
    size_t len = 0;
    for (char *s = joined; *s;) {
        while (*s == '/')
            s++;
        char *e = s;
        while (*e && *e != '/')
            e++;
        size_t cl = (size_t)(e - s);
        if (cl == 0 || (cl == 1 && s[0] == '.')) {
            /* nothing */
        } else if (cl == 2 && s[0] == '.' && s[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--;   /* the slash before the dropped component */
        } else {
            out[len++] = '/';
            memcpy(out + len, s, cl);
            len += cl;
        }
        s = e;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    free(joined);
    return out;
}

char *rf_path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return rf_strdup(".");
    if (slash == path)
        return rf_strdup("/");
    return rf_strndup(path, (size_t)(slash - path));
}

const char *rf_path_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/' && path[1] ? path + 1 : NULL;
    if (strncmp(path, dir, n) != 0 || path[n] != '/' || !path[n + 1])
        return NULL;
    return path + n + 1;
}
