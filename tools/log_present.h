/*
 * log_present.h — the views of `jitherald log` (cmd_log.c) over an audit log read by the
 * reader library (lib/auditlog_read.h): text, disassembly, C structs from DWARF, perf's
 * files, HTML. They print to a FILE and return 0, or -1 when they could not.
 */
#ifndef JHC_LOG_PRESENT_H
#define JHC_LOG_PRESENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "lib/auditlog_read.h"

/* log_text.c: `info`, one record of `list`, `events [NAME]`, `code [NAME]`, `show`. */
void jhc_log_info(FILE *f, const struct jhr_al *lf);
/* The files holding code the log recorded by reference: each, where it was read from or
 * why not; with missing, only those whose code was not all read (a warning). */
void jhc_log_cfiles(FILE *f, const struct jhr_al *lf, bool missing);
void jhc_log_record(FILE *f, const struct jhr_al *lf, size_t i);
/* events [NAME], code [NAME]: 0 when NAME matches nothing (then nothing is printed). */
size_t jhc_log_events(FILE *f, const struct jhr_al *lf, const char *only);
size_t jhc_log_code(FILE *f, const struct jhr_al *lf, const char *only);
/* A function (by name or address: disassembled) or a memory snapshot (decoded as `type`,
 * or its hint, with the DWARF of vm; else as bytes) at record `at`. The exit status. */
int jhc_log_show(FILE *out, const struct jhr_al *lf, const char *what, const char *vm,
                 const char *type, size_t at);

/* log_dwarf.c: decode the memory snapshot m as C type m->hint using the DWARF of vm,
 * following pointers into other memory logged up to record `at`. */
struct jhc_types;
struct jhc_types *jhc_types_open(const char *vm, char *err, size_t errlen);
void jhc_types_close(struct jhc_types *dt);
/* text or html. 0, or -1 when the type is unknown (message printed to f). */
int jhc_types_print(struct jhc_types *dt, const struct jhr_al *lf, const struct jhr_al_mem *m,
                    size_t at, FILE *f, bool html);

/* log_disasm.c; jhc_disasm_source: show source text beside file:line (default true), of
 * files under the current directory, or under the directories given to jhc_source_allow
 * (0, or -errno when dir is not a directory) when there are any. */
extern bool jhc_disasm_source;
int jhc_source_allow(const char *dir);
int jhc_disasm_print(const struct jhr_al *lf, const struct jhr_al_fn *fn, FILE *f, bool html);

/* log_export.c: what the perfmap and jitdump channels would have written; the jitdump for
 * arch, the architecture the log recorded (jhc_log_arch). */
struct jh__arch;
int jhc_export_perfmap(const struct jhr_al *lf, FILE *f);
/* The lines the perfmap channel wrote, in its order (each add, and each move at its new
 * start): fn(arg, start, size, name) for each until it returns nonzero, which is returned. */
int jhc_perfmap_each(const struct jhr_al *lf, void *arg,
                     int (*fn)(void *arg, uint64_t start, uint64_t size, const char *name));
int jhc_export_jitdump(const struct jhr_al *lf, const struct jh__arch *arch, FILE *f);
/* The architecture of the log's code (its header's "arch", fmt/arch.h), which the files
 * rebuilt from it are for, whatever the host; NULL, said on stderr as "jitherald log:
 * FILE: CMD: ...", when jitherald does not know it. */
const struct jh__arch *jhc_log_arch(const struct jhr_al *lf, const char *file, const char *cmd);
/* fn as the library's encoders take it (lines: fn->nlines rows of room). */
struct jh__func;
struct jh_line;
void jhc_func_of(const struct jhr_al_fn *fn, struct jh__func *out, struct jh_line *lines);

/* log_elf.c: the elfmap channel's image files, rebuilt into dir with their build-ids, for
 * arch (e_machine, CFI: jhc_log_arch); their paths and ids are listed on f. 0, or -1 when
 * dir or a file in it could not be made or written, or memory ran out (message printed). */
int jhc_export_elf(const struct jhr_al *lf, const struct jh__arch *arch, const char *dir,
                   FILE *f);

/* log_profile.c: the samples of perf.data at path named by the log, each by the code at
 * its address at its time, with how many the perf map names otherwise. The exit status:
 * 0, 1 (not a perf.data, or none of its samples are the log's process), 2 (unreadable). */
int jhc_log_profile(const struct jhr_al *lf, const char *path, FILE *out);
/* log_profile_cg.c: the same for a callgrind profile (text, len bytes), which has no time:
 * cost at an address several functions held is shown under all their names. */
int jhc_log_profile_cg(const struct jhr_al *lf, const char *text, size_t len, const char *path,
                       FILE *out);

/* log_report.c: one self-contained HTML page, joined with a profile s (log_samples.h,
 * loaded with detail) or NULL; dt may be NULL (structs shown as bytes). */
struct jhc_samples;
int jhc_report_html(const struct jhr_al *lf, const struct jhc_samples *s, struct jhc_types *dt,
                    FILE *f);
/* log_report_data.c: the page's data, as JSON (the format is described there). */
int jhc_report_json(const struct jhr_al *lf, const struct jhc_samples *s, struct jhc_types *dt,
                    FILE *f);
/* log_report_assets.c: the page's script and style (tools/report/page.js, page.css). */
extern const char jhc_report_js[], jhc_report_css[];

#endif
