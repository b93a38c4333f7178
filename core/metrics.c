/* Error metrics; definitions in metrics.h. */
#include "core/metrics.h"

#include <math.h>

agoq_error_stats agoq_compare(const float *ref, const float *approx, size_t n) {
    agoq_error_stats s = {0};
    double se = 0, sr = 0, sa = 0, dot = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], a = approx[i];
        if (!isfinite(r) || !isfinite(a)) {
            s.nonfinite++;
            continue;
        }
        double e = a - r, ae = fabs(e);
        se += e * e;
        sr += r * r;
        sa += a * a;
        dot += a * r;
        if (ae > s.max_abs) s.max_abs = ae;
        if (r != 0.0 && ae / fabs(r) > s.max_rel) s.max_rel = ae / fabs(r);
        s.n++;
    }
    s.mse = s.n ? se / (double)s.n : 0.0;
    s.rmse = sqrt(s.mse);
    s.nmse = sr > 0 ? se / sr : (se > 0 ? INFINITY : 0.0);
    s.snr_db = s.nmse > 0 ? -10.0 * log10(s.nmse) : INFINITY;
    if (sr > 0 && sa > 0) s.cosine = dot / (sqrt(sr) * sqrt(sa));
    else s.cosine = (sr == 0 && sa == 0) ? 1.0 : 0.0;
    return s;
}

double agoq_norm_l2(const agoq_error_stats *s) { return sqrt(s->nmse); }
