/* Error metrics, defined once. All sums in double. For a reference r and an approximation a:
 *   mse      = mean (a-r)^2                 rmse = sqrt(mse)
 *   nmse     = sum (a-r)^2 / sum r^2        (0 when both sums are 0; +inf when only r is 0)
 *   snr_db   = -10 log10(nmse)              (+inf for an exact match)
 *   max_abs  = max |a-r|
 *   max_rel  = max |a-r| / |r| over r != 0  (0 when every r is 0)
 *   cosine   = <a,r> / (|a| |r|)            (1 when both are all-zero, 0 when only one is)
 * Pairs where either value is not finite are skipped and counted in nonfinite. */
#ifndef AGOQ_METRICS_H
#define AGOQ_METRICS_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct agoq_error_stats_s {
    size_t n, nonfinite;
    double mse, rmse, nmse, snr_db, max_abs, max_rel, cosine;
} agoq_error_stats;

agoq_error_stats agoq_compare(const float *ref, const float *approx, size_t n);
/* Normalized L2 error ||a - r|| / ||r|| (the paper's Table 13 metric) = sqrt(nmse). */
double agoq_norm_l2(const agoq_error_stats *s);

#ifdef __cplusplus
}
#endif
#endif
