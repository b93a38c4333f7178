/* Fuzz target: the experiment-file parser, through `agoq run FILE --check` (every key of the
 * file and of its kind's config validated, nothing run, nothing written). */
#include "fuzz/fuzz.h"
#include "runners/commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *argv[] = {"run", (char *)fuzz_file(data, size), "--check", "-q", "--backend", "cpu", NULL};
    cmd_run(6, argv);
    return 0;
}
