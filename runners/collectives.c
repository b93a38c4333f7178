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
#include "runners/cmdline.h"
#include "core/common.h"
#include "collectives/bench.h"
#include "runners/experiment.h"
#include "kernels/quant/qspec.h"

/* --bits K is --format intK. */
static int bits_flag(cJSON *cfg, const agoq_flag *f, const char *arg, const char *cmd) {
    long b;
    char name[16];
    if (cli_long_arg(cmd, "--bits", arg, 2, 8, &b)) return -1;
    snprintf(name, sizeof name, "int%ld", b);
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "formats");
    cJSON_AddItemToObject(cfg, "formats", agoq_csv_strings(name));
    return 0;
}

/* agoq_cmd_execute, except that under mpirun only rank 0 prints progress and writes files. */
static int execute(agoq_cmd *cmd) {
    agoq_common_opts *o = &cmd->o;
    cJSON *cfg = cmd->cfg;
    agoq_common_apply_sweep(o, cfg);
    agoq_run_ctx ctx = {{"command line", "config"}, AGOQ_BACKEND_CPU, o->seed, o->quiet, o->check, 0};
    char defout[512]; /* the path rule's results/<machine>/<cmd>.json; -o is used as given */
    int rc = agoq_backend_resolve(o->backend, &ctx.backend);
    const char *out = o->out ? o->out : agoq_results_default_out(cmd->r, ctx.backend, o->cmd, defout, sizeof defout);
    int root = rc == 0 && (ctx.backend == AGOQ_BACKEND_CPU || agoq_coll_process_rank() == 0);
    if (!root) {
        ctx.quiet = 1;
        if (!freopen("/dev/null", "w", stdout)) rc = -1;
    }
    if (rc == 0)
        rc = agoq_experiment_execute("collectives", &ctx, cfg, root ? out : NULL, cmd->tsv, cmd->ntsv, cmd->argc,
                                     cmd->argv);
    cJSON_Delete(cfg);
    cJSON_Delete(o->sweep);
    o->sweep = NULL;
    return rc == 0 ? 0 : 1;
}

static const agoq_flag coll_flags[] = {
    {.name = "algo", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "algos", .arg = "a,b,...", .help = "algorithms (default all)", .choices = agoq_coll_algo_names},
    {.name = "op", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "ops", .arg = "allreduce,reduce_scatter", .help = "collectives (default allreduce)"},
    {.name = "format", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "formats", .arg = "a,b,...", .help = "wire formats of the quantized algorithms (default: agoq, ring_q\nint8; qgz int4; fp8lm fp8_e4m3)"},
    {.name = "bits", .short_opt = 0, .kind = AGOQ_FLAG_CALL, .key = "formats", .arg = "K", .help = "--format intK", .parse = bits_flag},
    {.name = "block", .short_opt = 0, .kind = AGOQ_FLAG_LONG, .key = "block", .arg = "N", .help = "block size of the wire format", .lo = 8, .hi = 65536},
    {.name = "scale", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "scale", .arg = "fp32|bf16", .help = "scale dtype of the wire format"},
    {.name = "sum", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "sums", .arg = "fp32,bf16", .help = "local sum precision of agoq/qgz/ring_q (default fp32)"},
    {.name = "ranks", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "ranks", .arg = "a,b,...", .help = "rank counts (cpu default 8; cuda default every visible GPU)"},
    {.name = "ngpus", .short_opt = 'g', .kind = AGOQ_FLAG_NUMS, .key = "ranks", .arg = "N", .help = "GPUs (= ranks) of the single-process nccl backend"},
    {.name = "rpn", .short_opt = 0, .kind = AGOQ_FLAG_LONG, .key = "ranks_per_node", .arg = "N", .help = "ranks per node of qgz (default 8 when it divides ranks)", .lo = 1, .hi = 4096},
    {.name = "dist", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "dist", .arg = "NAME", .help = "input distribution (default normal)"},
    {.name = "no-check", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "check", .arg = NULL, .help = "skip the error check", .value = "false"},
    {.name = "no-phases", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "phases", .arg = NULL, .help = "skip the phase timing run", .value = "false"},
    {.name = "keep-going", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "keep_going", .arg = NULL, .help = "write results even when a check failed", .value = "true"},
    {.name = "accumulate", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "mode", .arg = NULL, .help = "micro-batch 8-bit accumulation error instead (--micro 1,2,..)",
     .value = "\"accumulate\""},
    {.name = "micro", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "microbatches", .arg = "a,b,...", .help = "micro-batch counts of --accumulate"},
    {0}};

static const char *const coll_tsv[] = {"algo", "op", "format", "sum", "ranks", "bytes", "time_ms", "algbw_GBps",
                                       "busbw_GBps", "wire_bytes", "quantizations", "snr_db", "nmse", "max_rel",
                                       "microbatches", "bf16_accum_snr_db"};

const agoq_runner agoq_runner_collectives = {
    .kind = "collectives",
    .what = "quantized reduce-scatter/all-reduce vs NCCL, error vs fp32",
    .about = "Time reduce-scatter / all-reduce algorithms per size and rank count (algbw, busbw as\n"
             "nccl-tests define them, wire bytes with scales) and their error against an fp32 sum.",
    .keys = agoq_coll_keys,
    .flags = coll_flags,
    .notes = "defaults: -b 32K -e 1M -f 32 -n 5 -w 1",
    .run = agoq_exp_collectives,
    .tsv = coll_tsv,
    .ntsv = sizeof coll_tsv / sizeof coll_tsv[0],
    .execute = execute,
};
