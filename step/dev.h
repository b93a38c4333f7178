/* Small device helpers of the step engine (step/dev.cu, CUDA builds only): elementwise glue
 * kernels (residual-gradient add, fp32 add, casts, seeded fills), CUDA events and memory
 * queries, behind plain C prototypes (streams as void *). Failing CUDA calls exit through
 * cudaCheck. */
#ifndef AGOQ_STEP_DEV_H
#define AGOQ_STEP_DEV_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = bf16(a + b), n elements (y may alias a or b) */
int step_dev_add_bf16(uint16_t *y, const uint16_t *a, const uint16_t *b, size_t n, void *stream);
/* y += x (fp32) */
int step_dev_add_f32(float *y, const float *x, size_t n, void *stream);
/* y = bf16(x) */
int step_dev_cast_bf16(uint16_t *y, const float *x, size_t n, void *stream);
/* x = value (fp32) */
int step_dev_fill_f32(float *x, size_t n, float value, void *stream);
/* x ~ std * N(0, 1) from a counter hash of (seed, i): fp32 / bf16 */
int step_dev_randn_f32(float *x, size_t n, uint64_t seed, float std, void *stream);
int step_dev_randn_bf16(uint16_t *x, size_t n, uint64_t seed, float std, void *stream);

void *step_dev_malloc(size_t bytes); /* NULL and one line when it fails (not an exit) */
/* Page-locked host memory (cudaMallocHost), zeroed: copies to and from it are straight DMA.
 * NULL and one line when it fails. */
void *step_dev_host_alloc(size_t bytes);
void step_dev_host_free(void *p);
void step_dev_free(void *p);
void step_dev_memset(void *p, size_t bytes, void *stream);
void step_dev_d2h(void *dst, const void *src, size_t bytes);
void step_dev_h2d(void *dst, const void *src, size_t bytes); /* synchronous */
void step_dev_sync(void);
void step_dev_meminfo(size_t *free_bytes, size_t *total_bytes);
void *step_dev_stream_create(void);
void step_dev_stream_destroy(void *s);
void *step_dev_event_create(void);
void step_dev_event_record(void *ev, void *stream);
float step_dev_event_ms(void *start, void *stop); /* synchronizes on stop */
void step_dev_event_destroy(void *ev);

#ifdef __cplusplus
}
#endif
#endif
