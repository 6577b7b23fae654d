/*
 * files.h — how the CLI gets at files: a whole file read into memory, and the directory
 * the library writes its files to.
 *
 * Only regular files are read (base/files.h, jh__open_regular): a FIFO or a device named
 * on the command line, or planted where a default name points (/tmp/perf-PID.map), fails
 * at once instead of blocking the read forever.
 */
#ifndef JHR_FILES_H
#define JHR_FILES_H

#include <stddef.h>
#include <stdint.h>

/* Read a whole file into memory (malloc'd; free it). 0 or a negative errno: -EISDIR for a
 * directory, -EINVAL for anything else that is not a regular file. */
int jhr_read_file(const char *path, uint8_t **data, size_t *len);

/* Where jitherald's files are: $JITHERALD_DIR when set and not empty, else the library's
 * default (jh__default_dir: /tmp/jitherald-<euid>). */
void jhr_dir(char *buf, size_t len);

#endif
