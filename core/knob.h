/* Environment knobs: the one reader of every AGOQ_* environment variable (benchmark, test and
 * diagnostic switches of the kernels, collectives and results code), shared by C and CUDA.
 *
 * Each call reads the variable once (one getenv) and returns its value; nothing is cached, so a
 * test may switch a knob between calls (setenv) and a caller that wants a value for the whole
 * process keeps its own static. Unset or empty: the default. A value outside what the knob
 * accepts is an error: one line naming the variable, the value and what is valid, then exit(1)
 * (the project's bad-input rule: never a silent default), e.g.
 *   agoq: environment AGOQ_WG_STAGES=7: expected one of auto, 3, 4
 *   agoq: environment AGOQ_WG_GROUP_M=99: expected an integer in 1..64
 * Integers are decimal, with an optional leading '-', nothing before or after (no spaces, no
 * suffixes); a switch is an integer knob in 0..1.
 *
 * From a .cu file: #include "core/knob.h" (extern "C"); core/knob.c is compiled with cc and
 * linked into every binary. Tested by tests/core/test_knob.c. */
#ifndef AGOQ_KNOB_H
#define AGOQ_KNOB_H

#ifdef __cplusplus
extern "C" {
#endif

/* $name as an integer in min..max (inclusive); def when unset or empty (def may lie outside the
 * range, e.g. -1 for "not set"). */
int agoq_knob_int(const char *name, int def, int min, int max);
/* $name as one of choices (a NULL-terminated list, compared exactly): its index; def when unset
 * or empty (def may be -1 or any value the caller maps to "not set"). */
int agoq_knob_choice(const char *name, int def, const char *const choices[]);
/* $name as given, for knobs with a syntax of their own: NULL when unset or empty. The caller
 * parses it and refuses a bad value with agoq_knob_bad. */
const char *agoq_knob_str(const char *name);
/* The knobs' one-line error ("agoq: environment NAME=VALUE: expected VALID") and exit(1). */
void agoq_knob_bad(const char *name, const char *value, const char *valid) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif
#endif
