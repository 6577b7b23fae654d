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

/* Read a whole file into memory (malloc'd; free it): its bytes up to the size it had when
 * opened. 0 or a negative errno: -EISDIR for a directory, -EINVAL for anything else that
 * is not a regular file. */
int jhr_read_file(const char *path, uint8_t **data, size_t *len);
/* The same for a file found by a name anyone can guess (/tmp/perf-PID.map): it must also
 * be ours with a single link (-EPERM), not a symlink (-ELOOP), and at most max bytes
 * (-EFBIG). A file the user names on the command line goes through jhr_read_file. */
int jhr_read_guessed(const char *path, size_t max, uint8_t **data, size_t *len);
/* Why a file was refused or could not be read, in words (base/files.h, plus -EFBIG). */
const char *jhr_file_error(int err);

/* Where jitherald's files are: $JITHERALD_DIR when set and not empty, else the library's
 * default (jh__default_dir: /tmp/jitherald-<euid>). */
void jhr_dir(char *buf, size_t len);

#endif
