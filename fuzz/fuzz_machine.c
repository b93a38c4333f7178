/* Fuzz target: the machine-file parser (experiments/machines/NAME.json) with its calibration
 * sources (measured-results files it names are read when present). */
#include "fuzz/fuzz.h"
#include "sim/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    agoq_machine *m = calloc(1, sizeof *m);
    agoq_machine_load(fuzz_file(data, size), m);
    free(m);
    return 0;
}
