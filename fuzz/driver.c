/*
 * driver.c — runs a libFuzzer-style target without libFuzzer, so every fuzz target is also
 * a regression test in `make test`: it replays each file of the corpus directories given on
 * the command line, then -runs=N deterministic mutations of them (bit flips, truncations,
 * byte splices, length fields set to extremes). With clang, `make fuzz` can build the same
 * targets against the real libFuzzer for open-ended runs.
 * A corpus path that is missing, unreadable or holds no input is an error (exit 2): a
 * replay of nothing would pass while checking only random bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input { uint8_t *p; size_t n; };
static struct input *inputs;
static size_t ninputs;

static void die(const char *path, const char *why)
{
    fprintf(stderr, "fuzz: corpus %s: %s\n", path, why);
    exit(2);
}

static void add_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, strerror(errno));
    struct input in = { NULL, 0 };
    size_t cap = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (in.n == cap) {
            cap = cap ? cap * 2 : 4096;
            in.p = realloc(in.p, cap);
            if (!in.p)
                die(path, "out of memory");
        }
        in.p[in.n++] = (uint8_t)c;
    }
    if (ferror(f))
        die(path, "read error");
    fclose(f);
    inputs = realloc(inputs, (ninputs + 1) * sizeof *inputs);
    if (!inputs)
        die(path, "out of memory");
    inputs[ninputs++] = in;
}

static void add_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        die(path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        add_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d)
        die(path, strerror(errno));
    size_t before = ninputs;
    struct dirent *de;
    char buf[4096];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(buf, sizeof buf, "%s/%s", path, de->d_name);
        add_file(buf);
    }
    closedir(d);
    if (ninputs == before)
        die(path, "no input in this directory");
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    long runs = 10000;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-runs=", 6))
            runs = atol(argv[i] + 6);
        else if (argv[i][0] != '-')
            add_path(argv[i]);
    }
    for (size_t i = 0; i < ninputs; i++)
        LLVMFuzzerTestOneInput(inputs[i].p, inputs[i].n);
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    size_t cap = 1 << 16;
    uint8_t *m = malloc(cap);
    for (long r = 0; r < runs && m; r++) {
        size_t n = 0;
        if (ninputs) {
            struct input *in = &inputs[next() % ninputs];
            n = in->n < cap ? in->n : cap;
            memcpy(m, in->p, n);
        } else {
            n = next() % 256;
            for (size_t k = 0; k < n; k++) m[k] = (uint8_t)next();
        }
        int muts = 1 + (int)(next() % 8);
        for (int k = 0; k < muts && n; k++) {
            size_t at = next() % n;
            switch (next() % 6) {
            case 0: m[at] ^= (uint8_t)(1u << (next() % 8)); break;
            case 1: m[at] = (uint8_t)next(); break;
            case 2: n = at; break;                                   /* truncate */
            case 3: if (n - at >= 4) memset(m + at, 0xff, 4); break; /* huge length */
            case 4: if (n - at >= 4) memset(m + at, 0, 4); break;    /* zero length */
            case 5: if (ninputs) {                                   /* splice */
                        struct input *o = &inputs[next() % ninputs];
                        if (o->n) { size_t from = next() % o->n, len = o->n - from;
                                    if (len > cap - at) len = cap - at;
                                    memcpy(m + at, o->p + from, len);
                                    if (at + len > n) n = at + len; } }
                    break;
            }
        }
        LLVMFuzzerTestOneInput(m, n);
    }
    free(m);
    printf("fuzz: %zu corpus inputs, %ld mutations, no crash\n", ninputs, runs);
    return 0;
}
