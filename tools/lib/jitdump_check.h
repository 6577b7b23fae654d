/*
 * jitdump_check.h — a whole jitdump file checked against what perf inject --jit needs
 * (`jitherald check`), optionally printed record by record (`jitherald inspect`): the rules
 * between records that jhr_jd_next (jitdump_read.h) does not know — DEBUG_INFO and
 * UNWINDING_INFO right before their LOAD, code_index never reused, MOVE of a known LOAD
 * from where it is, line addresses inside the code, unwind tables that match the code in
 * perf's synthetic ELF (eh_frame.h).
 */
#ifndef JHR_JITDUMP_CHECK_H
#define JHR_JITDUMP_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/jitdump_read.h"

struct jhr_jd_stats { size_t records, loads, moves, debug, unwind, closes, unknown; };

/*
 * Validate the whole file. Prints a line per record to out when out is not NULL (the
 * `inspect` view; verbose adds line tables and unwind rules). Returns 0 if perf will accept
 * everything, JH_EFORMAT at the first problem (the message, with offset and record, is in
 * r->err; out stops there). Warnings that do not stop perf (no CLOSE record yet, an unknown
 * record id) go to warn when not NULL. *stats (if not NULL) counts what was read.
 */
int jhr_jd_check(struct jhr_jd *r, const uint8_t *data, size_t len, FILE *out, bool verbose,
                 FILE *warn, struct jhr_jd_stats *stats);

#endif
