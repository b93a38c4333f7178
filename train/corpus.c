/* Corpus generation and loading; see corpus.h. */
#include "train/corpus.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Singular / plural pairs: nouns, and verbs as (3rd person singular, plural). */
static const char *const nouns[][2] = {
    {"cat", "cats"},         {"dog", "dogs"},       {"child", "children"}, {"bird", "birds"},
    {"farmer", "farmers"},   {"river", "rivers"},   {"king", "kings"},     {"ship", "ships"},
    {"tree", "trees"},       {"teacher", "teachers"}, {"box", "boxes"},    {"city", "cities"},
    {"wolf", "wolves"},      {"apple", "apples"},   {"house", "houses"},   {"mouse", "mice"},
    {"sailor", "sailors"},   {"garden", "gardens"}, {"lamp", "lamps"},     {"horse", "horses"}};
static const char *const verbs_t[][2] = {
    {"sees", "see"},   {"likes", "like"},     {"follows", "follow"}, {"finds", "find"},   {"carries", "carry"},
    {"watches", "watch"}, {"builds", "build"}, {"eats", "eat"},      {"chases", "chase"}, {"knows", "know"},
    {"paints", "paint"}, {"helps", "help"}};
static const char *const verbs_i[][2] = {{"sleeps", "sleep"}, {"runs", "run"},     {"sings", "sing"},
                                         {"waits", "wait"},   {"laughs", "laugh"}, {"falls", "fall"},
                                         {"dreams", "dream"}, {"works", "work"}};
static const char *const be[2] = {"is", "are"};
static const char *const adjs[] = {"small", "old", "red", "quiet", "happy", "dark", "green",
                                   "tall", "young", "strange", "bright", "heavy"};
static const char *const dets[][5] = {{"the", "a", "this", "every", "one"}, {"the", "some", "these", "many", "two"}};
static const char *const names[] = {"Alice", "Bob", "Mara", "Tom", "Lena", "Omar"};
static const char *const preps[] = {"near", "under", "behind", "with", "beside", "over", "in"};
static const char *const advs[] = {"slowly", "quietly", "today", "again", "at night", "in the morning"};
static const char *const joins[] = {", and", " because", ", but", " while", " when"};

typedef struct {
    agoq_rng rng;
    uint8_t *out;
    size_t n, len;
    int cap_next; /* capitalise the next letter (sentence start) */
} gen;

static void emit(gen *g, const char *s) {
    for (; *s && g->len < g->n; s++) {
        char ch = *s;
        if (ch == ' ' && (g->len == 0 || g->out[g->len - 1] == '\n')) continue; /* no leading blanks */
        if (g->cap_next && isalpha((unsigned char)ch)) {
            ch = (char)toupper((unsigned char)ch);
            g->cap_next = 0;
        }
        g->out[g->len++] = (uint8_t)ch;
    }
}

/* Zipf-like pick: index i with probability proportional to 1 / (i + 1). */
static int zipf(gen *g, int n) {
    double h = 0.0;
    for (int i = 0; i < n; i++) h += 1.0 / (i + 1);
    double u = agoq_rng_u01(&g->rng) * h;
    for (int i = 0; i < n; i++)
        if ((u -= 1.0 / (i + 1)) < 0) return i;
    return n - 1;
}
static int chance(gen *g, double p) { return agoq_rng_u01(&g->rng) < p; }

static void noun_phrase(gen *g, int plural, int depth);

static void prep_phrase(gen *g, int depth) {
    emit(g, " ");
    emit(g, preps[zipf(g, COUNT(preps))]);
    noun_phrase(g, chance(g, 0.3), depth + 1);
}

static void noun_phrase(gen *g, int plural, int depth) {
    emit(g, " ");
    emit(g, dets[plural][zipf(g, 5)]);
    if (chance(g, 0.4)) {
        emit(g, " ");
        emit(g, adjs[zipf(g, COUNT(adjs))]);
    }
    emit(g, " ");
    emit(g, nouns[zipf(g, COUNT(nouns))][plural]);
    if (depth < 2 && chance(g, 0.25)) prep_phrase(g, depth); /* nesting: agreement must skip it */
}

static void clause(gen *g) {
    int plural = 0;
    double r = agoq_rng_u01(&g->rng);
    if (r < 0.15) {
        emit(g, " ");
        emit(g, names[zipf(g, COUNT(names))]);
    } else {
        plural = chance(g, 0.4);
        noun_phrase(g, plural, 0);
    }
    r = agoq_rng_u01(&g->rng);
    emit(g, " ");
    if (r < 0.55) {
        emit(g, verbs_t[zipf(g, COUNT(verbs_t))][plural ? 1 : 0]);
        noun_phrase(g, chance(g, 0.4), 0);
    } else if (r < 0.8) {
        emit(g, verbs_i[zipf(g, COUNT(verbs_i))][plural ? 1 : 0]);
        if (chance(g, 0.4)) {
            emit(g, " ");
            emit(g, advs[zipf(g, COUNT(advs))]);
        }
    } else {
        emit(g, be[plural]);
        emit(g, " ");
        emit(g, adjs[zipf(g, COUNT(adjs))]);
    }
}

void train_grammar_text(uint64_t seed, uint8_t *out, size_t n) {
    gen g = {{seed * 0x9E3779B97F4A7C15ull + 12345u}, out, n, 0, 1};
    int in_par = 0;
    while (g.len < n) {
        g.cap_next = 1;
        clause(&g);
        if (chance(&g, 0.3)) {
            emit(&g, joins[zipf(&g, COUNT(joins))]);
            clause(&g);
        }
        emit(&g, ".");
        if (++in_par >= 3 && chance(&g, 0.3)) {
            emit(&g, "\n");
            in_par = 0;
        }
    }
}

int train_corpus_grammar(train_corpus *c, uint64_t seed, size_t train_bytes, size_t heldout_bytes) {
    memset(c, 0, sizeof *c);
    c->train = malloc(train_bytes);
    c->heldout = malloc(heldout_bytes);
    if (!c->train || !c->heldout) {
        train_corpus_free(c);
        agoq_error("train: out of memory for a %zu-byte corpus", train_bytes + heldout_bytes);
        return -1;
    }
    train_grammar_text(seed, c->train, train_bytes);
    train_grammar_text(seed + 1, c->heldout, heldout_bytes);
    c->n_train = train_bytes;
    c->n_heldout = heldout_bytes;
    return 0;
}

int train_corpus_file(train_corpus *c, const char *path, double heldout_frac) {
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = len > 0 ? malloc((size_t)len) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)len) {
        free(buf);
        return -1;
    }
    size_t nh = (size_t)((double)len * heldout_frac);
    c->n_train = (size_t)len - nh;
    c->n_heldout = nh;
    c->train = buf;
    c->heldout = malloc(nh ? nh : 1);
    if (!c->heldout) {
        train_corpus_free(c);
        return -1;
    }
    memcpy(c->heldout, buf + c->n_train, nh);
    return 0;
}

void train_corpus_free(train_corpus *c) {
    free(c->train);
    free(c->heldout);
    memset(c, 0, sizeof *c);
}

void train_window(const uint8_t *text, size_t start, int t, int *tokens, int *targets) {
    for (int i = 0; i < t; i++) {
        tokens[i] = text[start + (size_t)i];
        targets[i] = text[start + (size_t)i + 1];
    }
}

void train_sample_batch(const uint8_t *text, size_t n, int b, int t, agoq_rng *rng, int *tokens, int *targets) {
    size_t span = n - (size_t)t; /* starts 0 .. n - t - 1 leave room for the last target */
    for (int i = 0; i < b; i++) {
        size_t start = (size_t)(agoq_rng_next(rng) % span);
        train_window(text, start, t, tokens + (size_t)i * t, targets + (size_t)i * t);
    }
}
