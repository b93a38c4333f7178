/* Alpha-beta cost models of the collectives a training step issues (the simulator's
 * communication term). A message of n bytes over one link costs alpha + n / bw.
 *
 * A process group is p ranks laid out r per node over p / r nodes. Ranks inside a node talk over
 * the intra-node fabric (NVLink or PCIe, bandwidth per GPU); traffic that leaves a node goes
 * through that node's NICs, whose aggregate bandwidth is shared by every rank of the group in the
 * node and by `concurrent` groups that communicate at the same time (e.g. the 8 data-parallel
 * groups of a TP=8 layout all reduce gradients at once over the same NIC).
 *
 * Formulas (n = bytes of the full buffer each rank holds before a reduce or after a gather):
 *   ring all-reduce        2(p-1) a + 2 (p-1)/p n / B
 *   tree all-reduce        2 ceil(log2 p) a + 2 n / B        (pipelined double binary tree)
 *   reduce-scatter/gather  (p-1) a + (p-1)/p n / B
 *   all-to-all (pairwise)  (p-1) a + max(intra part, inter part)  (see collective_model.c)
 *   send/recv              a + n / B
 * A ring that spans nodes crosses each node boundary once per direction, so its bandwidth is
 * B = min(B_intra, B_nic_node / concurrent) and its per-step latency the inter-node one. */
#ifndef AGOQ_SIM_COLLECTIVE_MODEL_H
#define AGOQ_SIM_COLLECTIVE_MODEL_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double alpha_s; /* latency per message step, seconds (>= 0) */
    double bw_Bps;  /* bandwidth, bytes/s, one direction (> 0; INFINITY allowed) */
} agoq_link;

typedef struct {
    agoq_link intra; /* GPU <-> GPU inside a node, per GPU */
    agoq_link inter; /* node <-> node: bw is the node's aggregate NIC bandwidth */
} agoq_fabric;

typedef struct {
    int p;          /* ranks in the group, >= 1 */
    int per_node;   /* ranks of the group in one node: divides p (p/per_node nodes) */
    int concurrent; /* groups sharing each node's NICs at the same time, >= 1 */
} agoq_group;

typedef enum { AGOQ_AR_RING, AGOQ_AR_TREE, AGOQ_AR_AUTO } agoq_allreduce_algo;

/* 0 if the group is well formed, else -1 with a message naming the field. */
int agoq_group_check(const agoq_group *g);
int agoq_group_nodes(const agoq_group *g);
/* The link a ring over g sees: intra link when the group is inside one node, else the
 * bottleneck of the two fabrics as described above. */
agoq_link agoq_ring_link(const agoq_fabric *f, const agoq_group *g);

double agoq_t_allreduce(const agoq_fabric *f, const agoq_group *g, double bytes, agoq_allreduce_algo algo);
double agoq_t_reduce_scatter(const agoq_fabric *f, const agoq_group *g, double bytes);
double agoq_t_allgather(const agoq_fabric *f, const agoq_group *g, double bytes);
double agoq_t_alltoall(const agoq_fabric *f, const agoq_group *g, double bytes);
/* Point-to-point between two ranks, same node (cross_node = 0) or not. */
double agoq_t_sendrecv(const agoq_fabric *f, double bytes, int cross_node, int concurrent);

const char *agoq_allreduce_algo_name(agoq_allreduce_algo a);
int agoq_allreduce_algo_by_name(const char *s); /* -1 when unknown */

#ifdef __cplusplus
}
#endif
#endif
