/*
 * log_libs.h — a shared library a log command opens the first time it needs it, rather
 * than one the CLI links: linked, each was loaded and relocated at every start of the CLI,
 * `jitherald run` included, which starts before every VM it runs and needs none of them
 * (tests/integration/run_start.sh). capstone (log_disasm.c), libdw (log_dwarf.c), zlib
 * (log_report.c).
 */
#ifndef JHC_LOG_LIBS_H
#define JHC_LOG_LIBS_H

#include <stdbool.h>
#include <stddef.h>

struct jhc_lib {
    const char *soname;
    const char *const *names;   /* n symbols, each stored through slots[i] */
    void **const *slots;
    size_t n;
    int state;                  /* 0 not tried, 1 loaded, -1 missing (or a symbol is) */
};

/* Opened, with every symbol found: true (the first call does the work, later ones only
 * answer). Not thread-safe: the CLI's commands are single-threaded. */
bool jhc_lib_load(struct jhc_lib *lib);

#endif
