/*
 * symbol.h — the symbol the library would derive for a name (fmt/symbol.h), for the
 * preload of `jitherald run`, which may not include src/fmt itself (scripts/check-layers.sh).
 *
 * Why: code the preload hands to two contexts (node's 2,182 builtins, "Builtin:ArrayMap",
 * into jhp_files and jhp_rec) had its symbol derived from its name twice, once per
 * jh_code_add_many (~2.1M instructions of node's start under callgrind, issue 30). Derived
 * once here and passed as jh_code.symbol, every channel sees exactly what the core would
 * have derived: the same bytes, in the entry's own block.
 */
#ifndef JHR_SYMBOL_H
#define JHR_SYMBOL_H

#include <stddef.h>

/* The most bytes jhr_symbol writes for a name of name_len bytes: the symbol and its NUL. */
#define JHR_SYMBOL_MAX(name_len) ((name_len) + 2)

/* out (cap bytes, at least JHR_SYMBOL_MAX(strlen(name))) gets the symbol the library
 * derives for name: returns out, or NULL when the name is a symbol already (jh_code.symbol
 * NULL then, as the library's own default) or cap is too small. */
const char *jhr_symbol(char *out, size_t cap, const char *name);
/* The same where out has JHR_SYMBOL_MAX(strlen(name)) bytes, known by the caller: the
 * symbol's length (without its NUL) in *sym_len, 0 when NULL is returned. */
const char *jhr_symbol_n(char *out, const char *name, size_t *sym_len);

#endif
