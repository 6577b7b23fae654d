/*
 * bytes.h — inside the LLVM adapter: a bounds-checked little-endian reader for the
 * .eh_frame records (eh_frame.cc) and their call-frame instructions (cfa.cc). Any read
 * past the end sets bad and yields zeros from then on; callers check bad once.
 */
#ifndef JITHERALD_LLVM_BYTES_H
#define JITHERALD_LLVM_BYTES_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace jitherald_llvm {

struct Reader {
    const uint8_t *base, *p, *end;
    bool bad = false;

    uint64_t pos() const { return uint64_t(p - base); }
    bool need(size_t n)
    {
        if (bad || size_t(end - p) < n)
            return !(bad = true);
        return true;
    }
    uint64_t fixed(size_t n)
    {
        uint64_t v = 0;
        if (!need(n))
            return 0;
        for (size_t i = 0; i < n; i++)
            v |= uint64_t(p[i]) << (8 * i);
        p += n;
        return v;
    }
    uint64_t uleb()
    {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!need(1) || shift > 63)
                return bad = true, 0;
            uint8_t b = *p++;
            v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80))
                return v;
        }
    }
    int64_t sleb()
    {
        uint64_t v = 0;
        unsigned shift = 0;
        uint8_t b;
        do {
            if (!need(1) || shift > 63)
                return bad = true, 0;
            b = *p++;
            v |= uint64_t(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40))
            v |= ~uint64_t(0) << shift;
        return int64_t(v);
    }
    std::string cstr()
    {
        const uint8_t *z = p;
        while (z < end && *z)
            z++;
        if (z == end)
            return bad = true, std::string();
        std::string s(reinterpret_cast<const char *>(p), size_t(z - p));
        p = z + 1;
        return s;
    }
};

} // namespace jitherald_llvm

#endif
