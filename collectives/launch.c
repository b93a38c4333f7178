/* Process layout of the nccl backend: one process driving every visible GPU, or (MPI=1 build,
 * launched with `mpirun -np N`) one process per GPU, as nccl-tests does. MPI is initialised
 * here on first use and finalised at exit, so the rest of agoq needs no MPI awareness. */
#include <stdlib.h>

#include "collectives/driver.h"
#include "core/backend.h"
#include "core/common.h"
#if AGOQ_HAVE_MPI
#include <mpi.h>

#include "core/check.h"

static void finalize_mpi(void) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
}
#endif

void agoq_coll_mpi_world(int *rank, int *size) {
    *rank = 0;
    *size = 1;
#if AGOQ_HAVE_MPI
    int init = 0;
    mpiCheck(MPI_Initialized(&init));
    if (!init) {
        mpiCheck(MPI_Init(NULL, NULL));
        atexit(finalize_mpi);
    }
    mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, rank));
    mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, size));
    agoq_set_rank(*rank);
#endif
}

void agoq_coll_mpi_bcast(void *buf, size_t bytes) {
#if AGOQ_HAVE_MPI
    mpiCheck(MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
#else
    (void)buf;
    (void)bytes;
#endif
}

int agoq_coll_process_rank(void) {
    int r, s;
    agoq_coll_mpi_world(&r, &s);
    return r;
}

int agoq_coll_default_ranks(void) {
    int r, s;
    agoq_coll_mpi_world(&r, &s);
    if (s > 1) return s;
    char why[256];
    int n = agoq_cuda_devices(why, sizeof why);
    return n > 0 ? n : 1;
}
