/* agoq simulate: the step-time simulator at scale (experiment kind "simulate", runner in
 * sim/sim_experiment.c). Builds the same config object an experiment file gives:
 *   agoq simulate --machine experiments/machines/a6000-8x8-ib200.json --model llama2-13b \
 *                 --methods megatron,zero1,agoq --seq 32K,64K --tp 8 --pp 4 --gpus 64 --global-batch 16
 *   agoq simulate --mode comm --machine M.json --tp 8 --dp 8 -b 32K -e 1G -f 32
 * Output is always marked "simulated"; every calibration value's source is in meta.calibration. */
#include <stdio.h>
#include <string.h>

#include "runners/cmdline.h"
#include "core/common.h"
#include "runners/experiment.h"
#include "sim/sim_experiment.h"
#include "kernels/quant/qspec.h"

/* --recompute N|auto: auto is -1 (the smallest that fits). */
static int recompute_flag(cJSON *cfg, const agoq_flag *f, const char *arg, const char *cmd) {
    long x = -1;
    if (strcmp(arg, "auto") != 0 && cli_long_arg(cmd, "--recompute", arg, 0, 1L << 24, &x)) return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "recompute");
    cJSON_AddNumberToObject(cfg, "recompute", (double)x);
    return 0;
}

#define SIM_LONG(name_, key_, arg_, what_) {.name = name_, .short_opt = 0, .kind = AGOQ_FLAG_LONG, .key = key_, .arg = arg_, .help = what_, .lo = 1, .hi = 1L << 24}
static const agoq_flag sim_flags[] = {
    {.name = "mode", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "mode", .arg = "step|comm", .help = "(default step)"},
    {.name = "machine", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "machines", .arg = "F[,F...]", .help = "machine files (experiments/machines/*.json; required)"},
    {.name = "model", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "models", .arg = "NAME[,NAME]", .help = "model cards (models/NAME.json; step)"},
    {.name = "methods", .short_opt = 0, .kind = AGOQ_FLAG_STRS, .key = "methods", .arg = "a,b", .help = "megatron, zero1, zero3, zeropp, coat, agoq, agoq_zero1 (step)"},
    {.name = "seq", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "seqs", .arg = "N[,N]", .help = "sequence lengths, K suffix allowed (step)", .value = "32K,64K"},
    {.name = "gpus", .short_opt = 0, .kind = AGOQ_FLAG_NUMS, .key = "gpus", .arg = "N[,N]", .help = "GPU counts; dp = gpus / (tp*pp) (step; else --dp)", .value = "32K,64K"},
    SIM_LONG("tp", "tp", "N", "tensor-parallel size (default 1)"),
    SIM_LONG("pp", "pp", "N", "pipeline stages (default 1)"),
    SIM_LONG("dp", "dp", "N", "data-parallel replicas (default 1)"),
    SIM_LONG("vpp", "vpp", "N", "virtual pipeline stages (default 1)"),
    SIM_LONG("micro-batch", "micro_batch", "N", "sequences per micro-batch (default 1)"),
    SIM_LONG("global-batch", "global_batch", "N", "sequences per step (fixed; default 1)"),
    SIM_LONG("batch-per-replica", "batch_per_replica", "N", "sequences per step per replica (x dp)"),
    {.name = "recompute", .short_opt = 0, .kind = AGOQ_FLAG_CALL, .key = "recompute", .arg = "N|auto", .help = "layers per stage recomputed (default auto: smallest that fits)",
     .parse = recompute_flag},
    {.name = "no-overlap", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "overlap", .arg = NULL, .help = "DP communication not hidden under backward", .value = "false"},
    {.name = "fused-quant", .short_opt = 0, .kind = AGOQ_FLAG_SET, .key = "fused_quant", .arg = NULL, .help = "quantization fused into the GEMMs (no kernel time)",
     .value = "true"},
    {.name = "accounting", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "accounting", .arg = "real|paper", .help = "memory accounting of the memory model (default real)"},
    {.name = "baseline", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "baseline", .arg = "METHOD", .help = "add speedup = baseline step time / ours"},
    {.name = "algo", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "algo", .arg = "ring|tree|auto", .help = "all-reduce algorithm (default auto)"},
    {.name = "grad", .short_opt = 0, .kind = AGOQ_FLAG_STR, .key = "grad", .arg = "FMT[/BLOCK]", .help = "comm mode: quantized gradient wire format (default dyn8/256)"},
    {0}};

static const char *const sim_step_tsv[] = {"machine", "model", "method", "variant", "gpus", "tp", "pp", "dp", "seq",
                                           "recompute", "fits", "step_ms", "tokens_per_s_per_gpu", "mem_GiB", "speedup"};
static const char *const sim_comm_tsv[] = {"machine", "bytes", "allreduce_ms", "a2a_ms", "quant_ms", "allgather_ms",
                                           "agoq_total_ms", "speedup"};

/* Step mode defaults to one sequence per step; comm mode writes its own columns. */
static int sim_finish(agoq_cmd *cmd) {
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(cmd->cfg, "mode");
    int comm = cJSON_IsString(mode) && strcmp(mode->valuestring, "comm") == 0;
    if (!comm && !cJSON_GetObjectItemCaseSensitive(cmd->cfg, "global_batch") &&
        !cJSON_GetObjectItemCaseSensitive(cmd->cfg, "batch_per_replica"))
        cJSON_AddNumberToObject(cmd->cfg, "global_batch", 1);
    if (comm) {
        cmd->tsv = sim_comm_tsv;
        cmd->ntsv = sizeof sim_comm_tsv / sizeof sim_comm_tsv[0];
    }
    return -1;
}

const agoq_runner agoq_runner_simulate = {
    .kind = "simulate",
    .what = "step time at scale from measured calibration (simulated)",
    .about = "Predict step time, tokens/s and memory per GPU (mode step), or the gradient all-reduce\n"
             "alone (mode comm), from a machine file's calibration. Results are simulated, never measured.",
    .keys = agoq_sim_step_keys,
    .more_keys = agoq_sim_comm_keys,
    .flags = sim_flags,
    .notes = "comm mode sizes: -b -e -f over the fp32 gradient buffer (default 32K..1G, x32)",
    .run = agoq_exp_simulate,
    .tsv = sim_step_tsv,
    .ntsv = sizeof sim_step_tsv / sizeof sim_step_tsv[0],
    .host_only = 1,
    .finish = sim_finish,
};
