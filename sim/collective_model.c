/* Alpha-beta collective costs; the formulas are in collective_model.h. */
#include "sim/collective_model.h"

#include <math.h>
#include <string.h>

#include "core/common.h"

int agoq_group_check(const agoq_group *g) {
    AGOQ_REQUIRE(g->p >= 1, "collective group: p = %d must be >= 1", g->p);
    AGOQ_REQUIRE(g->per_node >= 1 && g->p % g->per_node == 0,
                 "collective group: per_node = %d must be >= 1 and divide p = %d", g->per_node, g->p);
    AGOQ_REQUIRE(g->concurrent >= 1, "collective group: concurrent = %d must be >= 1", g->concurrent);
    return 0;
}

int agoq_group_nodes(const agoq_group *g) { return g->p / g->per_node; }

agoq_link agoq_ring_link(const agoq_fabric *f, const agoq_group *g) {
    if (agoq_group_nodes(g) <= 1) return f->intra;
    agoq_link l;
    l.alpha_s = fmax(f->intra.alpha_s, f->inter.alpha_s);
    double nic = f->inter.bw_Bps / (double)g->concurrent;
    /* With one rank per node every hop is inter-node; otherwise the ring also uses the intra links. */
    l.bw_Bps = g->per_node > 1 ? fmin(f->intra.bw_Bps, nic) : nic;
    return l;
}

/* (p-1)/p of the buffer crosses each ring link per pass: the bandwidth-optimal fraction. */
static double ring_fraction(int p) { return (double)(p - 1) / (double)p; }

static double t_ring_pass(const agoq_fabric *f, const agoq_group *g, double bytes) {
    if (g->p <= 1 || bytes <= 0) return 0.0;
    agoq_link l = agoq_ring_link(f, g);
    return (double)(g->p - 1) * l.alpha_s + ring_fraction(g->p) * bytes / l.bw_Bps;
}

double agoq_t_reduce_scatter(const agoq_fabric *f, const agoq_group *g, double bytes) {
    return t_ring_pass(f, g, bytes);
}

double agoq_t_allgather(const agoq_fabric *f, const agoq_group *g, double bytes) {
    return t_ring_pass(f, g, bytes);
}

static double t_tree_allreduce(const agoq_fabric *f, const agoq_group *g, double bytes) {
    agoq_link l = agoq_ring_link(f, g);
    /* Reduce up and broadcast down a binary tree; pipelining hides depth for the bandwidth term. */
    return 2.0 * ceil(log2((double)g->p)) * l.alpha_s + 2.0 * bytes / l.bw_Bps;
}

double agoq_t_allreduce(const agoq_fabric *f, const agoq_group *g, double bytes, agoq_allreduce_algo algo) {
    if (g->p <= 1 || bytes <= 0) return 0.0;
    double ring = 2.0 * t_ring_pass(f, g, bytes);
    if (algo == AGOQ_AR_RING) return ring;
    double tree = t_tree_allreduce(f, g, bytes);
    return algo == AGOQ_AR_TREE ? tree : fmin(ring, tree);
}

double agoq_t_alltoall(const agoq_fabric *f, const agoq_group *g, double bytes) {
    if (g->p <= 1 || bytes <= 0) return 0.0;
    int p = g->p, r = g->per_node, nodes = agoq_group_nodes(g);
    /* Each rank sends bytes/p to every other rank: (r-1) shares stay in the node, (p-r) leave it,
     * and the node's NICs carry the leaving shares of all r ranks of every concurrent group. */
    double share = bytes / (double)p;
    double t_intra = (double)(r - 1) * share / f->intra.bw_Bps;
    double t_inter = nodes > 1 ? (double)r * (double)g->concurrent * (double)(p - r) * share / f->inter.bw_Bps : 0.0;
    double alpha = nodes > 1 ? fmax(f->intra.alpha_s, f->inter.alpha_s) : f->intra.alpha_s;
    return (double)(p - 1) * alpha + fmax(t_intra, t_inter);
}

double agoq_t_sendrecv(const agoq_fabric *f, double bytes, int cross_node, int concurrent) {
    if (bytes <= 0) return 0.0;
    if (!cross_node) return f->intra.alpha_s + bytes / f->intra.bw_Bps;
    return f->inter.alpha_s + bytes * (double)(concurrent < 1 ? 1 : concurrent) / f->inter.bw_Bps;
}

static const char *const g_algo_names[] = {"ring", "tree", "auto"};

const char *agoq_allreduce_algo_name(agoq_allreduce_algo a) { return g_algo_names[a]; }

int agoq_allreduce_algo_by_name(const char *s) {
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, g_algo_names[i]) == 0) return i;
    return -1;
}
