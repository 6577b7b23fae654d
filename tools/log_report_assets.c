/*
 * log_report_assets.c — the HTML report's script and style, kept as the files they are
 * (tools/report/page.js, page.css: readable, linted as JavaScript and CSS) and embedded in
 * the CLI at build time by the assembler, each followed by a NUL, so that the page stays
 * one self-contained file and the CLI needs nothing beside it. The Makefile makes this
 * object depend on both files.
 */
#include "log_present.h"

__asm__(".pushsection .rodata\n"
        ".globl jhc_report_js\n"
        "jhc_report_js:\n"
        ".incbin \"tools/report/page.js\"\n"
        ".byte 0\n"
        ".globl jhc_report_css\n"
        "jhc_report_css:\n"
        ".incbin \"tools/report/page.css\"\n"
        ".byte 0\n"
        ".popsection\n");
