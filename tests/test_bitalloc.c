/* Bit allocation: the paper's DBCA-PP case from the schedule (11/9/7/5 -> 4/5/6/8, stage 1
 * over by one unit, exact 4/4/6/8), exact search against brute force over the same model,
 * greedy never better than exact, infeasible budgets, proxies (built-in formulas and a quant
 * results fixture) and the CLI's infeasible-budget message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/bitalloc.h"
#include "tests/test.h"

TEST(bitalloc_dbca_paper_case) {
    agoq_parallel p = {.tp = 1, .pp = 4, .dp = 1, .vpp = 2, .schedule = AGOQ_SCHED_INTERLEAVED, .num_microbatches = 8};
    static const int bits[] = {4, 5, 6, 7, 8};
    int paper[4], exact[4];
    double budget = agoq_dbca_units(&p, 4, bits, 5, paper, exact);
    static const int want_paper[4] = {4, 5, 6, 8}, want_exact[4] = {4, 4, 6, 8}, n[4] = {11, 9, 7, 5};
    CHECK(budget == 44);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(paper[i] == want_paper[i] && exact[i] == want_exact[i], "stage %d: paper %d exact %d", i, paper[i], exact[i]);
        CHECK(exact[i] * n[i] <= 44);
    }
    CHECK(paper[1] * n[1] == 45); /* the paper's rounding overshoots stage 1 (its "stage 2") by one unit */
    /* 1F1B, p = 4, m = 8: N = 4, 3, 2, 1, budget 16 */
    p.vpp = 1;
    p.schedule = AGOQ_SCHED_1F1B;
    budget = agoq_dbca_units(&p, 4, bits, 5, paper, exact);
    static const int p1[4] = {4, 5, 8, 8}, e1[4] = {4, 5, 8, 8};
    CHECK(budget == 16);
    for (int i = 0; i < 4; i++) CHECK_MSG(paper[i] == p1[i] && exact[i] == e1[i], "1f1b stage %d: %d %d", i, paper[i], exact[i]);
}

TEST(bitalloc_builtin_proxy) {
    agoq_store st;
    agoq_store_parse("int8/128", &st);
    CHECK_NEAR(agoq_proxy_builtin(&st), (3.0 / 127) * (3.0 / 127) / 12, 1e-15);
    agoq_store_parse("fp8_e4m3/128", &st);
    CHECK_NEAR(agoq_proxy_builtin(&st), pow(2, -6) / 12, 1e-15);
    agoq_store_parse("native", &st);
    CHECK(agoq_proxy_builtin(&st) == 0);
}

static void paper_setup(agoq_mem_setup *ms, agoq_model_card *m) {
    agoq_model_load("llama2-13b", m);
    agoq_mem_setup_default(ms, m);
    agoq_policy_by_name("agoq", &ms->pol);
    ms->par.tp = 8;
    ms->par.sp = 1;
    ms->par.pp = 4;
    ms->par.vpp = 2;
    ms->par.schedule = AGOQ_SCHED_INTERLEAVED;
    ms->par.num_microbatches = 8;
    ms->par.seq = 8192;
}

/* Brute force over every combination with the full model (no linear shortcut). */
static double brute_best(const agoq_mem_setup *ms, const agoq_bitalloc_problem *pr, int stage, const int *types, int nt) {
    agoq_mem_setup w = *ms;
    double best = INFINITY;
    int ch[AGOQ_LTYPE_COUNT] = {0};
    for (;;) {
        double e = 0;
        for (int k = 0; k < nt; k++) {
            for (int r = 0; r < AGOQ_ROLE_COUNT; r++)
                if (agoq_layer_type_of_role((agoq_role)r) == types[k] && ms->pol.act[r].kind != AGOQ_STORE_RECOMPUTE) {
                    w.pol.has_override[stage][r] = 1;
                    w.pol.override[stage][r] = pr->cand[ch[k]].st;
                }
            e += pr->sens[types[k]] * pr->cand[ch[k]].err;
        }
        agoq_mem_breakdown bd;
        agoq_memory_stage(&w, stage, &bd);
        if (bd.total_bytes <= pr->budget_bytes && e < best) best = e;
        int k = 0;
        while (k < nt && ++ch[k] == (int)pr->ncand) ch[k++] = 0;
        if (k == nt) break;
    }
    return best;
}

TEST(bitalloc_exact_matches_brute_force) {
    agoq_model_card m;
    agoq_mem_setup ms;
    paper_setup(&ms, &m);
    agoq_bitalloc_problem pr;
    agoq_bitalloc_default(&pr);
    agoq_mem_breakdown peak;
    agoq_memory_peak(&ms, NULL, &peak);
    static const int types[3] = {AGOQ_LTYPE_NORM, AGOQ_LTYPE_GEMM, AGOQ_LTYPE_ACTFN};
    for (double f = 0.98; f <= 1.3; f += 0.08) {
        pr.budget_bytes = f * peak.total_bytes;
        agoq_bitalloc_result ex, gr;
        int rc = agoq_bitalloc_solve(&ms, &pr, &ex);
        CHECK_MSG(rc == 0 || f < 1.0, "budget factor %g: rc %d", f, rc);
        if (rc) continue;
        CHECK(ex.used == AGOQ_ALLOC_EXACT);
        agoq_bitalloc_problem g = pr;
        g.method = AGOQ_ALLOC_GREEDY;
        CHECK(agoq_bitalloc_solve(&ms, &g, &gr) == 0 && gr.used == AGOQ_ALLOC_GREEDY);
        for (int i = 0; i < 4; i++) {
            CHECK(ex.total_bytes[i] <= pr.budget_bytes && gr.total_bytes[i] <= pr.budget_bytes);
            CHECK(ex.choice[i][AGOQ_LTYPE_ATTENTION] == -1); /* pinned by default */
            CHECK_NEAR(ex.err[i], brute_best(&ms, &pr, i, types, 3), 1e-15);
            CHECK(ex.err[i] <= gr.err[i] + 1e-15);
        }
        /* stages holding fewer micro-batches never get narrower formats than stage 0 */
        CHECK(ex.err[3] <= ex.err[0]);
    }
    /* applying the result reproduces the stage totals */
    pr.budget_bytes = peak.total_bytes;
    agoq_bitalloc_result ex;
    CHECK(agoq_bitalloc_solve(&ms, &pr, &ex) == 0);
    agoq_mem_setup applied = ms;
    agoq_bitalloc_apply(&applied, &pr, &ex);
    for (int i = 0; i < 4; i++) {
        agoq_mem_breakdown bd;
        agoq_memory_stage(&applied, i, &bd);
        CHECK_NEAR(bd.total_bytes, ex.total_bytes[i], 1e-3);
    }
}

TEST(bitalloc_infeasible_reports_smallest_budget) {
    agoq_model_card m;
    agoq_mem_setup ms;
    paper_setup(&ms, &m);
    agoq_bitalloc_problem pr;
    agoq_bitalloc_default(&pr);
    pr.budget_bytes = 1e9;
    agoq_bitalloc_result r;
    CHECK(agoq_bitalloc_solve(&ms, &pr, &r) == 1 && !r.feasible);
    /* the smallest budget: every free type at its narrowest candidate (fp4 here) = the agoq policy itself */
    agoq_mem_breakdown peak;
    int stage;
    agoq_memory_peak(&ms, &stage, &peak);
    CHECK_NEAR(r.min_budget_bytes, peak.total_bytes, 1e-3);
    CHECK(r.stage_min_worst == stage);
    pr.budget_bytes = r.min_budget_bytes;
    CHECK(agoq_bitalloc_solve(&ms, &pr, &r) == 0);
}

TEST(bitalloc_measured_proxy_fixture) {
    char path[512];
    snprintf(path, sizeof path, "%s/quant_fixture.json", agoq_test_tmpdir());
    agoq_test_write(path,
                    "{\"schema\":\"agoq-results/1\",\"meta\":{\"tool\":\"quant\"},\"records\":["
                    "{\"format\":\"int8\",\"block\":128,\"scale\":\"fp32\",\"rounding\":\"nearest\",\"dist\":\"normal\",\"n\":1024,\"nmse\":0.5},"
                    "{\"format\":\"int8\",\"block\":128,\"scale\":\"fp32\",\"rounding\":\"nearest\",\"dist\":\"normal\",\"n\":4096,\"nmse\":0.25},"
                    "{\"format\":\"int8\",\"block\":64,\"scale\":\"fp32\",\"rounding\":\"nearest\",\"dist\":\"normal\",\"n\":8192,\"nmse\":9},"
                    "{\"format\":\"int8\",\"block\":128,\"scale\":\"bf16\",\"rounding\":\"nearest\",\"dist\":\"normal\",\"n\":8192,\"nmse\":9},"
                    "{\"format\":\"int8\",\"block\":128,\"scale\":\"fp32\",\"rounding\":\"nearest\",\"dist\":\"heavy\",\"n\":8192,\"nmse\":9}]}");
    agoq_candidate c[2];
    agoq_store_parse("native", &c[0].st);
    agoq_store_parse("int8/128", &c[1].st);
    CHECK(agoq_proxy_measured(path, "normal", c, 2) == 0);
    CHECK(c[0].err == 0 && c[1].err == 0.25); /* largest n of the matching records */
    agoq_store_parse("fp4_e2m1/128", &c[1].st);
    CHECK(agoq_proxy_measured(path, "normal", c, 2) == -1);
    /* the committed measurement has every default candidate */
    agoq_bitalloc_problem pr;
    agoq_bitalloc_default(&pr);
    CHECK(agoq_proxy_measured("results/cpu/quant_error.json", "normal", pr.cand, pr.ncand) == 0);
    CHECK(pr.cand[3].err > pr.cand[1].err && pr.cand[1].err > pr.cand[2].err && pr.cand[2].err > 0);
}

TEST(bitalloc_cli) {
    char out[512], args[1024], msg[8192];
    snprintf(out, sizeof out, "%s/ba_bad.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "bitalloc --model llama2-13b --tp 8 --pp 4 --vpp 2 --microbatches 8 --seq 8192 --sp --budget 2 -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1);
    CHECK_MSG(strstr(msg, "smallest budget that fits every stage") && strstr(msg, "config.budget_gb"), "%s", msg);
    CHECK(!agoq_test_file_exists(out));
    snprintf(out, sizeof out, "%s/ba_units.json", agoq_test_tmpdir());
    snprintf(args, sizeof args, "bitalloc --units --pp 4 --vpp 2 --microbatches 8 -q -o %s", out);
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 0 && strstr(msg, "+1"));
    CHECK(agoq_test_file_exists(out));
    snprintf(args, sizeof args, "bitalloc --model llama2-13b --candidates native,int9 -q -o %s/x.json", agoq_test_tmpdir());
    CHECK(agoq_test_run_cli(args, msg, sizeof msg) == 1 && strstr(msg, "config.candidates[1]"));
}
