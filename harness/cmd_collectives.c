/* agoq collectives: quantized reduce-scatter / all-reduce against the NCCL baselines, with
 * nccl-tests flags (-b -e -f -n -w -g) and the error of every algorithm against an fp32
 * reference sum. The runner is collectives/bench.c (experiment kind "collectives").
 *   agoq collectives --backend cpu --ranks 1,2,4,8,16,32,64 -b 1M -e 1M      error study (cpu)
 *   agoq collectives --backend cuda -b 1K -e 1G -f 32                        every visible GPU
 *   mpirun -np 8 build-mpi/agoq collectives --backend cuda -b 32K -e 1G      one GPU per process
 * Under mpirun only rank 0 prints the table and writes the results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/driver.h"
#include "harness/cmdline.h"
#include "harness/commands.h"
#include "harness/common.h"
#include "harness/experiment.h"
#include "harness/qspec.h"

static void help(void) {
    printf("usage: agoq collectives [options]\n"
           "Time reduce-scatter / all-reduce algorithms per size and rank count (algbw, busbw as\n"
           "nccl-tests define them, wire bytes with scales) and their error against an fp32 sum.\n"
           "  --algo a,b,...        %s (default all)\n"
           "  --op allreduce,reduce_scatter   (default allreduce)\n"
           "  --format a,b,...      wire formats of the quantized algorithms (default: agoq, ring_q\n"
           "                        int8; qgz int4; fp8lm fp8_e4m3); --bits K is --format intK\n"
           "  --block N, --scale fp32|bf16    block size / scale dtype of the wire format\n"
           "  --sum fp32,bf16       local sum precision of agoq/qgz/ring_q (default fp32)\n"
           "  --ranks a,b,...       rank counts (cpu default 8; cuda default every visible GPU)\n"
           "  -g N                  GPUs (= ranks) of the single-process nccl backend\n"
           "  --rpn N               ranks per node of qgz (default 8 when it divides ranks)\n"
           "  --dist NAME           input distribution (default normal)\n"
           "  --no-check, --no-phases, --keep-going   skip the error check / phase timing run;\n"
           "                        write results even when a check failed\n"
           "  --accumulate          micro-batch 8-bit accumulation error instead (--micro 1,2,..)\n"
           "defaults: -b 32K -e 1M -f 32 -n 5 -w 1\n" AGOQ_COMMON_HELP,
           agoq_coll_algo_names());
}

static int add_list(cJSON *cfg, const char *key, const char *csv, int numbers) {
    cJSON *a = numbers ? agoq_csv_numbers(csv) : agoq_csv_strings(csv);
    if (!a) {
        agoq_error("collectives: bad value '%s' for --%s", csv, key);
        return -1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, key);
    cJSON_AddItemToObject(cfg, key, a);
    return 0;
}

static int add_long(cJSON *cfg, const char *key, const char *flag, const char *v, long lo, long hi) {
    long l;
    if (cli_long_arg("collectives", flag, v, lo, hi, &l)) return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, key);
    cJSON_AddNumberToObject(cfg, key, (double)l);
    return 0;
}

/* agoq_cmd_execute, except that under mpirun only rank 0 prints progress and writes files. */
static int execute(agoq_common_opts *o, cJSON *cfg, int argc, char **argv) {
    static const char *const tsv[] = {"algo", "op", "format", "sum", "ranks", "bytes", "time_ms", "algbw_GBps",
                                      "busbw_GBps", "wire_bytes", "quantizations", "snr_db", "nmse", "max_rel",
                                      "microbatches", "bf16_accum_snr_db"};
    agoq_common_apply_sweep(o, cfg);
    agoq_run_ctx ctx = {{"command line", "config"}, AGOQ_BACKEND_CPU, o->seed, o->quiet, o->check, 0};
    const char *out = o->out ? o->out : "results/collectives.json";
    int rc = agoq_backend_resolve(o->backend, &ctx.backend);
    int root = rc == 0 && (ctx.backend == AGOQ_BACKEND_CPU || agoq_coll_process_rank() == 0);
    if (!root) {
        ctx.quiet = 1;
        if (!freopen("/dev/null", "w", stdout)) rc = -1;
    }
    if (rc == 0)
        rc = agoq_experiment_execute("collectives", &ctx, cfg, root ? out : NULL, tsv, sizeof tsv / sizeof tsv[0],
                                     argc, argv);
    cJSON_Delete(cfg);
    cJSON_Delete(o->sweep);
    o->sweep = NULL;
    return rc == 0 ? 0 : 1;
}

int cmd_collectives(int argc, char **argv) {
    enum { O_ALGO = AGOQ_OPT_FIRST_PRIVATE, O_OP, O_FORMAT, O_BITS, O_BLOCK, O_SCALE, O_SUM, O_RANKS, O_RPN,
           O_DIST, O_NOCHECK, O_NOPHASES, O_KEEP, O_ACCUM, O_MICRO };
    static const struct option longopts[] = {AGOQ_COMMON_LONGOPTS,
                                             {"algo", required_argument, 0, O_ALGO},
                                             {"op", required_argument, 0, O_OP},
                                             {"format", required_argument, 0, O_FORMAT},
                                             {"bits", required_argument, 0, O_BITS},
                                             {"block", required_argument, 0, O_BLOCK},
                                             {"scale", required_argument, 0, O_SCALE},
                                             {"sum", required_argument, 0, O_SUM},
                                             {"ranks", required_argument, 0, O_RANKS},
                                             {"ngpus", required_argument, 0, 'g'},
                                             {"rpn", required_argument, 0, O_RPN},
                                             {"dist", required_argument, 0, O_DIST},
                                             {"no-check", no_argument, 0, O_NOCHECK},
                                             {"no-phases", no_argument, 0, O_NOPHASES},
                                             {"keep-going", no_argument, 0, O_KEEP},
                                             {"accumulate", no_argument, 0, O_ACCUM},
                                             {"micro", required_argument, 0, O_MICRO},
                                             {0, 0, 0, 0}};
    agoq_common_opts o;
    agoq_common_init(&o, "collectives");
    cJSON *cfg = cJSON_CreateObject();
    int c, bad = 0;
    while (!bad && (c = getopt_long(argc, argv, AGOQ_COMMON_SHORTOPTS "g:", longopts, NULL)) != -1) {
        int r = agoq_common_opt(&o, c, optarg);
        if (r) {
            bad = r < 0;
            continue;
        }
        switch (c) {
        case O_ALGO: bad = add_list(cfg, "algos", optarg, 0); break;
        case O_OP: bad = add_list(cfg, "ops", optarg, 0); break;
        case O_FORMAT: bad = add_list(cfg, "formats", optarg, 0); break;
        case O_BITS: {
            long b;
            char name[16];
            if ((bad = cli_long_arg("collectives", "--bits", optarg, 2, 8, &b))) break;
            snprintf(name, sizeof name, "int%ld", b);
            bad = add_list(cfg, "formats", name, 0);
            break;
        }
        case O_BLOCK: bad = add_long(cfg, "block", "--block", optarg, 8, 65536); break;
        case O_SCALE: cJSON_AddStringToObject(cfg, "scale", optarg); break;
        case O_SUM: bad = add_list(cfg, "sums", optarg, 0); break;
        case O_RANKS: bad = add_list(cfg, "ranks", optarg, 1); break;
        case 'g': bad = add_list(cfg, "ranks", optarg, 1); break;
        case O_RPN: bad = add_long(cfg, "ranks_per_node", "--rpn", optarg, 1, 4096); break;
        case O_DIST: cJSON_AddStringToObject(cfg, "dist", optarg); break;
        case O_NOCHECK: cJSON_AddBoolToObject(cfg, "check", 0); break;
        case O_NOPHASES: cJSON_AddBoolToObject(cfg, "phases", 0); break;
        case O_KEEP: cJSON_AddBoolToObject(cfg, "keep_going", 1); break;
        case O_ACCUM: cJSON_AddStringToObject(cfg, "mode", "accumulate"); break;
        case O_MICRO: bad = add_list(cfg, "microbatches", optarg, 1); break;
        default: cJSON_Delete(cfg); cJSON_Delete(o.sweep); return agoq_cmd_usage_error("collectives");
        }
    }
    if (bad || o.help || optind < argc) {
        if (!bad && optind < argc) agoq_error("collectives: unexpected argument '%s'", argv[optind]);
        if (o.help && !bad && optind >= argc) help();
        cJSON_Delete(cfg);
        cJSON_Delete(o.sweep);
        return o.help && !bad && optind >= argc ? 0 : 2;
    }
    return execute(&o, cfg, argc, argv);
}
