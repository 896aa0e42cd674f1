/* File-name arithmetic (lexical: no file needs to exist). */
#ifndef RF_PATH_H
#define RF_PATH_H

#include "rf_common.h"

/* path made absolute against the current directory, with "." and ".."
 * components and repeated slashes removed. malloc'd. */
char *rf_path_absolute(const char *path);
/* The folder part of path ("a/b.lql" -> "a", "b.lql" -> "."). malloc'd. */
char *rf_path_dirname(const char *path);
/* If path lies inside folder dir (both absolute and normalised), the rest
 * of it after "dir/"; else NULL. Points into path. */
const char *rf_path_inside(const char *path, const char *dir);

#endif
