/*
 * auditlog_msgpack_walk.c — an independent reader of the audit log, for
 * tests/integration/auditlog_minijit.sh: msgpack-c walks the file as a stream of msgpack
 * objects (each frame is a uint32 followed by one map whose first key is "type") and
 * prints "N frames, M records". Exit 0 only if every object was one of those.
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
    if (!f) {
        fprintf(stderr, "usage: auditlog_msgpack_walk LOG\n");
        return 2;
    }
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, f), off = 0;
    fclose(f);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    int frames = 0, maps = 0;
    while (off < n) {
        if (msgpack_unpack_next(&u, buf, n, &off) != MSGPACK_UNPACK_SUCCESS)
            return 1;
        if (u.data.type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
            frames++;
            continue;
        }
        if (u.data.type != MSGPACK_OBJECT_MAP || u.data.via.map.size == 0)
            return 2;
        msgpack_object_kv *kv = u.data.via.map.ptr;
        if (kv[0].key.type != MSGPACK_OBJECT_STR || kv[0].key.via.str.size != 4 ||
            memcmp(kv[0].key.via.str.ptr, "type", 4))
            return 3;
        maps++;
    }
    msgpack_unpacked_destroy(&u);
    printf("%d frames, %d records\n", frames, maps);
    return frames == maps ? 0 : 4;
}
