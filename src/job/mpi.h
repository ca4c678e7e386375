// `mpirun -n N gpuscope analyze --mpi FOLDER`: the map spread over N processes on any number of
// nodes (Debian's OpenMPI; `srun` under Slurm), the summaries gathered on process 0, which reduces
// and prints. The output is identical to the single-process run: process 0 gets the same
// summaries, in the same order, and reduces them with the same code. The MPI calls live in a
// plugin, libgpuscope-mpi.so (job/mpi_transport.h; built with the CMake option GPUSCOPE_MPI when
// MPI is found), loaded only by MpiWorld::Start: the binary links no MPI. Without the plugin
// MpiBuilt() is false and Start fails with a message saying how to get it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "gpuscope/status.h"
#include "job/map_reduce.h"

struct GpuscopeMpiTransport;  // job/mpi_transport.h (a C interface, so not in the namespace)

namespace gpuscope::job {

// True when the MPI plugin is there to load (beside the binary, in ../lib/gpuscope, or
// $GPUSCOPE_MPI_PLUGIN).
bool MpiBuilt();

// The MPI world for one run: MPI_Init on Start, MPI_Finalize when destroyed. One per process.
class MpiWorld {
 public:
  static Result<std::unique_ptr<MpiWorld>> Start(int* argc, char*** argv);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  const GpuscopeMpiTransport& transport() const { return *mpi_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  // Ends every process of the job with `code` (MPI_Abort): for a failure on one process that
  // the others would otherwise wait for at the gather.
  [[noreturn]] void Abort(int code);

 private:
  MpiWorld(const GpuscopeMpiTransport& mpi, int rank, int size)
      : mpi_(&mpi), rank_(rank), size_(size) {}
  const GpuscopeMpiTransport* mpi_;
  int rank_ = 0;
  int size_ = 1;
};

// Which process maps which file: the largest files first, each to the process with the fewest
// bytes so far (ties: the lowest process). Deterministic from the sizes alone, so every process
// computes the same plan without talking. Returns, per process, indices into `sizes`.
std::vector<std::vector<size_t>> PlanMap(const std::vector<uint64_t>& sizes, int processes);

// Maps this process's share of `paths` (PlanMap over their sizes) and gathers every process's
// summaries and failures on process 0, ordered as MapTraces orders them for the whole list. On
// the other processes returns an empty Mapped. A failure to send or receive is an error on every
// process that sees it.
Result<Mapped> MapTracesMpi(MpiWorld& world, const std::vector<std::string>& paths,
                            const MapOptions& options, ThreadPool& pool);

}  // namespace gpuscope::job
