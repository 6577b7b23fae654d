/*
 * describe.h — from the JIT's `struct jh_code` to the core's own entry: read the struct
 * field by field as far as the caller's sz goes, validate every field before any channel
 * sees it, and copy what is kept (file names interned: thousands of functions share a few).
 */
#ifndef JH__CORE_DESCRIBE_H
#define JH__CORE_DESCRIBE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "channels/channel.h"
#include "jitherald.h"

/* The caller's description as this library's struct: fields past c->sz read as zero.
 * -EINVAL when sz does not reach `size` or the bytes past what we know are not zero.
 * On -EINVAL, why (len bytes, may be NULL) says which field and why, for the diagnostic:
 * ".sz is 0, less than the 24 bytes up to .size: set .sz = sizeof(struct jh_code)". */
int jh__code_read(struct jh_code *out, const struct jh_code *c, char *why, size_t len);

/* 0, or -EINVAL for a malformed description (see jh_code_add in jitherald.h), with why
 * as above ("lines[3].offset 0x10 comes before lines[2].offset 0x20: ..."). */
int jh__code_validate(const struct jh_code *c, char *why, size_t len);

/* A JH_UNWIND_EH_FRAME description (c, the library's own copy) turned into the
 * JH_UNWIND_CFI one every channel reads: the FDE translated into cfi (an empty buffer the
 * caller frees after c's last use), the CIE's personality and the FDE's LSDA filled in
 * where c has none. Other kinds: nothing to do. 0, -EINVAL (why says why), -ENOMEM. */
int jh__code_lower(struct jh_code *c, struct jh__buf *cfi, char *why, size_t len);

/* code read (an older or newer caller's, field by field), lowered (its .eh_frame translated
 * once, into *tmp and cfi) and validated: the description to add, or NULL, *err saying why
 * (-EINVAL: which field and why also to diag, at info: the return value already says it
 * failed; -ENOMEM). tmp and cfi are not used for a description of this struct's size
 * without JH_UNWIND_EH_FRAME. */
struct jh__diag;
const struct jh_code *jh__code_prepare(const struct jh__diag *diag, const struct jh_code *code,
                                      struct jh_code *tmp, struct jh__buf *cfi, char *why,
                                      size_t whylen, int *err);

/* Interned strings, owned by a context. */
struct jh__strings {
    char **slot;
    size_t n, cap;
};
const char *jh__intern(struct jh__strings *s, const char *str);    /* NULL: -ENOMEM */
void jh__strings_free(struct jh__strings *s);

/* A new entry holding a copy of c (validated), or NULL on ENOMEM. */
struct jh__entry *jh__entry_new(struct jh__strings *s, const struct jh_code *c);
/* Entries for c[0..n) (validated; n <= JH__ENTRY_GROUP) in one allocation, into out[0..n):
 * true; false (nothing made, ENOMEM) otherwise. Each is freed with jh__entry_free, from any
 * thread; the block goes with the last of them. */
#define JH__ENTRY_GROUP 64
bool jh__entries_new(struct jh__strings *s, const struct jh_code *const *c, size_t n,
                     struct jh__entry **out);
void jh__entry_free(struct jh__entry *e);

#endif
