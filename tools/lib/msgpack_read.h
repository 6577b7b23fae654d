/*
 * msgpack_read.h — a bounded msgpack decoder (https://msgpack.org/ spec, 2017), the
 * reading half of fmt/msgpack.h, for the audit-log reader (auditlog_read.h). Every length
 * is checked against the bytes that are left, and nothing recurses on input: no value can
 * make it read out of bounds, allocate, or loop.
 *
 *     struct jhr_mp map, v;
 *     if (jhr_mp_decode(p, end, &map) == 0 && jhr_mp_get(&map, "name", &v) == 0 &&
 *         v.t == JHR_MP_STR)
 *         printf("%.*s\n", (int)v.n, (const char *)v.p);
 */
#ifndef JHR_MSGPACK_READ_H
#define JHR_MSGPACK_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum jhr_mp_type { JHR_MP_NIL, JHR_MP_BOOL, JHR_MP_UINT, JHR_MP_INT, JHR_MP_DOUBLE, JHR_MP_STR,
                   JHR_MP_BIN, JHR_MP_ARRAY, JHR_MP_MAP, JHR_MP_EXT };

/* One decoded value. Scalars are in v; str/bin/ext bytes at p (n bytes); for array/map,
 * p is the first element and n the number of elements (pairs for a map); end is where the
 * whole value (with its elements) ends, so containers can be walked and skipped. */
struct jhr_mp {
    enum jhr_mp_type t;
    union { uint64_t u; int64_t i; double d; bool b; } v;
    const uint8_t *p, *end;
    uint32_t n;
    int8_t ext;
};

/* Decode the value at [p, end). 0 or -1 (malformed or cut short). */
int jhr_mp_decode(const uint8_t *p, const uint8_t *end, struct jhr_mp *out);
/* Only the header of the value at p: its type, a scalar's value, a string's bytes; for an
 * array or map the number of elements (n) but not where it ends. Returns the byte after
 * what it read (for a container, its first element), or NULL. Walkers that follow many
 * values at once (auditlog_resync.c) step with it. */
const uint8_t *jhr_mp_head(const uint8_t *p, const uint8_t *end, struct jhr_mp *v);
/* In a map: the value of key, 0 if found, -1 otherwise. */
int jhr_mp_get(const struct jhr_mp *map, const char *key, struct jhr_mp *out);
/* Helpers for typical fields: return false when missing or of another type. An unsigned
 * field may also be an 8-byte ext (an address). */
bool jhr_mp_get_u64(const struct jhr_mp *map, const char *key, uint64_t *out);
bool jhr_mp_get_str(const struct jhr_mp *map, const char *key, const char **s, uint32_t *n);
bool jhr_mp_str_eq(const struct jhr_mp *v, const char *s);
/* Is v an address (JH_ATTR_ADDR: ext JH__MP_EXT_ADDR, 8 bytes)? Then *addr is set. */
bool jhr_mp_addr(const struct jhr_mp *v, uint64_t *addr);
/* Iterate over an array or map: *it starts at v->p; each call decodes the next element. */
int jhr_mp_next(const struct jhr_mp *container, const uint8_t **it, struct jhr_mp *out);
/* A big-endian number of n (<= 8) bytes. */
uint64_t jhr_mp_be(const uint8_t *p, int n);
/* Print a value in a JSON-like form (events, unknown records); depth limits nesting. */
void jhr_mp_print(FILE *f, const struct jhr_mp *v, int depth);

#endif
