// libgpuscope-mpi.so: the MPI calls of `analyze --mpi` behind the C interface of
// job/mpi_transport.h. Built as its own module (not part of the job stage) only when MPI is found;
// the only file that includes <mpi.h>.
#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "job/mpi_transport.h"

namespace {

int Init(int* argc, char*** argv, int* rank, int* size) {
  int provided = 0;
  // The pool's threads never call MPI: only the main thread does.
  if (int e = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided)) return e;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

void Finalize() { MPI_Finalize(); }

void Abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

int GatherInt(int mine, int* all) {
  return MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

int GathervBytes(const void* mine, int n, void* all, const int* sizes, const int* offsets) {
  return MPI_Gatherv(mine, n, MPI_BYTE, all, sizes, offsets, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void ErrorString(int code, char* text, int capacity) {
  if (capacity <= 0) return;
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) len = 0;
  len = std::min(len, capacity - 1);
  std::memcpy(text, buf, static_cast<size_t>(len));
  text[len] = '\0';
}

const GpuscopeMpiTransport kTransport = {GPUSCOPE_MPI_ABI, Init,         Finalize,   Abort,
                                         GatherInt,        GathervBytes, ErrorString};

}  // namespace

extern "C" __attribute__((visibility("default"))) const GpuscopeMpiTransport*
gpuscope_mpi_transport(void) {
  return &kTransport;
}
