// The MPI calls `analyze --mpi` makes, as the C interface of a plugin (issue 34: OpenMPI is a dozen
// HPC libraries that most users never need). libgpuscope-mpi.so (src/job/mpi_plugin.cc) links
// OpenMPI and exports gpuscope_mpi_transport(); the gpuscope binary links no MPI and dlopens the
// plugin only when --mpi is given (job/mpi.cc). In Debian terms: package gpuscope-mpi, which
// depends on OpenMPI; gpuscope itself only suggests it.
#pragma once

extern "C" {

// Bumped when a member changes; the binary refuses a plugin of another ABI.
#define GPUSCOPE_MPI_ABI 1

struct GpuscopeMpiTransport {
  int abi;  // GPUSCOPE_MPI_ABI of the plugin
  // MPI_Init_thread (FUNNELED) and this process's rank and the world's size. Returns an MPI error
  // code, 0 when done.
  int (*init)(int* argc, char*** argv, int* rank, int* size);
  void (*finalize)(void);
  void (*abort)(int code);
  // MPI_Gather of one int per process into `all` (process 0's; size() ints there).
  int (*gather_int)(int mine, int* all);
  // MPI_Gatherv of `n` bytes per process into `all` at `offsets` (process 0's).
  int (*gatherv_bytes)(const void* mine, int n, void* all, const int* sizes, const int* offsets);
  // MPI_Error_string into `text` (NUL-terminated, at most `capacity` bytes).
  void (*error_string)(int code, char* text, int capacity);
};

// The plugin's one exported symbol.
const GpuscopeMpiTransport* gpuscope_mpi_transport(void);
}
