#include "job/mpi.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <system_error>

#include <dlfcn.h>
#include <unistd.h>

#include "job/mpi_transport.h"
#include "store/summary_file.h"

namespace gpuscope::job {

std::vector<std::vector<size_t>> PlanMap(const std::vector<uint64_t>& sizes, int processes) {
  const size_t n = static_cast<size_t>(std::max(processes, 1));
  std::vector<std::vector<size_t>> plan(n);
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<uint64_t> load(n, 0);
  for (size_t file : order) {
    const size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    plan[p].push_back(file);
    load[p] += std::max<uint64_t>(sizes[file], 1);
  }
  for (std::vector<size_t>& files : plan) std::sort(files.begin(), files.end());
  return plan;
}

namespace {

// What one process sends besides its summaries, as bytes: its MapStats, then per failure its
// index in the path list, its code and its message (length-prefixed; messages may hold any
// byte). Native byte order: the processes of one job run the same binary.
void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

bool GetU64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  std::memcpy(v, in->data(), 8);
  in->remove_prefix(8);
  return true;
}

struct IndexedFailure {
  size_t index = 0;
  Status status;
};

void PutDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  PutU64(out, bits);
}

bool GetDouble(std::string_view* in, double* v) {
  uint64_t bits;
  if (!GetU64(in, &bits)) return false;
  std::memcpy(v, &bits, 8);
  return true;
}

std::string EncodeExtras(const MapStats& stats, const std::vector<IndexedFailure>& failures) {
  std::string out;
  PutU64(&out, stats.traces);
  PutDouble(&out, stats.load_seconds);
  PutDouble(&out, stats.analyze_seconds);
  PutU64(&out, stats.file_bytes);
  PutU64(&out, stats.json_bytes);
  PutU64(&out, stats.events);
  PutU64(&out, stats.max_model_bytes);
  for (double seconds : stats.analysis_cpu_seconds) PutDouble(&out, seconds);
  PutU64(&out, failures.size());
  for (const IndexedFailure& f : failures) {
    PutU64(&out, f.index);
    PutU64(&out, static_cast<uint64_t>(f.status.code()));
    PutU64(&out, f.status.message().size());
    out += f.status.message();
  }
  return out;
}

bool DecodeExtras(std::string_view in, MapStats* stats, std::vector<IndexedFailure>* out) {
  MapStats s;
  uint64_t model = 0, n = 0;
  if (!GetU64(&in, &s.traces) || !GetDouble(&in, &s.load_seconds) ||
      !GetDouble(&in, &s.analyze_seconds) || !GetU64(&in, &s.file_bytes) ||
      !GetU64(&in, &s.json_bytes) || !GetU64(&in, &s.events) || !GetU64(&in, &model))
    return false;
  for (double& seconds : s.analysis_cpu_seconds)
    if (!GetDouble(&in, &seconds)) return false;
  if (!GetU64(&in, &n)) return false;
  s.max_model_bytes = static_cast<size_t>(model);
  stats->Add(s);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t index = 0, code = 0, len = 0;
    if (!GetU64(&in, &index) || !GetU64(&in, &code) || !GetU64(&in, &len) || in.size() < len)
      return false;
    out->push_back({static_cast<size_t>(index),
                    Status::Error(static_cast<StatusCode>(code), std::string(in.substr(0, len)))});
    in.remove_prefix(len);
  }
  return in.empty();
}

Status MpiError(const GpuscopeMpiTransport& mpi, const char* what, int code) {
  char text[512];
  mpi.error_string(code, text, sizeof text);
  return Status::Error(StatusCode::kIoError,
                       std::string("MPI: ") + what + " failed: " + std::string(text));
}

// The plugin's path: $GPUSCOPE_MPI_PLUGIN, else beside the binary (a build tree), else
// ../lib/gpuscope/ from it (installed: /usr/bin/gpuscope, /usr/lib/gpuscope/). "" when none.
std::string PluginPath() {
  if (const char* p = std::getenv("GPUSCOPE_MPI_PLUGIN"); p != nullptr && *p != '\0') return p;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const std::filesystem::path& candidate :
       {exe.parent_path() / "libgpuscope-mpi.so",
        exe.parent_path().parent_path() / "lib" / "gpuscope" / "libgpuscope-mpi.so"})
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
  return "";
}

// The plugin loaded once per process (never unloaded: MPI_Finalize runs at exit).
Result<const GpuscopeMpiTransport*> LoadTransport() {
  const std::string path = PluginPath();
  if (path.empty())
    return Status::Error(
        StatusCode::kUsage,
        "--mpi needs gpuscope's MPI plugin, libgpuscope-mpi.so (it links OpenMPI, which plain "
        "gpuscope does not), and none is beside the binary or in ../lib/gpuscope (hint: install "
        "the gpuscope-mpi package, or build with Debian's libopenmpi-dev: tools/build.sh; or "
        "spread the work with `gpuscope map` and `gpuscope reduce`, see docs/jobs.md)");
  // RTLD_GLOBAL: OpenMPI's own components, loaded by libmpi, resolve its symbols.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr)
    return Status::Error(StatusCode::kUsage,
                         "--mpi: cannot load " + path + ": " + dlerror() +
                             " (hint: install Debian's OpenMPI: apt install libopenmpi3)");
  using Entry = const GpuscopeMpiTransport* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "gpuscope_mpi_transport"));
  const GpuscopeMpiTransport* t = entry != nullptr ? entry() : nullptr;
  if (t == nullptr || t->abi != GPUSCOPE_MPI_ABI)
    return Status::Error(StatusCode::kUsage,
                         path + " is not this gpuscope's MPI plugin (another version?)");
  return t;
}

// Gathers one byte string per process on process 0 (sizes first, then the bytes).
Result<std::vector<std::string>> Gather(const std::string& mine, const MpiWorld& world) {
  if (mine.size() > static_cast<size_t>(INT_MAX))
    return Status::Error(StatusCode::kInternal,
                         "MPI: one process's summaries exceed 2 GiB; run more processes");
  const GpuscopeMpiTransport& mpi = world.transport();
  const int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(world.root() ? static_cast<size_t>(world.size()) : 0);
  if (int e = mpi.gather_int(my_size, sizes.data())) return MpiError(mpi, "gathering sizes", e);
  std::vector<int> offsets(sizes.size());
  std::string all;
  if (world.root()) {
    int64_t total = 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      offsets[p] = static_cast<int>(total);
      total += sizes[p];
    }
    if (total > INT_MAX)
      return Status::Error(StatusCode::kInternal,
                           "MPI: the gathered summaries exceed 2 GiB; reduce with `gpuscope "
                           "reduce` from summary files instead");
    all.resize(static_cast<size_t>(total));
  }
  if (int e = mpi.gatherv_bytes(mine.data(), my_size, all.data(), sizes.data(), offsets.data()))
    return MpiError(mpi, "gathering summaries", e);
  std::vector<std::string> parts;
  for (size_t p = 0; p < sizes.size(); ++p)
    parts.push_back(all.substr(static_cast<size_t>(offsets[p]), static_cast<size_t>(sizes[p])));
  return parts;
}

}  // namespace

bool MpiBuilt() { return !PluginPath().empty(); }

Result<std::unique_ptr<MpiWorld>> MpiWorld::Start(int* argc, char*** argv) {
  GPUSCOPE_TRY(transport, LoadTransport());
  const GpuscopeMpiTransport& mpi = **transport;
  int rank = 0, size = 1;
  if (int e = mpi.init(argc, argv, &rank, &size)) return MpiError(mpi, "MPI_Init_thread", e);
  return std::unique_ptr<MpiWorld>(new MpiWorld(mpi, rank, size));
}

MpiWorld::~MpiWorld() { mpi_->finalize(); }

void MpiWorld::Abort(int code) {
  mpi_->abort(code);
  std::exit(code);  // MPI_Abort does not return; should it, end this process at least
}

Result<Mapped> MapTracesMpi(MpiWorld& world, const std::vector<std::string>& paths,
                            const MapOptions& options, ThreadPool& pool) {
  std::vector<uint64_t> sizes(paths.size(), 0);
  for (size_t i = 0; i < paths.size(); ++i) {
    std::error_code ec;
    const uint64_t bytes = std::filesystem::file_size(paths[i], ec);
    sizes[i] = ec ? 0 : bytes;  // unreadable: its map reports why
  }
  const std::vector<size_t> mine = PlanMap(sizes, world.size())[static_cast<size_t>(world.rank())];
  std::vector<std::string> my_paths;
  for (size_t i : mine) my_paths.push_back(paths[i]);
  Mapped mapped = MapTraces(my_paths, options, pool);

  // Failures name their file; their index in `paths` restores the single-process order. The
  // longest path found in the message is the file (dir/a.json is inside dir/a.json.gz).
  std::vector<IndexedFailure> failures;
  for (Status& f : mapped.failures) {
    size_t index = paths.size(), matched = 0;
    for (size_t i : mine)
      if (paths[i].size() > matched && f.message().find(paths[i]) != std::string::npos) {
        index = i;
        matched = paths[i].size();
      }
    failures.push_back({index, std::move(f)});
  }
  GPUSCOPE_TRY(summaries, store::SerializeSummaries(mapped.ranks));
  GPUSCOPE_TRY(gathered_summaries, Gather(*summaries, world));
  GPUSCOPE_TRY(gathered_failures, Gather(EncodeExtras(mapped.stats, failures), world));
  if (!world.root()) return Mapped{};

  Mapped all;
  std::vector<IndexedFailure> all_failures;
  for (size_t p = 0; p < gathered_summaries->size(); ++p) {
    auto ranks = store::DeserializeSummaries((*gathered_summaries)[p],
                                             "summaries of MPI process " + std::to_string(p));
    GPUSCOPE_RETURN_IF_ERROR(ranks.status());
    for (report::RankSummary& r : *ranks) all.ranks.push_back(std::move(r));
    if (!DecodeExtras((*gathered_failures)[p], &all.stats, &all_failures))
      return Status::Error(
          StatusCode::kInternal,
          "MPI: damaged statistics or failure list from process " + std::to_string(p));
  }
  SortSummaries(&all.ranks);
  std::stable_sort(
      all_failures.begin(), all_failures.end(),
      [](const IndexedFailure& a, const IndexedFailure& b) { return a.index < b.index; });
  for (IndexedFailure& f : all_failures) all.failures.push_back(std::move(f.status));
  return all;
}

}  // namespace gpuscope::job
