/* The training text and its byte tokenizer.
 * Tokenizer: one token per byte (vocab 256, token = byte value): no merges, nothing to ship.
 * Corpora:
 *   grammar  generated here: sentences of a small probabilistic English grammar with number
 *            agreement (subject-verb), nested prepositional phrases and clause joins; words drawn
 *            Zipf-like (p ~ 1/rank). Train and held-out text are independent streams of the same
 *            grammar (seeds seed and seed + 1), so held-out loss measures generalisation, not
 *            memorisation. Fully determined by (seed, bytes): identical on every machine.
 *   file     any text file; its last `heldout_frac` bytes are the held-out split. */
#ifndef AGOQ_TRAIN_CORPUS_H
#define AGOQ_TRAIN_CORPUS_H
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint8_t *train, *heldout;
    size_t n_train, n_heldout; /* bytes = tokens */
} train_corpus;

int train_corpus_grammar(train_corpus *c, uint64_t seed, size_t train_bytes, size_t heldout_bytes);
/* 0, or -1 without a message (the caller names the config key): unreadable or empty file */
int train_corpus_file(train_corpus *c, const char *path, double heldout_frac);
void train_corpus_free(train_corpus *c);
/* Writes exactly n bytes of grammar text for `seed` into out. */
void train_grammar_text(uint64_t seed, uint8_t *out, size_t n);

/* One window: tokens = text[start .. start+T), targets = text[start+1 .. start+T]. */
void train_window(const uint8_t *text, size_t start, int t, int *tokens, int *targets);
/* b windows at uniformly drawn starts (needs n > t). */
void train_sample_batch(const uint8_t *text, size_t n, int b, int t, agoq_rng *rng, int *tokens, int *targets);

#ifdef __cplusplus
}
#endif
#endif
