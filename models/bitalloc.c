/* Layer-aware bit allocation (see bitalloc.h).
 *
 * A stage's total memory is linear in the bytes of each saved role (memory.c: activations are
 * held * per-layer bytes + fixed terms; quantized bytes are per-tensor whole blocks), so
 *   total(choice) = base + sum_t contrib[t][choice_t]
 * with base = every type at candidate 0 and contrib measured by changing one type at a time.
 * Exact search and greedy both work on these sums; the chosen point is re-evaluated with the
 * full model to confirm it fits. */
#include "models/bitalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/results.h"

static const char *const g_type_names[AGOQ_LTYPE_COUNT] = {"norm", "gemm", "actfn", "attention"};

const char *agoq_layer_type_name(agoq_layer_type t) {
    return (unsigned)t < AGOQ_LTYPE_COUNT ? g_type_names[t] : "?";
}

int agoq_layer_type_of_role(agoq_role r) {
    switch (r) {
    case AGOQ_ROLE_NORM_IN: return AGOQ_LTYPE_NORM;
    case AGOQ_ROLE_QKV_IN: case AGOQ_ROLE_OUTPROJ_IN: case AGOQ_ROLE_FFN1_IN: case AGOQ_ROLE_FFN2_IN: return AGOQ_LTYPE_GEMM;
    case AGOQ_ROLE_FC1_OUT: case AGOQ_ROLE_ACT_OUT: return AGOQ_LTYPE_ACTFN;
    case AGOQ_ROLE_ATTENTION: return AGOQ_LTYPE_ATTENTION;
    default: return -1;
    }
}

double agoq_proxy_builtin(const agoq_store *st) {
    if (st->kind != AGOQ_STORE_QUANT) return 0.0; /* native / fp32 / recomputed: the reference */
    const int mbits = agoq_formats[st->q.fmt].fp8_mbits;
    if (mbits) return pow(2.0, -2.0 * mbits) / 12.0;
    double qmax = pow(2.0, agoq_formats[st->q.fmt].bits - 1) - 1.0, m = 3.0;
    return (m / qmax) * (m / qmax) / 12.0;
}

static void label_candidate(agoq_candidate *c) {
    char b[32];
    snprintf(c->label, sizeof c->label, "%s", c->st.kind == AGOQ_STORE_NATIVE ? "bf16" : agoq_store_label(&c->st, b, sizeof b));
}

void agoq_bitalloc_default(agoq_bitalloc_problem *pr) {
    static const char *const names[] = {"native", "fp8_e4m3/128", "int8/128", "fp4_e2m1/128"};
    memset(pr, 0, sizeof *pr);
    for (size_t i = 0; i < 4; i++) {
        agoq_store_parse(names[i], &pr->cand[i].st);
        pr->cand[i].err = agoq_proxy_builtin(&pr->cand[i].st);
        label_candidate(&pr->cand[i]);
    }
    pr->ncand = 4;
    const double sens[AGOQ_LTYPE_COUNT] = {0.003, 0.026, 0.051, (0.14 + 0.15 + 0.059) / 3.0};
    memcpy(pr->sens, sens, sizeof sens);
    pr->pinned[AGOQ_LTYPE_ATTENTION] = 1;
    pr->method = AGOQ_ALLOC_EXACT;
    pr->max_exact = 1e6;
}

int agoq_proxy_measured(const char *quant_json, const char *dist, agoq_candidate *cand, size_t n) {
    cJSON *j = agoq_read_json(quant_json);
    if (!j) return -1;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "meta"), *recs = cJSON_GetObjectItemCaseSensitive(j, "records");
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(meta, "tool");
    int rc = 0;
    if (!cJSON_IsString(tool) || strcmp(tool->valuestring, "quant") != 0 || !cJSON_IsArray(recs)) {
        agoq_error("%s: not a results file of kind quant (meta.tool must be \"quant\")", quant_json);
        rc = -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (cand[i].st.kind != AGOQ_STORE_QUANT) {
            cand[i].err = 0.0;
            continue;
        }
        const char *fmt = agoq_formats[cand[i].st.q.fmt].name;
        double best_n = -1.0, nmse = NAN;
        const cJSON *r;
        cJSON_ArrayForEach(r, recs) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(r, "format"), *b = cJSON_GetObjectItemCaseSensitive(r, "block"),
                        *s = cJSON_GetObjectItemCaseSensitive(r, "scale"), *ro = cJSON_GetObjectItemCaseSensitive(r, "rounding"),
                        *d = cJSON_GetObjectItemCaseSensitive(r, "dist"), *nn = cJSON_GetObjectItemCaseSensitive(r, "n"),
                        *e = cJSON_GetObjectItemCaseSensitive(r, "nmse");
            if (!cJSON_IsString(f) || strcmp(f->valuestring, fmt) || !cJSON_IsNumber(b) ||
                b->valuedouble != cand[i].st.q.block || !cJSON_IsString(s) || strcmp(s->valuestring, "fp32") ||
                !cJSON_IsString(ro) || strcmp(ro->valuestring, "nearest") || !cJSON_IsString(d) ||
                strcmp(d->valuestring, dist) || !cJSON_IsNumber(nn) || !cJSON_IsNumber(e))
                continue;
            if (nn->valuedouble > best_n) {
                best_n = nn->valuedouble;
                nmse = e->valuedouble;
            }
        }
        if (best_n < 0) {
            agoq_error("%s: no record for format %s block %d, fp32 scale, nearest, dist %s (rerun agoq quant "
                       "--formats %s --blocks %d --dist %s)", quant_json, fmt, cand[i].st.q.block, dist, fmt,
                       cand[i].st.q.block, dist);
            rc = -1;
        }
        cand[i].err = nmse;
    }
    cJSON_Delete(j);
    return rc;
}

/* Which types have stored roles under the base policy, and whether role r is reallocated. */
static int role_free(const agoq_policy *pol, int r) {
    return agoq_layer_type_of_role((agoq_role)r) >= 0 && pol->act[r].kind != AGOQ_STORE_RECOMPUTE;
}

static void set_type(agoq_mem_setup *w, const agoq_policy *base, int stage, int t, const agoq_store *st) {
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
        if (role_free(base, r) && agoq_layer_type_of_role((agoq_role)r) == t) {
            w->pol.has_override[stage][r] = 1;
            w->pol.override[stage][r] = *st;
        }
}

static double stage_total(const agoq_mem_setup *w, int stage) {
    agoq_mem_breakdown bd;
    return agoq_memory_stage(w, stage, &bd) ? NAN : bd.total_bytes;
}

typedef struct {
    int ntype, types[AGOQ_LTYPE_COUNT];           /* free types */
    double base, contrib[AGOQ_LTYPE_COUNT][AGOQ_BITALLOC_MAX_CAND];
} stage_terms;

static double combo_err(const agoq_bitalloc_problem *pr, const stage_terms *st, const int *ch) {
    double e = 0.0;
    for (int k = 0; k < st->ntype; k++) e += pr->sens[st->types[k]] * pr->cand[ch[k]].err;
    return e;
}
static double combo_bytes(const stage_terms *st, const int *ch) {
    double b = st->base;
    for (int k = 0; k < st->ntype; k++) b += st->contrib[k][ch[k]];
    return b;
}

/* Exhaustive: every combination (mixed radix over the free types). */
static int solve_exact(const agoq_bitalloc_problem *pr, const stage_terms *st, double budget, int *best) {
    int ch[AGOQ_LTYPE_COUNT] = {0}, found = 0;
    double best_e = INFINITY, best_b = INFINITY;
    for (;;) {
        double b = combo_bytes(st, ch), e = combo_err(pr, st, ch);
        if (b <= budget && (e < best_e || (e == best_e && b < best_b))) {
            best_e = e;
            best_b = b;
            memcpy(best, ch, sizeof ch);
            found = 1;
        }
        int k = 0;
        while (k < st->ntype && ++ch[k] == (int)pr->ncand) ch[k++] = 0;
        if (k == st->ntype) break;
    }
    return found ? 0 : 1;
}

/* Greedy: from the least-error candidate per type, narrow the type whose move costs the least
 * error per byte saved until the stage fits. */
static int solve_greedy(const agoq_bitalloc_problem *pr, const stage_terms *st, double budget, int *ch) {
    for (int k = 0; k < st->ntype; k++) {
        ch[k] = 0;
        for (size_t c = 1; c < pr->ncand; c++)
            if (pr->cand[c].err < pr->cand[ch[k]].err ||
                (pr->cand[c].err == pr->cand[ch[k]].err && st->contrib[k][c] < st->contrib[k][ch[k]]))
                ch[k] = (int)c;
    }
    while (combo_bytes(st, ch) > budget) {
        int bk = -1, bc = -1;
        double best_ratio = INFINITY;
        for (int k = 0; k < st->ntype; k++)
            for (size_t c = 0; c < pr->ncand; c++) {
                double saved = st->contrib[k][ch[k]] - st->contrib[k][c];
                if (saved <= 0) continue;
                double ratio = pr->sens[st->types[k]] * (pr->cand[c].err - pr->cand[ch[k]].err) / saved;
                if (ratio < best_ratio) {
                    best_ratio = ratio;
                    bk = k;
                    bc = (int)c;
                }
            }
        if (bk < 0) return 1;
        ch[bk] = bc;
    }
    return 0;
}

int agoq_bitalloc_solve(const agoq_mem_setup *ms, const agoq_bitalloc_problem *pr, agoq_bitalloc_result *out) {
    if (agoq_mem_setup_check(ms)) return -1;
    AGOQ_REQUIRE(pr->ncand >= 1 && pr->ncand <= AGOQ_BITALLOC_MAX_CAND, "bitalloc: %zu candidates (1..%d)", pr->ncand,
                 AGOQ_BITALLOC_MAX_CAND);
    agoq_mem_setup *w = malloc(sizeof *w);
    stage_terms *terms = calloc((size_t)ms->par.pp, sizeof *terms);
    AGOQ_REQUIRE(w && terms, "bitalloc: out of memory");
    memset(out, 0, sizeof *out);
    *w = *ms;
    int present[AGOQ_LTYPE_COUNT] = {0};
    for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
        if (role_free(&ms->pol, r) && !pr->pinned[agoq_layer_type_of_role((agoq_role)r)])
            present[agoq_layer_type_of_role((agoq_role)r)] = 1;
    double combos = 1.0;
    for (int t = 0; t < AGOQ_LTYPE_COUNT; t++) combos *= present[t] ? (double)pr->ncand : 1.0;
    out->used = pr->method == AGOQ_ALLOC_EXACT && combos <= pr->max_exact ? AGOQ_ALLOC_EXACT : AGOQ_ALLOC_GREEDY;
    out->feasible = 1;
    int rc = 0;
    for (int i = 0; i < ms->par.pp && rc >= 0; i++) {
        stage_terms *st = &terms[i];
        for (int t = 0; t < AGOQ_LTYPE_COUNT; t++) {
            out->choice[i][t] = -1;
            if (present[t]) {
                st->types[st->ntype++] = t;
                set_type(w, &ms->pol, i, t, &pr->cand[0].st);
            }
        }
        st->base = stage_total(w, i);
        double narrowest = st->base;
        for (int k = 0; k < st->ntype; k++) {
            double lo = 0.0;
            for (size_t c = 0; c < pr->ncand; c++) {
                set_type(w, &ms->pol, i, st->types[k], &pr->cand[c].st);
                st->contrib[k][c] = stage_total(w, i) - st->base;
                if (c == 0 || st->contrib[k][c] < lo) lo = st->contrib[k][c];
            }
            set_type(w, &ms->pol, i, st->types[k], &pr->cand[0].st);
            narrowest += lo;
        }
        if (isnan(st->base)) rc = -1;
        if (narrowest > out->min_budget_bytes) {
            out->min_budget_bytes = narrowest;
            out->stage_min_worst = i;
        }
        int ch[AGOQ_LTYPE_COUNT] = {0};
        int r = out->used == AGOQ_ALLOC_EXACT ? solve_exact(pr, st, pr->budget_bytes, ch)
                                              : solve_greedy(pr, st, pr->budget_bytes, ch);
        if (r) {
            out->feasible = 0;
            continue;
        }
        for (int k = 0; k < st->ntype; k++) {
            out->choice[i][st->types[k]] = ch[k];
            set_type(w, &ms->pol, i, st->types[k], &pr->cand[ch[k]].st);
        }
        out->total_bytes[i] = stage_total(w, i); /* the full model, not the linear sums */
        out->err[i] = combo_err(pr, st, ch);
        if (!(out->total_bytes[i] <= pr->budget_bytes * (1 + 1e-12))) out->feasible = 0;
    }
    free(w);
    free(terms);
    if (rc < 0) return -1;
    return out->feasible ? 0 : 1;
}

void agoq_bitalloc_apply(agoq_mem_setup *ms, const agoq_bitalloc_problem *pr, const agoq_bitalloc_result *res) {
    agoq_policy base = ms->pol;
    for (int i = 0; i < ms->par.pp && i < AGOQ_MAX_STAGES; i++)
        for (int t = 0; t < AGOQ_LTYPE_COUNT; t++)
            if (res->choice[i][t] >= 0) set_type(ms, &base, i, t, &pr->cand[res->choice[i][t]].st);
}

double agoq_dbca_units(const agoq_parallel *par, int base_bits, const int *bits, size_t nbits, int *paper, int *exact) {
    double n0 = (double)agoq_inflight_microbatches(par, 0), budget = n0 * base_bits;
    int maxb = base_bits;
    for (size_t k = 0; k < nbits; k++)
        if (bits[k] > maxb) maxb = bits[k];
    for (int i = 0; i < par->pp; i++) {
        double ni = (double)agoq_inflight_microbatches(par, i);
        int b = (int)rint(base_bits * n0 / ni);
        paper[i] = b > maxb ? maxb : b;
        exact[i] = -1;
        for (size_t k = 0; k < nbits; k++)
            if (ni * bits[k] <= budget && bits[k] > exact[i]) exact[i] = bits[k];
    }
    return budget;
}
