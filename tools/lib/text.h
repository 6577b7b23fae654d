/*
 * text.h — bytes from a file on their way to a person. Everything the reader library
 * prints comes from files anyone may have written: a name must not be able to send escape
 * sequences to a terminal or markup to a browser.
 */
#ifndef JHR_TEXT_H
#define JHR_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Bytes for a terminal: control characters (and DEL) become '?'. */
void jhr_text_safe(FILE *f, const void *p, size_t n);

/* A string for HTML: the five special characters as references, other control characters
 * but newline and tab as '?'. Stops at a NUL. */
void jhr_html_escape(FILE *f, const char *s, size_t n);

/* printf into err[errlen] (nothing when err is NULL or errlen 0): the readers' messages. */
__attribute__((format(printf, 3, 4)))
void jhr_errf(char *err, size_t errlen, const char *fmt, ...);

#endif
