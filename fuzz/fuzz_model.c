/* Fuzz target: the model-card parser (models/NAME.json), then what every user of a card
 * computes from it: parameter counts and the memory model's peak at the default layout. */
#include "fuzz/fuzz.h"
#include "models/memory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    agoq_model_card m;
    if (agoq_model_load(fuzz_file(data, size), &m) != 0) return 0;
    volatile double p = agoq_model_params(&m);
    (void)p;
    agoq_mem_setup ms;
    agoq_mem_setup_default(&ms, &m);
    agoq_mem_breakdown bd;
    if (agoq_mem_setup_check(&ms) == 0) agoq_memory_peak(&ms, NULL, &bd);
    return 0;
}
