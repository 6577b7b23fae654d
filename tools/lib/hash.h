/*
 * hash.h — the two hash functions the reader library's open-addressing tables share:
 * FNV-1a for strings, a Fibonacci multiplier for 64-bit keys (ids, code indexes). Tables
 * take the low bits (jhr_hash_str, jhr_hash_u64) or high ones (auditlog_read.c), and are
 * always a power of two in size.
 */
#ifndef JHR_HASH_H
#define JHR_HASH_H

#include <stddef.h>
#include <stdint.h>

#define JHR_HASH_MUL 0x9e3779b97f4a7c15ull

static inline uint64_t jhr_hash_str(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

static inline uint64_t jhr_hash_u64(uint64_t key) { return key * JHR_HASH_MUL; }

#endif
