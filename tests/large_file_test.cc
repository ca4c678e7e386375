// Inputs beyond 4 GiB: 64-bit offsets through inflate, scanner, batching and diagnostics.
// The file is a multi-member gzip whose middle is 4.2 GiB of whitespace between two events, so the
// test needs ~4 MB of disk and no big model, yet every stage sees offsets past 2^32.
#include <gtest/gtest.h>

#include "gpuscope/ingest.h"
#include "test_util.h"

namespace gpuscope {
namespace {

TEST(LargeFile, OffsetsBeyondFourGiBThroughGzip) {
  const std::string head =
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "first", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}},)";
  const std::string spaces(size_t{64} << 20, ' ');
  const std::string tail =
      R"({"ph": "X", "cat": "kernel", "name": "last", "pid": 0, "tid": 7, "ts": 5, "dur": 2}, {"ph": "X", "ts": }, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.5, "dur": 0.25, "args": {"correlation": 1}}]})";
  const int members = 66;  // 66 × 64 MiB = 4.125 GiB of whitespace
  const std::string gz_spaces = testing::Gzip(spaces);
  std::string file = testing::Gzip(head);
  for (int i = 0; i < members; ++i) file += gz_spaces;
  file += testing::Gzip(tail);
  const std::string path = testing::TempPath("over_4gib.json.gz");
  testing::WriteFile(path, file);

  LoadOptions options;
  options.threads = 2;
  auto trace = LoadTrace(path, options);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const uint64_t expected_bytes = head.size() + members * spaces.size() + tail.size();
  EXPECT_GT(expected_bytes, uint64_t{1} << 32);
  EXPECT_EQ(trace->info.json_bytes, expected_bytes);
  EXPECT_EQ(trace->info.events_total, 4u);
  ASSERT_EQ(trace->gpu.size(), 2u);
  EXPECT_EQ(trace->Str(trace->gpu.name[1]), "last");
  EXPECT_EQ(trace->gpu.launch[0], 0);
  EXPECT_EQ(trace->runtime.dur_ns[0], 250);
  const size_t malformed = static_cast<size_t>(Diag::kMalformedEvent);
  EXPECT_EQ(trace->diagnostics.count[malformed], 1u);
  const uint64_t malformed_offset =
      head.size() + members * spaces.size() + tail.find(R"({"ph": "X", "ts": })");
  EXPECT_EQ(trace->diagnostics.first_offset[malformed], static_cast<int64_t>(malformed_offset));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gpuscope
