// Reader behaviour on small handwritten traces: schemas, phases, units, messy input, batching.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "analyze/op_shapes.h"
#include "analyze/trace_summary.h"
#include "gpuscope/ingest.h"
#include "ingest/kineto_json/kineto_reader.h"
#include "io/byte_source.h"
#include "test_util.h"
#include "trace_fingerprint.h"

namespace gpuscope {
namespace {

using testing::Fingerprint;

Trace Load(const std::string& json, LoadOptions options = {}) {
  auto r = LoadTraceFromBytes(json, "test.json", options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return Trace();
  return std::move(r.value());
}

uint64_t DiagCount(const Trace& t, Diag d) { return t.diagnostics.count[static_cast<size_t>(d)]; }

// A small current-schema trace (µs with ns decimals), header members on both sides of traceEvents.
const char* kModern = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712,
                        "computeMajor": 8, "computeMinor": 0, "numSms": 108, "warpSize": 32,
                        "maxThreadsPerMultiprocessor": 2048}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 100, "tid": 100, "ts": 1712195495505000.000, "dur": 1000.5},
    {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 100, "tid": 100, "ts": 1712195495505001, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": 1712195495505100.5, "dur": 30, "args": {"External id": 11}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": 1712195495505110.25, "dur": 5.5, "args": {"External id": 11, "cbid": 211, "correlation": 9007199254740993}},
    {"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "pid": 0, "tid": 7,
     "ts": 1712195495505582.988, "dur": 63.813,
     "args": {"External id": 11, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 9007199254740993,
              "registers per thread": 168, "shared memory": 73728, "blocks per SM": 0.5, "warps per SM": 4.0,
              "grid": [54, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %": 13}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1712195495505700, "dur": 10,
     "args": {"device": 0, "stream": 7, "correlation": 12, "bytes": 4096, "memory bandwidth (GB/s)": 0.4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 100, "ts": 1712195495505690, "dur": 12, "args": {"correlation": 12}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1712195495505720, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 13, "bytes": 64}},
    {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 7, "ts": 1712195495505730, "dur": 2, "args": {"cuda_sync_kind": "Event Sync", "stream": -1, "device": 0, "correlation": 14}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": 1712195495505800, "dur": 100,
     "args": {"device": 0, "stream": 20, "correlation": 15, "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 8, "dtype": "BFloat16"}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 100, "tid": 100, "ts": 1712195495505790, "dur": 3, "args": {"correlation": 15}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 100, "ts": 1712195495505111,
     "args": {"Total Reserved": 2097152, "Total Allocated": 1048576, "Bytes": 1048576, "Addr": 139872882933760, "Device Id": 0, "Device Type": 1}},
    {"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces", "tid": "PyTorch Profiler", "ts": 1712195495504999},
    {"ph": "s", "id": 9007199254740993, "pid": 100, "tid": 100, "ts": 1712195495505110.25, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 9007199254740993, "pid": 0, "tid": 7, "ts": 1712195495505582.988, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python"}},
    {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
    {"ph": "C", "name": "GPU Util", "pid": 0, "ts": 1712195495505000, "args": {"sm": 87.5, "mem": 12}},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1712195495504999, "dur": 2000}
  ],
  "traceName": "modern.json",
  "displayTimeUnit": "ns",
  "baseTimeNanoseconds": 1735632360000000000
})json";

Trace LoadKeepingFlows(const std::string& json) {
  LoadOptions o;
  o.keep_flows = true;
  return Load(json, o);
}

TEST(Reader, ModernSchemaTablesAndHeader) {
  Trace t = LoadKeepingFlows(kModern);
  EXPECT_EQ(t.info.format, TraceFormat::kKinetoObject);
  EXPECT_EQ(t.info.events_total, 19u);
  EXPECT_EQ(t.info.schema_version, 1);
  EXPECT_EQ(t.info.display_time_unit, "ns");
  ASSERT_TRUE(t.info.base_time_ns.has_value());
  EXPECT_EQ(*t.info.base_time_ns, 1735632360000000000);
  EXPECT_EQ(t.info.trace_name, "modern.json");
  EXPECT_EQ(t.info.rank, 3);
  EXPECT_EQ(t.info.world_size, 8);
  EXPECT_EQ(t.info.rank_source, RankSource::kDistributedInfo);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(t.devices[0].total_global_mem_bytes, 85097971712);
  EXPECT_EQ(t.devices[0].num_sms, 108);
  EXPECT_EQ(t.devices[0].compute_major, 8);

  // GPU table: 2 kernels, 1 memcpy, 1 memset, 1 sync.
  ASSERT_EQ(t.gpu.size(), 5u);
  EXPECT_EQ(t.gpu.kind[0], GpuKind::kKernel);
  // "displayTimeUnit": "ns" is a viewer hint: ts stays µs, and every digit survives.
  EXPECT_EQ(t.gpu.start_ns[0], 1712195495505582988);
  EXPECT_EQ(t.gpu.dur_ns[0], 63813);
  EXPECT_EQ(t.gpu.correlation[0], 9007199254740993);  // beyond 2^53, exact
  EXPECT_EQ(t.gpu.stream[0], 7);
  EXPECT_EQ(t.gpu.registers_per_thread[0], 168);
  EXPECT_EQ(t.gpu.shared_memory_bytes[0], 73728);
  EXPECT_EQ((t.gpu.grid[0]), (std::array<int32_t, 3>{54, 1, 1}));
  EXPECT_EQ(t.gpu.block[0][0], 256);
  EXPECT_FLOAT_EQ(t.gpu.blocks_per_sm[0], 0.5f);
  EXPECT_FLOAT_EQ(t.gpu.est_occupancy_pct[0], 13.f);
  EXPECT_EQ(t.gpu.kind[1], GpuKind::kMemcpy);
  EXPECT_EQ(t.gpu.copy_direction[1], CopyDirection::kHtoD);
  EXPECT_EQ(t.gpu.src_kind[1], MemoryKind::kPageable);
  EXPECT_EQ(t.gpu.dst_kind[1], MemoryKind::kDevice);
  EXPECT_EQ(t.gpu.bytes[1], 4096);
  EXPECT_EQ(t.gpu.kind[2], GpuKind::kMemset);
  EXPECT_EQ(t.gpu.kind[3], GpuKind::kSync);
  EXPECT_EQ(t.gpu.sync_kind[3], SyncKind::kEventSync);
  EXPECT_EQ(t.gpu.stream[3], -1);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.collectives[0].gpu_index, 4u);
  EXPECT_EQ(t.Str(t.collectives[0].collective), "allreduce");
  EXPECT_EQ(t.collectives[0].group_size, 8);

  // Runtime + driver; links by correlation.
  ASSERT_EQ(t.runtime.size(), 3u);
  EXPECT_EQ(t.runtime.kind[0], RuntimeKind::kKernelLaunch);
  EXPECT_EQ(t.runtime.kind[1], RuntimeKind::kMemcpy);
  EXPECT_EQ(t.runtime.kind[2], RuntimeKind::kKernelLaunch);
  EXPECT_EQ(t.runtime.is_driver[2], 1);
  EXPECT_EQ(t.gpu.launch[0], 0);
  EXPECT_EQ(t.gpu.launch[1], 1);
  EXPECT_EQ(t.gpu.launch[2], -1);  // memset's launch is not in the trace
  EXPECT_EQ(t.gpu.launch[4], 2);
  EXPECT_EQ(t.links.kernels, 2u);
  EXPECT_EQ(t.links.kernels_linked, 2u);
  EXPECT_EQ(t.links.kernels_with_launch_in_trace, 2u);

  // CPU: step, DataLoader, op; the "Trace" span event is dropped.
  ASSERT_EQ(t.cpu.size(), 3u);
  EXPECT_EQ(t.cpu.step[0], 7);
  EXPECT_EQ(t.cpu.dur_ns[0], 1000500);
  EXPECT_EQ(t.cpu.kind[0], CpuKind::kUserAnnotation);
  EXPECT_EQ(t.cpu.is_dataloader[1], 1);
  EXPECT_EQ(t.cpu.kind[2], CpuKind::kCpuOp);
  EXPECT_EQ(t.cpu.external_id[2], 11);
  EXPECT_EQ(t.info.trace_span_events_dropped, 1u);

  ASSERT_EQ(t.memory.size(), 1u);
  EXPECT_EQ(t.memory.total_allocated[0], 1048576);
  EXPECT_EQ(t.memory.total_reserved[0], 2097152);
  EXPECT_EQ(t.memory.device_type[0], 1);
  EXPECT_EQ(t.memory.addr[0], 139872882933760u);
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(t.instants.scope[0], 'g');
  ASSERT_EQ(t.flows.size(), 2u);
  EXPECT_EQ(t.flows.phase[1], 'f');
  EXPECT_EQ(t.flows.binds_enclosing[1], 1);
  EXPECT_EQ(t.info.flow_events_dropped, 0u);
  EXPECT_EQ(t.metadata.process_names.at(0), "python");
  EXPECT_EQ(t.metadata.thread_names.at({0, 7}), "stream 7 ");
  ASSERT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.Str(t.counters.series[0]), "sm");
  EXPECT_DOUBLE_EQ(t.counters.value[0], 87.5);
  EXPECT_EQ(t.diagnostics.total(), 0u) << Fingerprint(t);
}

// By default the flows are dropped once linking is done (no analysis reads them) and counted;
// the summary reports every flow the trace had either way.
TEST(Reader, FlowsAreDroppedAfterLinkingAndCounted) {
  const Trace dropped = Load(kModern);
  const Trace kept = LoadKeepingFlows(kModern);
  EXPECT_EQ(dropped.flows.size(), 0u);
  EXPECT_EQ(dropped.info.flow_events_dropped, 2u);
  EXPECT_EQ(dropped.gpu.launch, kept.gpu.launch);
  EXPECT_EQ(analyze::SummarizeTrace(dropped).counts.flow_events, 2u);
  EXPECT_EQ(analyze::SummarizeTrace(kept).counts.flow_events, 2u);
}

// Bytes in memory that count how often they are read again, or refuse to be (like a pipe).
class CountingSource : public io::ByteSource {
 public:
  CountingSource(std::string_view bytes, bool reopenable, int* reopens)
      : bytes_(bytes), reopenable_(reopenable), reopens_(reopens) {}
  Result<size_t> Read(char* dst, size_t capacity) override {
    const size_t n = std::min(capacity, bytes_.size() - pos_);
    std::copy_n(bytes_.data() + pos_, n, dst);
    pos_ += n;
    return n;
  }
  uint64_t raw_offset() const override { return pos_; }
  int64_t file_size() const override { return static_cast<int64_t>(bytes_.size()); }
  bool CanReopen() const override { return reopenable_; }
  std::unique_ptr<io::ByteSource> Reopen() const override {
    ++*reopens_;
    return reopenable_ ? std::make_unique<CountingSource>(bytes_, true, reopens_) : nullptr;
  }

 private:
  std::string_view bytes_;
  bool reopenable_;
  int* reopens_;
  size_t pos_ = 0;
};

// A kernel without a correlation id (as some exporters write it), tied to its launch only by an
// ac2g flow pair, beside a kernel that has one.
const char* kFlowLinked = R"json({"traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 100, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 200, "dur": 5},
  {"ph": "X", "cat": "kernel", "name": "with_id", "pid": 0, "tid": 7, "ts": 150, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "by_flow", "pid": 0, "tid": 7, "ts": 250, "dur": 10, "args": {"device": 0, "stream": 7}},
  {"ph": "s", "id": 42, "pid": 1, "tid": 1, "ts": 200, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 250, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]})json";

Trace ReadCounting(std::string_view json, bool reopenable, int* reopens, bool keep_flows = false) {
  CountingSource source(json, reopenable, reopens);
  LoadOptions o;
  o.keep_flows = keep_flows;
  auto r = ingest::ReadKinetoJson(source, "test.json", json.size(), o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r.value()) : Trace();
}

// Flows are not stored on a first read of a file that can be read again; only a trace with a GPU
// activity lacking its correlation id is read a second time, for them. Every way gives the same
// links and counts.
TEST(Reader, FlowsAreReadAgainOnlyWhereLinkingNeedsThem) {
  int reopens = 0;
  const Trace modern = ReadCounting(kModern, /*reopenable=*/true, &reopens);
  EXPECT_EQ(reopens, 0);  // every GPU activity has its correlation id: read once
  EXPECT_EQ(modern.info.flow_events_dropped, 2u);
  EXPECT_EQ(modern.gpu.launch, LoadKeepingFlows(kModern).gpu.launch);

  for (const bool reopenable : {true, false}) {
    reopens = 0;
    const Trace t = ReadCounting(kFlowLinked, reopenable, &reopens);
    EXPECT_EQ(reopens, reopenable ? 1 : 0) << reopenable;
    ASSERT_EQ(t.gpu.size(), 2u);
    EXPECT_EQ(t.gpu.launch[0], 0) << reopenable;  // by correlation
    EXPECT_EQ(t.gpu.launch[1], 1) << reopenable;  // by the flow pair
    EXPECT_EQ(t.links.linked_by_correlation, 1u);
    EXPECT_EQ(t.links.linked_by_flow, 1u) << reopenable;
    EXPECT_EQ(t.flows.size(), 0u);
    EXPECT_EQ(t.info.flow_events_dropped, 2u) << reopenable;  // counted once, not per read
  }
  reopens = 0;
  const Trace kept = ReadCounting(kFlowLinked, true, &reopens, /*keep_flows=*/true);
  EXPECT_EQ(reopens, 0);
  EXPECT_EQ(kept.flows.size(), 2u);
  EXPECT_EQ(kept.links.linked_by_flow, 1u);
  // The public loaders' sources can be read again too: memory, a file, a gzip file.
  const Trace loaded = Load(kFlowLinked);
  EXPECT_EQ(loaded.links.linked_by_flow, 1u);
  EXPECT_EQ(loaded.info.flow_events_dropped, 2u);
  for (const bool gzip : {false, true}) {
    const std::string path = testing::TempPath(gzip ? "flow_linked.json.gz" : "flow_linked.json");
    testing::WriteFile(path, gzip ? testing::Gzip(kFlowLinked) : std::string(kFlowLinked));
    auto file = LoadTrace(path);
    ASSERT_TRUE(file.ok()) << file.status().message();
    EXPECT_EQ(file->gpu.launch[1], 1) << gzip;
    EXPECT_EQ(file->links.linked_by_flow, 1u) << gzip;
    EXPECT_EQ(file->info.flow_events_dropped, 2u) << gzip;
    std::filesystem::remove(path);
  }
}

TEST(Reader, OldSchemaLandsInTheSameTables) {
  // 2021: capitalised categories, "external id", string tids, integer µs.
  const char* json = R"js({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 25738, "tid": "25738", "ts": 1623142623531000, "dur": 900},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 25738, "tid": "25738", "ts": 1623142623531600, "dur": 7, "args": {"correlation": 34442, "external id": 544, "external ts": 1}},
    {"ph": "X", "cat": "Kernel", "name": "volta_scudnn_128x64_relu_medium_nn_v1", "pid": 0, "tid": "stream 7", "ts": 1623142623531639, "dur": 605,
     "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 34442, "external id": 544}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": "stream 7", "ts": 1623142623532300, "dur": 3, "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 1623142623532400, "dur": 3, "args": {"stream": 7}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 25738, "tid": 25738, "ts": 1623142623460121, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -512}},
    {"ph": "s", "id": 34442, "pid": 25738, "tid": 25738, "ts": 1623142623531600, "cat": "async", "name": "launch"}
  ]})js";
  Trace t = LoadKeepingFlows(json);
  ASSERT_EQ(t.gpu.size(), 3u);
  EXPECT_EQ(t.gpu.kind[0], GpuKind::kKernel);
  EXPECT_EQ(t.gpu.tid[0], 7);  // "stream 7"
  EXPECT_EQ(t.gpu.external_id[0], 544);
  EXPECT_EQ(t.gpu.launch[0], 0);
  EXPECT_EQ(t.gpu.start_ns[0], 1623142623531639000);
  EXPECT_EQ(t.gpu.copy_direction[1], CopyDirection::kDtoH);
  EXPECT_EQ(t.gpu.dst_kind[1], MemoryKind::kPageable);
  EXPECT_EQ(t.gpu.kind[2], GpuKind::kMemset);
  EXPECT_EQ(t.gpu.correlation[2], -1);
  ASSERT_EQ(t.cpu.size(), 1u);
  EXPECT_EQ(t.cpu.kind[0], CpuKind::kCpuOp);
  EXPECT_EQ(t.cpu.step[0], 5);
  EXPECT_EQ(t.cpu.tid[0], 25738);  // numeric string
  ASSERT_EQ(t.memory.size(), 1u);
  EXPECT_EQ(t.memory.bytes_delta[0], -512);
  EXPECT_EQ(t.memory.total_allocated[0], -1);
  EXPECT_EQ(t.Str(t.flows.category[0]), "async");
  EXPECT_EQ(t.diagnostics.total(), 0u) << Fingerprint(t);
}

TEST(Reader, CountersWhateverTheKeyOrder) {
  // "args" before "ph", and series named like kernel args ("bytes", "device").
  const char* json = R"js({"traceEvents": [
    {"args": {"bytes": 4096, "device": 1, "util": 0.5}, "name": "mem", "pid": 3, "ts": 10, "ph": "C"},
    {"ph": "C", "name": "power", "pid": 3, "ts": 11.5, "args": {"watts": "350", "limit": 400}}
  ]})js";
  Trace t = Load(json);
  ASSERT_EQ(t.counters.size(), 4u);
  EXPECT_EQ(t.Str(t.counters.series[0]), "bytes");
  EXPECT_DOUBLE_EQ(t.counters.value[0], 4096);
  EXPECT_EQ(t.Str(t.counters.series[1]), "device");
  EXPECT_DOUBLE_EQ(t.counters.value[2], 0.5);
  EXPECT_EQ(t.Str(t.counters.series[3]), "limit");  // the string "350" is not a series value
  EXPECT_EQ(t.counters.ts_ns[3], 11500);
}

TEST(Reader, LegacyBareArray) {
  const char* json = R"js([
{"name": "ProfilerStep#1", "ph": "X", "ts": 10, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::add", "ph": "X", "ts": 20, "dur": 5, "tid": 1, "pid": "CPU functions", "args": {}}
])js";
  Trace t = Load(json);
  EXPECT_EQ(t.info.format, TraceFormat::kBareArray);
  ASSERT_EQ(t.cpu.size(), 2u);
  EXPECT_EQ(t.cpu.step[0], 1);
  EXPECT_EQ(t.cpu.kind[1], CpuKind::kCpuOp);
  EXPECT_TRUE(IsStringTraceId(t.cpu.pid[0]));
  EXPECT_EQ(t.Str(StringOfTraceId(t.cpu.pid[0])), "CPU functions");
  EXPECT_EQ(t.gpu.size(), 0u);
}

TEST(Reader, BeginEndPairsPerThreadInnermostFirst) {
  const char* json = R"js({"traceEvents": [
    {"ph": "B", "name": "outer", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 100},
    {"ph": "B", "name": "inner", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 110},
    {"ph": "B", "name": "other-thread", "cat": "user_annotation", "pid": 1, "tid": 2, "ts": 105},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 120},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 200.5},
    {"ph": "E", "pid": 1, "tid": 3, "ts": 200},
    {"ph": "B", "name": "never-ends", "pid": 1, "tid": 4, "ts": 1}
  ]})js";
  Trace t = Load(json);
  ASSERT_EQ(t.cpu.size(), 2u);
  EXPECT_EQ(t.Str(t.cpu.name[0]), "inner");
  EXPECT_EQ(t.cpu.dur_ns[0], 10000);
  EXPECT_EQ(t.Str(t.cpu.name[1]), "outer");
  EXPECT_EQ(t.cpu.dur_ns[1], 100500);
  EXPECT_EQ(DiagCount(t, Diag::kUnmatchedEnd), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kUnmatchedBegin), 2u);  // other-thread and never-ends
  EXPECT_EQ(DiagCount(t, Diag::kMissingName), 3u);     // the E events carry no name
}

TEST(Reader, MessyEventsAreCountedNotFatal) {
  std::string json = "{\"traceEvents\": [\n";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "ok-1", "pid": 1, "tid": 1, "ts": 1, "dur": 1},)"
          "\n";
  json +=
      R"({"ph": "X", "cat": "cpu_op", "name": "string-numbers", "pid": "1", "tid": 1, "ts": "123.5", "dur": "2"},)"
      "\n";
  json +=
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad-utf8-\xff\xfe\", \"pid\": 1, \"tid\": "
      "1, \"ts\": 3, \"dur\": 1},\n";
  json +=
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ctrl-\x01-char\", \"pid\": 1, \"tid\": 1, "
      "\"ts\": 4, \"dur\": 1},\n";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "malformed", "ts": 5, "dur": },)"
          "\n";
  json += R"({"ph": "Q", "name": "unknown-phase", "ts": 6},)"
          "\n";
  json +=
      R"({"ph": "X", "cat": "mystery_category", "name": "unknown-cat", "pid": 1, "tid": 1, "ts": 7, "dur": 1},)"
      "\n";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "no-ts", "dur": 1},)"
          "\n";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "no-dur", "ts": 8},)"
          "\n";
  json += R"({"cat": "cpu_op", "name": "no-ph", "ts": 9, "dur": 1},)"
          "\n";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "negative", "ts": 9, "dur": -1},)"
          "\n";
  json += R"(42, "stray string", [1, 2],)"
          "\n";
  json +=
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 1, "args": {"correlation": 99999999999999999999999, "stream": "7", "grid": "oops"}},)"
      "\n";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "ok-2", "pid": 1, "tid": 1, "ts": 11, "dur": 1})"
          "\n";
  json += "]}";
  Trace t = Load(json);
  // Kept: ok-1, string-numbers, bad-utf8 (repaired), ctrl (repaired), unknown-cat (as other), ok-2.
  ASSERT_EQ(t.cpu.size(), 6u) << Fingerprint(t);
  EXPECT_EQ(t.Str(t.cpu.name[0]), "ok-1");
  EXPECT_EQ(t.Str(t.cpu.name[1]), "string-numbers");
  EXPECT_EQ(t.cpu.start_ns[1], 123500);
  EXPECT_EQ(t.cpu.dur_ns[1], 2000);
  EXPECT_EQ(t.Str(t.cpu.name[2]), "bad-utf8-\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(t.Str(t.cpu.name[3]), "ctrl- -char");
  EXPECT_EQ(t.cpu.kind[4], CpuKind::kOther);
  EXPECT_EQ(t.Str(t.cpu.name[5]), "ok-2");
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.gpu.correlation[0], -1);
  EXPECT_EQ(t.gpu.stream[0], 7);
  EXPECT_EQ(DiagCount(t, Diag::kNumberAsString), 3u);  // ts, dur, stream (a string pid is a label)
  EXPECT_EQ(DiagCount(t, Diag::kInvalidUtf8), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kControlCharacter), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kMalformedEvent), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kUnknownPhase), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kUnknownCategory), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kMissingTimestamp), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kMissingDuration), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kMissingPhase), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kNegativeDuration), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kNotAnObject), 3u);
  EXPECT_EQ(DiagCount(t, Diag::kIntegerOutOfRange), 1u);
  EXPECT_EQ(DiagCount(t, Diag::kBadNumber), 1u);  // grid "oops"
  // Offsets point at the event: the malformed one starts where its text starts.
  const size_t malformed_at =
      json.find("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"malformed\"");
  EXPECT_EQ(t.diagnostics.first_offset[static_cast<size_t>(Diag::kMalformedEvent)],
            static_cast<int64_t>(malformed_at));
  EXPECT_EQ(t.info.events_total, 16u);
}

// One bad field, one diagnostic: "ts": "garbage" gave three rows (missing_timestamp,
// bad_number, number_as_string "(parsed)") and "2 events or fields could not be read"; a ts of
// 1e308 gave two. A field that cannot be read is counted by why (its fix), whether its event is
// skipped for it or the field only ignored; number_as_string only for a string that parsed.
TEST(Reader, OneBadFieldIsOneDiagnostic) {
  auto one = [](const std::string& event) {
    return Load("{\"traceEvents\": [\n" + event + "\n]}");
  };
  const int64_t at = static_cast<int64_t>(std::string("{\"traceEvents\": [\n").size());
  const std::pair<const char*, Diag> cases[] = {
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": "garbage", "dur": 1})", Diag::kBadNumber},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1e308, "dur": 1})",
       Diag::kIntegerOutOfRange},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": "1e308", "dur": 1})",
       Diag::kIntegerOutOfRange},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": [1], "dur": 1})", Diag::kBadNumber},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "dur": 1})", Diag::kMissingTimestamp},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": "garbage"})", Diag::kBadNumber},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1})", Diag::kMissingDuration},
      {R"({"ph": "i", "cat": "cpu_instant_event", "name": "a", "ts": 1, "dur": "garbage"})",
       Diag::kBadNumber},
      {R"({"ph": "M", "name": "process_name", "pid": 1, "ts": "garbage", "args": {"name": "p"}})",
       Diag::kBadNumber},
      {R"({"cat": "cpu_op", "name": "a", "ts": "garbage"})", Diag::kMissingPhase},
      {R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": "12.5", "dur": 1})",
       Diag::kNumberAsString},
  };
  for (const auto& [event, want] : cases) {
    const Trace t = one(event);
    EXPECT_EQ(t.diagnostics.total(), 1u) << event << "\n" << Fingerprint(t);
    EXPECT_EQ(DiagCount(t, want), 1u) << event << ": " << DiagName(want);
    EXPECT_EQ(t.diagnostics.first_offset[static_cast<size_t>(want)], at) << event;
    EXPECT_EQ(t.diagnostics.lost(), want == Diag::kNumberAsString ? 0u : 1u) << event;
  }
  // The report says it once.
  const std::string path = testing::TempPath("garbage_ts.json");
  testing::WriteFile(path, "{\"traceEvents\": [\n" + std::string(cases[0].first) +
                               ",\n"
                               R"({"ph": "X", "cat": "cpu_op", "name": "b", "ts": 2, "dur": 1})"
                               "\n]}");
  const auto r = testing::RunGpuscope("analyze " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 events or fields could not be read"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad_number"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("missing_timestamp"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("number_as_string"), std::string::npos) << r.out;
  unlink(path.c_str());
}

// Events whose strings hold braces, brackets, escaped quotes and backslashes, so that any batch cut
// inside a string would break them.
std::string TrickyTrace(int n) {
  std::string json =
      "{\"deviceProperties\": [{\"id\": 0, \"name\": \"GPU {x} [y] \\\"q\\\"\"}], \"traceEvents\": "
      "[";
  for (int i = 0; i < n; ++i) {
    if (i) json += ",\n";
    json += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k" + std::to_string(i) +
            " }]} \\\"quoted\\\" \\\\ {[\", \"pid\": 0, \"tid\": 7, \"ts\": " +
            std::to_string(1000 + i) + "." + std::to_string(i % 1000) +
            ", \"dur\": 1.5, \"args\": {\"stream\": 7, \"correlation\": " + std::to_string(i) +
            ", \"grid\": [1, 2, 3]}}";
    json +=
        ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": " +
        std::to_string(900 + i) + ", \"dur\": 2, \"args\": {\"correlation\": " + std::to_string(i) +
        "}}";
  }
  json += "], \"distributedInfo\": {\"rank\": 1, \"note\": \"]}{\"}}";
  return json;
}

TEST(Reader, BatchBoundariesAndThreadsDoNotChangeTheModel) {
  const std::string json = TrickyTrace(400);
  LoadOptions one;
  one.threads = 1;
  one.batch_bytes = size_t{64} << 20;
  const std::string reference = Fingerprint(Load(json, one));
  Trace whole = Load(json, one);
  ASSERT_EQ(whole.gpu.size(), 400u);
  EXPECT_EQ(whole.Str(whole.gpu.name[3]), "k3 }]} \"quoted\" \\ {[");
  EXPECT_EQ(whole.info.rank, 1);
  ASSERT_EQ(whole.devices.size(), 1u);
  EXPECT_EQ(whole.devices[0].name, "GPU {x} [y] \"q\"");
  EXPECT_EQ(whole.links.kernels_linked, 400u);
  EXPECT_EQ(whole.diagnostics.total(), 0u);
  // Small batches cut the stream at many different places; 1 and 2 threads.
  for (int threads : {1, 2}) {
    for (size_t batch : {4096, 4097, 4100, 5000, 6151, 9999}) {
      LoadOptions o;
      o.threads = threads;
      o.batch_bytes = batch;
      EXPECT_TRUE(Fingerprint(Load(json, o)) == reference)
          << "threads " << threads << " batch " << batch;
    }
  }
}

// record_shapes: "Input Dims", "Input type", "Input Strides", "Concrete Inputs" of cpu ops are
// kept as their JSON text; columns stay empty until an op has the arg, and batches that cut the
// trace between ops with and without shapes (and with shapes first in a later batch) give the
// model one batch gives.
TEST(Reader, OpShapesKeptAsTextAndColumnsOnlyWhenPresent) {
  auto op = [](int i, const std::string& args) {
    return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 1, \"tid\": 1, "
           "\"ts\": " + std::to_string(100 + 10 * i) + ", \"dur\": 5, \"args\": {" + args + "}}";
  };
  const std::string shaped =
      "\"Input Dims\": [[1024], [8, 512], [512, 1024], [], []], "
      "\"Input type\": [\"float\", \"float\", \"float\", \"Scalar\", \"Scalar\"], "
      "\"Input Strides\": [[1], [512, 1], [1, 512], [], []], \"Concrete Inputs\": [\"\", \"\", \"\", \"1\", \"1\"]";
  std::string json = "{\"traceEvents\": [";
  for (int i = 0; i < 200; ++i) {
    if (i) json += ",\n";
    // Ops 0–59 without shapes, then every third op with them, one with dims only.
    json += op(i, i < 60 || i % 3 ? "\"External id\": " + std::to_string(i)
                                  : i == 99 ? "\"Input Dims\": [[2, 3]]" : shaped);
  }
  json += "]}";
  LoadOptions one;
  one.threads = 1;
  one.batch_bytes = size_t{64} << 20;
  Trace t = Load(json, one);
  ASSERT_EQ(t.cpu.size(), 200u);
  ASSERT_TRUE(t.cpu.has_shapes());
  for (const auto* col : {&t.cpu.input_dims, &t.cpu.input_types, &t.cpu.input_strides, &t.cpu.concrete_inputs})
    EXPECT_EQ(col->size(), 200u);
  EXPECT_EQ(t.Str(t.cpu.input_dims[0]), "");
  EXPECT_EQ(t.Str(t.cpu.input_dims[60]), "[[1024], [8, 512], [512, 1024], [], []]");
  EXPECT_EQ(t.Str(t.cpu.input_types[60]), "[\"float\", \"float\", \"float\", \"Scalar\", \"Scalar\"]");
  EXPECT_EQ(t.Str(t.cpu.input_strides[60]), "[[1], [512, 1], [1, 512], [], []]");
  EXPECT_EQ(t.Str(t.cpu.concrete_inputs[60]), "[\"\", \"\", \"\", \"1\", \"1\"]");
  EXPECT_EQ(t.Str(t.cpu.input_dims[61]), "");
  EXPECT_EQ(t.Str(t.cpu.input_dims[99]), "[[2, 3]]");
  EXPECT_EQ(t.Str(t.cpu.input_types[99]), "");
  // Interned: every shaped op shares one id.
  EXPECT_EQ(t.cpu.input_dims[60], t.cpu.input_dims[63]);
  // The ops table: ops 60, 63, …, 198 carry dims (47), #99 a shape of its own.
  const analyze::OpShapes groups = analyze::AnalyzeOpShapes(t);
  EXPECT_TRUE(groups.recorded);
  EXPECT_EQ(groups.ops, 200u);
  EXPECT_EQ(groups.ops_with_dims, 47u);
  ASSERT_EQ(groups.groups.size(), 2u);
  EXPECT_EQ(t.Str(groups.groups[0].input_dims), "[[1024], [8, 512], [512, 1024], [], []]");
  EXPECT_EQ(groups.groups[0].count, 46u);
  EXPECT_EQ(groups.groups[0].total_ns, 46 * 5000);
  EXPECT_EQ(groups.groups[0].max_ns, 5000);
  EXPECT_EQ(t.Str(groups.groups[1].input_dims), "[[2, 3]]");
  EXPECT_EQ(t.diagnostics.total(), 0u);
  const std::string reference = Fingerprint(t);
  for (int threads : {1, 2})
    for (size_t batch : {4096, 4500, 7000}) {
      LoadOptions o;
      o.threads = threads;
      o.batch_bytes = batch;
      EXPECT_TRUE(Fingerprint(Load(json, o)) == reference) << "threads " << threads << " batch " << batch;
    }
  // No shapes anywhere: nothing stored.
  Trace plain = Load(kModern);
  EXPECT_FALSE(plain.cpu.has_shapes());
  EXPECT_TRUE(plain.cpu.input_types.empty() && plain.cpu.input_strides.empty() &&
              plain.cpu.concrete_inputs.empty());
  // A shape arg of the wrong type is counted and skipped, not read.
  Trace bad = Load("{\"traceEvents\": [" + op(0, "\"Input Dims\": \"[[1]]\"") + "]}");
  EXPECT_FALSE(bad.cpu.has_shapes());
  EXPECT_EQ(DiagCount(bad, Diag::kBadNumber), 1u);
}

// Shapes are kept in the profiler's one-line form whatever the file's whitespace (TraceLens's
// traces are indented; a minified trace has none): the same op groups and prints the same, and
// matches TraceLens's "Input Dims" text. Spaces inside strings ("long int") stay.
TEST(Reader, OpShapesKeptInTheProfilersOneLineForm) {
  const std::string json =
      "{\"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1, "
      "\"dur\": 5, \"args\": {\"Input Dims\": [\n  [\n    8,\n    512\n  ],\n  [512,1024]\n],\n"
      "\"Input type\": [ \"float\" ,\"long int\"]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 10, "
      "\"dur\": 5, \"args\": {\"Input Dims\": [[8, 512], [512, 1024]], "
      "\"Input type\": [\"float\", \"long int\"]}}]}";
  const Trace t = Load(json, LoadOptions());
  ASSERT_EQ(t.cpu.size(), 2u);
  EXPECT_EQ(t.Str(t.cpu.input_dims[0]), "[[8, 512], [512, 1024]]");
  EXPECT_EQ(t.Str(t.cpu.input_types[0]), "[\"float\", \"long int\"]");
  EXPECT_EQ(t.cpu.input_dims[0], t.cpu.input_dims[1]);
  EXPECT_EQ(t.cpu.input_types[0], t.cpu.input_types[1]);
}

TEST(Reader, GzipMatchesPlainWithEitherInflater) {
  const std::string json = TrickyTrace(300);
  const std::string reference = Fingerprint(Load(json));
  const std::string gz = testing::Gzip(json);
  for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal, Inflater::kAuto}) {
    LoadOptions o;
    o.inflater = inflater;
    Trace t = Load(gz, o);
    EXPECT_TRUE(t.info.gzip);
    EXPECT_TRUE(Fingerprint(t) == reference) << "inflater " << int(inflater);
  }
  // Two concatenated gzip members (pigz, cat a.gz b.gz) are one stream.
  const std::string half1 = json.substr(0, json.size() / 2), half2 = json.substr(json.size() / 2);
  const std::string two_members = testing::Gzip(half1) + testing::Gzip(half2);
  for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal}) {
    LoadOptions o;
    o.inflater = inflater;
    EXPECT_TRUE(Fingerprint(Load(two_members, o)) == reference) << "inflater " << int(inflater);
  }
}

Status LoadError(const std::string& bytes, LoadOptions o = {}) {
  auto r = LoadTraceFromBytes(bytes, "bad.json", o);
  EXPECT_FALSE(r.ok());
  return r.ok() ? Status() : r.status();
}

TEST(Reader, StructuralErrorsNameTheOffset) {
  const std::string json = TrickyTrace(50);
  Status s = LoadError(json.substr(0, json.size() / 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(
      s.message().find("bad.json: at byte " + std::to_string(json.size() / 2) + ": truncated JSON"),
      std::string::npos)
      << s.message();
  s = LoadError(R"js({"schemaVersion": 1, "other": [1, 2]})js");
  EXPECT_NE(s.message().find("no \"traceEvents\" array"), std::string::npos) << s.message();
  s = LoadError("   \n ");
  EXPECT_NE(s.message().find("empty input"), std::string::npos) << s.message();
  s = LoadError("MZ\x90\x00 binary");
  EXPECT_NE(s.message().find("at byte 0: not a JSON trace: expected '{' or '[' but found 'M'"),
            std::string::npos)
      << s.message();
  // A zip is named by the input registry (it may be a torch.save checkpoint).
  s = LoadError("PK\x03\x04 binary zip");
  EXPECT_NE(s.message().find("at byte 0: this is a zip archive"), std::string::npos) << s.message();
  s = LoadError(R"js({"traceEvents": {"a": 1}})js");
  EXPECT_NE(s.message().find("at byte 16: \"traceEvents\" is not an array"), std::string::npos)
      << s.message();
  s = LoadError(R"js({"traceEvents": []} garbage)js");
  EXPECT_NE(s.message().find("after the end of the JSON document"), std::string::npos)
      << s.message();
  const std::string gz = testing::Gzip(json);
  for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal}) {
    LoadOptions o;
    o.inflater = inflater;
    s = LoadError(gz.substr(0, gz.size() - 100), o);
    EXPECT_NE(s.message().find("truncated gzip"), std::string::npos) << s.message();
    std::string corrupt = gz;
    for (size_t i = 20; i < 60; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    s = LoadError(corrupt, o);
    EXPECT_NE(s.message().find("gzip"), std::string::npos) << s.message();
  }
}

TEST(Reader, RankFromFileName) {
  EXPECT_EQ(RankFromFileName("rank3.json"), 3);
  EXPECT_EQ(RankFromFileName("trace_rank-12.pt.trace.json.gz"), 12);
  EXPECT_EQ(RankFromFileName("negative_queue_length_A100-80GB_rank0of16.json.gz"), 0);
  EXPECT_EQ(RankFromFileName("worker0.1623143089861.pt.trace.json"), -1);
  EXPECT_EQ(RankFromFileName("ranking.json"), -1);
}

}  // namespace
// Names are checked for control characters only when first interned (ingest speed); a repeated
// raw name with one is never in the pool (its cleaned form is), so every occurrence is still
// cleaned and counted, and a clean name equal to the cleaned form shares its id.
TEST(Reader, RepeatedControlCharacterNamesAreCleanedAndCountedEveryTime) {
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < 3; ++i)
    json += R"({"ph": "X", "cat": "cpu_op", "name": "ctrl-\u0007-char", "pid": 1, "tid": 1, "ts": )" +
            std::to_string(10 + i) + R"(, "dur": 1},)";
  json += R"({"ph": "X", "cat": "cpu_op", "name": "ctrl- -char", "pid": 1, "tid": 1, "ts": 20, "dur": 1}]})";
  Trace t = Load(json);
  ASSERT_EQ(t.cpu.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.Str(t.cpu.name[i]), "ctrl- -char") << i;
    EXPECT_EQ(t.cpu.name[i], t.cpu.name[0]) << i;
  }
  EXPECT_EQ(DiagCount(t, Diag::kControlCharacter), 3u);
}

}  // namespace gpuscope
