/* core/knob.c: environment knobs read strictly. Good values, the default when unset or empty,
 * and every kind of bad value refused in one line naming the variable, the value and what is
 * valid (in a forked child: agoq_knob_* exit). The variable is private to this file. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/knob.h"
#include "tests/test.h"

#define KNOB "AGOQ_TEST_KNOB_H7"

static const char *const stages[] = {"auto", "3", "4", NULL};

TEST(knob_int_reads_good_values_and_defaults) {
    unsetenv(KNOB);
    CHECK(agoq_knob_int(KNOB, 8, 1, 64) == 8);
    CHECK(agoq_knob_int(KNOB, -1, 0, 1) == -1); /* a default outside the range: "not set" */
    setenv(KNOB, "", 1);
    CHECK(agoq_knob_int(KNOB, 8, 1, 64) == 8);
    static const struct { const char *v; int min, max, want; } good[] = {
        {"1", 1, 64, 1}, {"64", 1, 64, 64}, {"17", 1, 64, 17}, {"0", 0, 1, 0}, {"1", 0, 1, 1},
        {"-3", -5, 5, -3}, {"007", 0, 10, 7}, {"2147483647", 0, INT_MAX, INT_MAX}, {"0", 0, INT_MAX, 0},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv(KNOB, good[i].v, 1);
        const int got = agoq_knob_int(KNOB, 99, good[i].min, good[i].max);
        CHECK_MSG(got == good[i].want, "%s in %d..%d: got %d, want %d", good[i].v, good[i].min, good[i].max, got,
                  good[i].want);
    }
    unsetenv(KNOB);
}

TEST(knob_choice_reads_good_values_and_defaults) {
    unsetenv(KNOB);
    CHECK(agoq_knob_choice(KNOB, 0, stages) == 0);
    CHECK(agoq_knob_choice(KNOB, -1, stages) == -1);
    setenv(KNOB, "", 1);
    CHECK(agoq_knob_choice(KNOB, 2, stages) == 2);
    setenv(KNOB, "auto", 1);
    CHECK(agoq_knob_choice(KNOB, -1, stages) == 0);
    setenv(KNOB, "4", 1);
    CHECK(agoq_knob_choice(KNOB, -1, stages) == 2);
    /* read at every call: a test may switch a knob between calls */
    setenv(KNOB, "3", 1);
    CHECK(agoq_knob_choice(KNOB, -1, stages) == 1);
    setenv(KNOB, "hang:2", 1);
    CHECK(agoq_knob_str(KNOB) && !strcmp(agoq_knob_str(KNOB), "hang:2"));
    setenv(KNOB, "", 1);
    CHECK(agoq_knob_str(KNOB) == NULL);
    unsetenv(KNOB);
    CHECK(agoq_knob_str(KNOB) == NULL);
}

typedef struct { const char *value; int min, max; } int_case;
static void read_int(void *arg) {
    const int_case *c = arg;
    setenv(KNOB, c->value, 1);
    agoq_knob_int(KNOB, 0, c->min, c->max);
}
static void read_choice(void *arg) {
    setenv(KNOB, (const char *)arg, 1);
    agoq_knob_choice(KNOB, 0, stages);
}
static void read_bad(void *arg) { agoq_knob_bad(KNOB, (const char *)arg, "hang:R or error:R"); }

TEST(knob_bad_values_die_in_one_line) {
    unsetenv(KNOB);
    static const struct { int_case c; const char *want; } bad[] = {
        {{"65", 1, 64}, KNOB "=65: expected an integer in 1..64"},
        {{"0", 1, 64}, KNOB "=0: expected an integer in 1..64"},
        {{"x", 1, 64}, KNOB "=x: expected an integer in 1..64"},
        {{"8x", 1, 64}, KNOB "=8x: expected an integer in 1..64"},
        {{" 8", 1, 64}, KNOB "= 8: expected an integer in 1..64"},
        {{"+8", 1, 64}, KNOB "=+8: expected an integer in 1..64"},
        {{"-", 1, 64}, KNOB "=-: expected an integer in 1..64"},
        {{"2", 0, 1}, KNOB "=2: expected 0 or 1"},
        {{"yes", 0, 1}, KNOB "=yes: expected 0 or 1"},
        {{"-1", 0, INT_MAX}, KNOB "=-1: expected an integer >= 0"},
        {{"99999999999999999999", 0, INT_MAX}, KNOB "=99999999999999999999: expected an integer >= 0"},
        {{"2147483648", 0, INT_MAX}, KNOB "=2147483648: expected an integer >= 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(agoq_test_expect_die(read_int, (void *)&bad[i].c, bad[i].want), "int case %zu", i);
    CHECK(agoq_test_expect_die(read_choice, "7", KNOB "=7: expected one of auto, 3, 4"));
    CHECK(agoq_test_expect_die(read_choice, "AUTO", KNOB "=AUTO: expected one of auto, 3, 4"));
    CHECK(agoq_test_expect_die(read_choice, "3 ", KNOB "=3 : expected one of auto, 3, 4"));
    CHECK(agoq_test_expect_die(read_bad, "hang", KNOB "=hang: expected hang:R or error:R"));
    /* the parent's environment is untouched by the children */
    CHECK(getenv(KNOB) == NULL);
}
