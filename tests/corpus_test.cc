// Every real trace loads, and its counts agree with the independent counts in
// reference/trace_counts.tsv (a plain Python reading of the JSON; definitions in
// shared/reference/README.md and tests/data/README.md). Traces come from tests/data or shared/.
#include <gtest/gtest.h>

#include <map>

#include "analyze/trace_summary.h"
#include "gpuscope/ingest.h"
#include "test_util.h"

namespace gpuscope {
namespace {

struct Expected {
  std::string file;
  std::map<std::string, uint64_t> counts;
};

std::vector<Expected> ReadCounts() {
  std::vector<Expected> rows;
  std::istringstream in(testing::ReadFile(testing::RealReference("trace_counts.tsv")));
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& s) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, '\t')) parts.push_back(part);
    return parts;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto parts = split(line);
    if (header.empty()) {
      header = parts;
      continue;
    }
    Expected e;
    e.file = parts[0];
    for (size_t i = 1; i < parts.size() && i < header.size(); ++i)
      e.counts[header[i]] = std::stoull(parts[i]);
    rows.push_back(e);
  }
  return rows;
}

TEST(Corpus, EveryTraceLoadsWithTheIndependentCounts) {
  GPUSCOPE_REQUIRE_REAL("reference/trace_counts.tsv");
  const std::vector<Expected> rows = ReadCounts();
  ASSERT_EQ(rows.size(), 20u) << "trace_counts.tsv changed; review this test";
  testing::RealParts parts;
  for (const Expected& e : rows) {
    if (!parts.Have({"traces/" + e.file})) continue;
    SCOPED_TRACE(e.file);
    LoadOptions keep_flows;
    keep_flows.keep_flows = true;  // the ac2g count below reads them
    auto loaded = LoadTrace(testing::RealTrace(e.file), keep_flows);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    const Trace& t = *loaded;
    const analyze::TraceSummary s = analyze::SummarizeTrace(t);
    const auto& c = e.counts;
    EXPECT_EQ(t.info.events_total, c.at("events"));
    EXPECT_EQ(s.counts.kernels, c.at("kernels"));
    EXPECT_EQ(s.counts.nccl_kernels, c.at("nccl_kernels"));
    EXPECT_EQ(s.counts.memcpys, c.at("memcpy"));
    EXPECT_EQ(s.counts.memsets, c.at("memset"));
    EXPECT_EQ(s.counts.gpu_syncs, c.at("cuda_sync"));
    EXPECT_EQ(s.counts.runtime_calls, c.at("runtime_calls"));
    EXPECT_EQ(s.counts.kernel_launches, c.at("launch_calls"));
    EXPECT_EQ(s.counts.cpu_ops, c.at("cpu_ops"));
    EXPECT_EQ(s.counts.profiler_steps, c.at("profiler_steps"));
    EXPECT_EQ(s.counts.dataloader_ops, c.at("dataloader_next"));
    EXPECT_EQ(s.counts.memory_events, c.at("memory_events"));
    uint64_t ac2g = 0;
    for (size_t i = 0; i < t.flows.size(); ++i) ac2g += t.Str(t.flows.category[i]) == "ac2g";
    EXPECT_EQ(ac2g, c.at("ac2g_flow_events"));
    // Linking: every kernel whose launch is in the trace is linked to it (acceptance: >= 99 %).
    EXPECT_EQ(t.links.kernels_with_launch_in_trace, c.at("kernels_with_launch_in_trace"));
    EXPECT_GE(t.links.kernels_linked * 100, c.at("kernels_with_launch_in_trace") * 99);
    EXPECT_EQ(t.diagnostics.count[static_cast<size_t>(Diag::kMalformedEvent)], 0u);
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

// Per-trace facts read independently from the raw text: the first kernel's raw "ts" and "dur"
// tokens must come out as exactly those digits in ns, for an ns-resolution trace and a µs (integer)
// trace.
void ExpectFirstKernelTimesExact(const std::string& file) {
  const std::string text = testing::Gunzip(testing::RealTrace(file));
  const size_t kernel = text.find("\"cat\": \"kernel\"") != std::string::npos
                            ? text.find("\"cat\": \"kernel\"")
                            : text.find("\"cat\": \"Kernel\"");
  ASSERT_NE(kernel, std::string::npos);
  // The first `"ts": <number>, "dur": <number>` after the kernel's category, read as raw text.
  const std::string window = text.substr(kernel, 2000);
  auto raw_number_after = [&window](const std::string& key) {
    const size_t at = window.find(key);
    EXPECT_NE(at, std::string::npos) << key;
    size_t begin = at + key.size(), end = begin;
    while (end < window.size() &&
           (std::isdigit(static_cast<unsigned char>(window[end])) || window[end] == '.'))
      ++end;
    return window.substr(begin, end - begin);
  };
  const std::string raw_ts = raw_number_after("\"ts\": "), raw_dur = raw_number_after("\"dur\": ");
  ASSERT_FALSE(raw_ts.empty());
  ASSERT_FALSE(raw_dur.empty());
  auto digits_to_ns = [](const std::string& s) {
    // Independent of the reader: split on '.', pad the fraction to 3 digits.
    const size_t dot = s.find('.');
    std::string integer = s.substr(0, dot),
                frac = dot == std::string::npos ? "" : s.substr(dot + 1);
    while (frac.size() < 3) frac += '0';
    return std::stoll(integer) * 1000 + std::stoll(frac.substr(0, 3));
  };
  auto loaded = LoadTrace(testing::RealTrace(file));
  ASSERT_TRUE(loaded.ok());
  int64_t first_kernel = -1;
  for (size_t i = 0; i < loaded->gpu.size(); ++i) {
    if (loaded->gpu.kind[i] == GpuKind::kKernel) {
      first_kernel = static_cast<int64_t>(i);
      break;
    }
  }
  ASSERT_GE(first_kernel, 0);
  EXPECT_EQ(loaded->gpu.start_ns[first_kernel], digits_to_ns(raw_ts)) << raw_ts;
  EXPECT_EQ(loaded->gpu.dur_ns[first_kernel], digits_to_ns(raw_dur)) << raw_dur;
}

TEST(Corpus, NanosecondTraceRoundTripsExactly) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/ns_resolution_V100_rank0.pt.trace.json.gz");
  ExpectFirstKernelTimesExact("hta/ns_resolution_V100_rank0.pt.trace.json.gz");
  auto loaded = LoadTrace(testing::RealTrace("hta/ns_resolution_V100_rank0.pt.trace.json.gz"));
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->info.display_time_unit, "ns");
  // The same kernel the metrics reference quotes: ts 1712195495505582.988 µs, dur 4.928 µs.
  bool found = false;
  for (size_t i = 0; i < loaded->gpu.size(); ++i) {
    if (loaded->gpu.start_ns[i] == 1712195495505582988) {
      EXPECT_EQ(loaded->gpu.dur_ns[i], 4928);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Corpus, MicrosecondTraceRoundTripsExactly) {
  GPUSCOPE_REQUIRE_REAL(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  ExpectFirstKernelTimesExact(
      "kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
}

TEST(Corpus, HeaderFactsOfKnownTraces) {
  testing::RealParts parts;
  if (parts.Have({"traces/hta/df_index_resolver_V100_rank1of2_memevents.json.gz"})) {
    auto df =
        LoadTrace(testing::RealTrace("hta/df_index_resolver_V100_rank1of2_memevents.json.gz"));
    ASSERT_TRUE(df.ok());
    EXPECT_EQ(df->info.rank, 1);
    EXPECT_EQ(df->info.rank_source, RankSource::kDistributedInfo);
    ASSERT_FALSE(df->devices.empty());
    // metrics-reference §1.4: peaks 6.63 GB allocated and 12.78 GB reserved of 34.09 GB.
    int64_t peak_alloc = 0, peak_reserved = 0;
    for (size_t i = 0; i < df->memory.size(); ++i) {
      if (df->memory.device_type[i] != 1) continue;
      peak_alloc = std::max(peak_alloc, df->memory.total_allocated[i]);
      peak_reserved = std::max(peak_reserved, df->memory.total_reserved[i]);
    }
    EXPECT_NEAR(peak_alloc / 1e9, 6.63, 0.01);
    EXPECT_NEAR(peak_reserved / 1e9, 12.78, 0.01);
    const analyze::TraceSummary s = analyze::SummarizeTrace(*df);
    EXPECT_NEAR(s.device_memory_bytes / 1e9, 34.09, 0.01);
  }

  if (parts.Have({"traces/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"})) {
    auto mi = LoadTrace(testing::RealTrace("hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
    ASSERT_TRUE(mi.ok());
    ASSERT_TRUE(mi->info.base_time_ns.has_value());
    EXPECT_EQ(*mi->info.base_time_ns, 1735632360000000000);
    EXPECT_EQ(mi->devices.front().name, "AMD Radeon Graphics");
    EXPECT_EQ(mi->devices.front().warp_size, 64);
  }

  // 2021 traces: no distributedInfo, so the rank is unknown (their names say "worker0", not
  // "rank").
  const std::string resnet_file =
      "kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz";
  if (parts.Have({"traces/" + resnet_file})) {
    auto resnet = LoadTrace(testing::RealTrace(resnet_file));
    ASSERT_TRUE(resnet.ok());
    EXPECT_EQ(resnet->info.rank, -1);
    EXPECT_EQ(resnet->devices.size(), 4u);
  }
  GPUSCOPE_SKIP_IF_NONE_RAN(parts);
}

TEST(Corpus, FolderOfRanksLoadsInRankOrder) {
  GPUSCOPE_REQUIRE_REAL("traces/hta/sampled_rank-0.json.gz", "traces/hta/sampled_rank-1.json.gz");
  const std::string dir = testing::TempPath("sampled_ranks");
  std::filesystem::create_directories(dir);
  for (const char* f : {"sampled_rank-1.json.gz", "sampled_rank-0.json.gz"}) {
    std::filesystem::copy_file(testing::RealTrace(std::string("hta/") + f), dir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  }
  auto loaded = LoadInputs(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->traces.size(), 2u);
  EXPECT_TRUE(loaded->failures.empty());
  EXPECT_EQ(loaded->traces[0].info.rank, 0);
  EXPECT_EQ(loaded->traces[1].info.rank, 1);
  EXPECT_EQ(loaded->traces[0].links.kernels, 1154u);
  EXPECT_EQ(loaded->traces[1].links.kernels, 1104u);
}

}  // namespace
}  // namespace gpuscope
