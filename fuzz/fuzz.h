/* Shared by the libFuzzer harnesses (make fuzz): every parser of agoq reads a file, so each
 * input is written to one temporary file per process and the real entry point reads it back.
 * Built with clang -fsanitize=fuzzer,address,undefined; a crash or sanitizer report is a bug,
 * and every one found becomes a regression test in tests/test_hostile_*.c. */
#ifndef AGOQ_FUZZ_H
#define AGOQ_FUZZ_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes data to /tmp/agoq_fuzz.<pid>.json and returns that path (static buffer). */
static inline const char *fuzz_file(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/agoq_fuzz.%ld.json", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path;
}
#endif
