// Writes sampled metrics as TensorBoard scalars, so GPU utilisation shows next to the loss curves.
//
// The file is TensorBoard's event-file format: a sequence of TFRecords
//   uint64 length (little-endian) · uint32 masked CRC32C of those 8 bytes · data ·
//   uint32 masked CRC32C of data
// where each record's data is a serialised `tensorflow.Event` protobuf (wall_time=1 double,
// step=2 int64, file_version=3 string, summary=5 Summary; Summary.value=1 with tag=1 string and
// simple_value=2 float). The first record carries file_version "brain.Event:2".
//
// Written by hand, CRC32C included: no Debian package offers TFRecord/Event writing for C++
// without TensorFlow itself, and the ~100 lines below are all the format needs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscope/status.h"
#include "model/monitor_samples.h"

namespace gpuscope::monitor {

// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven.
uint32_t Crc32c(std::string_view data);
// TFRecord's mask: rotate right by 15 bits and add 0xa282ead8.
uint32_t MaskCrc32c(uint32_t crc);

// The serialised Event protobuf of scalars at one step (exposed for tests).
std::string EncodeScalarEvent(double wall_time_s, int64_t step,
                              const std::vector<std::pair<std::string, float>>& scalars);
// One TFRecord around `data`.
std::string FrameTfRecord(std::string_view data);

// Scalars of one sample: "gpu0/sm_util_pct", "gpu0/memory_used_GB", "gpu0/power_W",
// "cpu/main_process_pct", "cpu/workers_pct", "cpu/tree_pct", … (docs/monitor.md).
std::vector<std::pair<std::string, float>> ScalarsOf(const Sample& sample);

class TensorBoardWriter {
 public:
  // Creates DIR (and parents) and events.out.tfevents.<unix s>.<host>.gpuscope in it.
  static Result<std::unique_ptr<TensorBoardWriter>> Open(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  // Step = sample number from 0; wall time = the sample's unix time.
  void Write(const Sample& sample);
  Status Finish();
  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter() = default;
  void Put(const std::string& record);
  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t step_ = 0;
  int64_t last_flush_ns_ = 0;
  bool failed_ = false;
};

}  // namespace gpuscope::monitor
