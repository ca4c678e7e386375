#include "monitor/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "analyze/monitor_stats.h"
#include "base/output_file.h"

namespace gpuscope::monitor {

namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

template <typename T>
void PutLittleEndian(std::string* out, T v) {
  // Protobuf fixed64/fixed32 and TFRecord lengths are little-endian whatever the host order.
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  for (size_t i = 0; i < sizeof v; ++i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void PutTag(std::string* out, int field, int wire_type) {
  PutVarint(out, static_cast<uint64_t>(field << 3 | wire_type));
}

constexpr int kWireVarint = 0, kWireFixed64 = 1, kWireBytes = 2, kWireFixed32 = 5;

void PutBytes(std::string* out, int field, std::string_view bytes) {
  PutTag(out, field, kWireBytes);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

std::string EncodeEventHeader(double wall_time_s, int64_t step) {
  std::string e;
  PutTag(&e, 1, kWireFixed64);
  PutLittleEndian(&e, wall_time_s);
  if (step != 0) {  // proto3: a default value is not written
    PutTag(&e, 2, kWireVarint);
    PutVarint(&e, static_cast<uint64_t>(step));
  }
  return e;
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string EncodeScalarEvent(double wall_time_s, int64_t step,
                              const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    PutBytes(&v, 1, tag);
    PutTag(&v, 2, kWireFixed32);
    PutLittleEndian(&v, value);
    PutBytes(&summary, 1, v);
  }
  std::string e = EncodeEventHeader(wall_time_s, step);
  PutBytes(&e, 5, summary);
  return e;
}

std::string FrameTfRecord(std::string_view data) {
  std::string r;
  std::string length;
  PutLittleEndian(&length, static_cast<uint64_t>(data.size()));
  r += length;
  PutLittleEndian(&r, MaskCrc32c(Crc32c(length)));
  r.append(data);
  PutLittleEndian(&r, MaskCrc32c(Crc32c(data)));
  return r;
}

std::vector<std::pair<std::string, float>> ScalarsOf(const Sample& s) {
  std::vector<std::pair<std::string, float>> out;
  for (const GpuSample& g : s.gpus) {
    const std::string p = "gpu" + std::to_string(g.index) + "/";
    if (g.sm_util_pct) out.emplace_back(p + "sm_util_pct", static_cast<float>(*g.sm_util_pct));
    if (g.mem_util_pct) out.emplace_back(p + "mem_util_pct", static_cast<float>(*g.mem_util_pct));
    if (g.mem_used_bytes)
      out.emplace_back(p + "memory_used_GB", static_cast<float>(*g.mem_used_bytes / 1e9));
    if (g.power_w) out.emplace_back(p + "power_W", static_cast<float>(*g.power_w));
    if (g.sm_clock_mhz) out.emplace_back(p + "sm_clock_MHz", static_cast<float>(*g.sm_clock_mhz));
    if (g.temperature_c)
      out.emplace_back(p + "temperature_C", static_cast<float>(*g.temperature_c));
  }
  if (!s.processes.empty()) {
    const analyze::TreeCpu cpu = analyze::SplitTreeCpu(s);
    out.emplace_back("cpu/main_process_pct", static_cast<float>(cpu.main_pct));
    out.emplace_back("cpu/workers_pct", static_cast<float>(cpu.workers_pct));
    out.emplace_back("cpu/tree_pct", static_cast<float>(cpu.tree_pct));
  }
  return out;
}

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::Error(StatusCode::kIoError,
                         "cannot create --tensorboard folder " + dir + ": " + ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const std::string path = dir + "/events.out.tfevents." +
                           std::to_string(static_cast<long long>(std::time(nullptr))) + "." + host +
                           ".gpuscope";
  // O_CLOEXEC (OpenOutputFile's): not inherited by the command.
  GPUSCOPE_TRY(out, OpenOutputFile(path, "--tensorboard"));
  std::FILE* f = fdopen(out->fd, "wb");
  if (!f) {
    close(out->fd);
    return Status::Error(StatusCode::kIoError,
                         "cannot write " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter());
  w->path_ = path;
  w->file_ = f;
  std::string first = EncodeEventHeader(static_cast<double>(std::time(nullptr)), 0);
  PutBytes(&first, 3, "brain.Event:2");
  w->Put(FrameTfRecord(first));
  return w;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::Put(const std::string& record) {
  if (file_ && std::fwrite(record.data(), 1, record.size(), file_) != record.size()) failed_ = true;
}

void TensorBoardWriter::Write(const Sample& sample) {
  const auto scalars = ScalarsOf(sample);
  const int64_t step = step_++;
  if (scalars.empty()) return;
  Put(FrameTfRecord(EncodeScalarEvent(sample.time_ns / 1e9, step, scalars)));
  // TensorBoard reloads files as they grow: flush about every 5 s (live view, few syscalls).
  if (sample.time_ns - last_flush_ns_ >= 5'000'000'000LL) {
    std::fflush(file_);
    last_flush_ns_ = sample.time_ns;
  }
}

Status TensorBoardWriter::Finish() {
  if (!file_) return Status::Ok();
  if (std::fclose(file_) != 0) failed_ = true;
  file_ = nullptr;
  if (failed_) return Status::Error(StatusCode::kIoError, "writing " + path_ + " failed");
  return Status::Ok();
}

}  // namespace gpuscope::monitor
