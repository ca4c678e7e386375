#include "ingest/kineto_json/kineto_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "base/numbers.h"
#include "base/sanitize.h"
#include "base/thread_pool.h"
#include "ingest/common/line_reader.h"  // ByteSize
#include "ingest/common/linker.h"
#include "ingest/kineto_json/event_parser.h"
#include "ingest/kineto_json/scanner.h"
#include "model/dedup.h"
#include "model/merge.h"

namespace gpuscope::ingest {

namespace {

constexpr size_t kReadChunk = size_t{1} << 20;  // bytes per read/inflate call
constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;

struct OwnedBatch {
  std::unique_ptr<char[]> storage;
  Batch batch;
  uint64_t sequence = 0;
};

// Batch buffers are recycled: fresh multi-MiB allocations would cost a page fault per 4 KiB
// (≈ 250k faults per GB of JSON, measured at ~20 % of load time before this pool).
class BufferPool {
 public:
  std::unique_ptr<char[]> Acquire(size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The most recently released first: its bytes are the likeliest to be in the cache still.
    for (size_t i = free_.size(); i-- > 0;) {
      if (free_[i].second == capacity) {
        std::unique_ptr<char[]> b = std::move(free_[i].first);
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return b;
      }
    }
    return std::unique_ptr<char[]>(new char[capacity]);
  }
  void Release(std::unique_ptr<char[]> buffer, size_t capacity) {
    if (!buffer) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < 16) free_.emplace_back(std::move(buffer), capacity);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::unique_ptr<char[]>, size_t>> free_;
};

// Merges batch results strictly in file order, as they complete in any order.
class OrderedMerger {
 public:
  explicit OrderedMerger(Trace* out) : out_(out) {}
  // Estimated JSON bytes of the whole input; set by the producer before the first batch.
  void set_expected_json_bytes(uint64_t bytes) { expected_json_bytes_ = bytes; }
  void Add(uint64_t sequence, BatchResult&& result) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.emplace(sequence, std::move(result));
    while (!pending_.empty() && pending_.begin()->first == next_) {
      BatchResult r = std::move(pending_.begin()->second);
      pending_.erase(pending_.begin());
      const std::vector<StringId> remap = model::AppendTrace(out_, std::move(r.tables));
      merged_text_bytes_ += r.text_bytes;
      if (!reserved_ && merged_text_bytes_ >= (size_t{1} << 20) &&
          expected_json_bytes_ > 4 * merged_text_bytes_) {
        // Size the tables once from the first MiB of events: rows per byte so far × expected bytes,
        // with 25 % headroom (unused headroom is never touched, so it is not resident).
        model::ReserveTables(out_, 1.25 * static_cast<double>(expected_json_bytes_) /
                                       static_cast<double>(merged_text_bytes_));
        reserved_ = true;
      }
      for (BeginEnd be : r.begin_end) {
        be.name = remap[be.name];
        be.category = remap[be.category];
        if (IsStringTraceId(be.pid)) be.pid = TraceIdOfString(remap[StringOfTraceId(be.pid)]);
        if (IsStringTraceId(be.tid)) be.tid = TraceIdOfString(remap[StringOfTraceId(be.tid)]);
        begin_end_.push_back(be);
      }
      events_ += r.events;
      fallback_batches_ += r.fallback_batches;
      ++next_;
    }
  }
  std::vector<BeginEnd>& begin_end() { return begin_end_; }
  uint64_t events() const { return events_; }

 private:
  std::mutex mutex_;
  Trace* out_;
  uint64_t next_ = 0;
  std::map<uint64_t, BatchResult> pending_;
  std::vector<BeginEnd> begin_end_;
  uint64_t events_ = 0;
  uint64_t fallback_batches_ = 0;
  uint64_t merged_text_bytes_ = 0;
  uint64_t expected_json_bytes_ = 0;
  bool reserved_ = false;
};

// simdjson parsers are reused across batches (each holds buffers sized by the largest batch it
// parsed): one per batch being parsed at once.
class ParserPool {
 public:
  std::unique_ptr<EventParser> Acquire() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return std::make_unique<EventParser>();
    std::unique_ptr<EventParser> p = std::move(free_.back());
    free_.pop_back();
    return p;
  }
  void Release(std::unique_ptr<EventParser> parser) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(parser));
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<EventParser>> free_;
};

// Turns "B"/"E" pairs into complete events, per (pid, tid), innermost first (Chrome semantics).
void PairBeginEnd(std::vector<BeginEnd>& events, Trace* trace) {
  if (events.empty()) return;
  std::map<std::pair<TraceId, TraceId>, std::vector<const BeginEnd*>> open;
  for (const BeginEnd& be : events) {
    auto& stack = open[{be.pid, be.tid}];
    if (be.phase == 'B') {
      stack.push_back(&be);
      continue;
    }
    if (stack.empty()) {
      trace->diagnostics.Add(Diag::kUnmatchedEnd, be.offset);
      continue;
    }
    const BeginEnd* b = stack.back();
    stack.pop_back();
    const std::string_view cat = trace->Str(b->category);
    const Category c = cat.empty() ? Category::kNone : ClassifyCategory(cat);
    const int64_t dur = std::max<int64_t>(0, be.ts_ns - b->ts_ns);
    if (c == Category::kRuntime || c == Category::kDriver) {
      RuntimeCallTable& r = trace->runtime;
      r.start_ns.push_back(b->ts_ns);
      r.dur_ns.push_back(dur);
      r.name.push_back(b->name);
      r.pid.push_back(b->pid);
      r.tid.push_back(b->tid);
      r.correlation.push_back(-1);
      r.external_id.push_back(-1);
      r.cbid.push_back(-1);
      r.kind.push_back(ClassifyRuntime(trace->Str(b->name)));
      r.is_driver.push_back(c == Category::kDriver ? 1 : 0);
      continue;
    }
    const CpuKind kind = CpuKindForCategory(c);
    CpuOpTable& t = trace->cpu;
    t.start_ns.push_back(b->ts_ns);
    t.dur_ns.push_back(dur);
    t.name.push_back(b->name);
    t.pid.push_back(b->pid);
    t.tid.push_back(b->tid);
    t.external_id.push_back(-1);
    t.kind.push_back(kind);
    const std::string_view name = trace->Str(b->name);
    const bool step_kind = kind == CpuKind::kCpuOp || kind == CpuKind::kUserAnnotation;
    t.step.push_back(step_kind ? ProfilerStepNumber(name) : -1);
    t.is_dataloader.push_back(IsDataLoaderName(name) ? 1 : 0);
  }
  for (auto& [key, stack] : open) {
    for (const BeginEnd* b : stack) trace->diagnostics.Add(Diag::kUnmatchedBegin, b->offset);
  }
}

int64_t GetInt(simdjson::dom::element e, int64_t fallback) {
  int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<int64_t>(u);
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS) return static_cast<int64_t>(d);
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS && ParseInt64(s, &i) == NumberError::kOk) return i;
  return fallback;
}

// A JSON value as text: strings as they are, anything else as its minified JSON.
std::string ValueText(simdjson::dom::element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return SanitizeText(s);
  return SanitizeText(simdjson::minify(e));
}

// distributedInfo.pg_config: [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2,
// "ranks": [0, 1]}, ...] ("ranks" is a string "[0, 1]" in newer Kineto). Each group becomes
// "name desc [ranks]"; a malformed entry is skipped.
void ParseProcessGroups(simdjson::dom::element value, std::vector<std::string>* out) {
  simdjson::dom::array arr;
  if (value.get_array().get(arr) != simdjson::SUCCESS) return;
  for (simdjson::dom::element pg : arr) {
    simdjson::dom::object o;
    if (pg.get_object().get(o) != simdjson::SUCCESS) continue;
    std::string name, desc = "-", ranks;
    for (auto [k, v] : o) {
      if (k == "pg_name")
        name = ValueText(v);
      else if (k == "pg_desc")
        desc = ValueText(v);
      else if (k == "ranks")
        ranks = ValueText(v);
    }
    if (name.empty()) continue;
    if (desc.empty()) desc = "-";
    // Newer Kineto writes "ranks" as a string; older as an array (minified "[0,1]"): one spelling.
    std::string spaced;
    for (char c : ranks) {
      spaced += c;
      if (c == ',') spaced += ' ';
    }
    std::string clean;
    for (size_t i = 0; i < spaced.size(); ++i) {
      if (spaced[i] == ' ' && i > 0 && spaced[i - 1] == ' ') continue;
      clean += spaced[i];
    }
    out->push_back(name + " " + desc + " " + clean);
    if (out->size() >= 4096) break;  // a bound on what a header can make us keep
  }
}

// Parses the top-level members other than traceEvents (deviceProperties, distributedInfo, ...).
void ParseHeader(const std::vector<std::string>& members, Trace* trace) {
  if (members.empty()) return;
  simdjson::dom::parser parser;
  for (const std::string& member : members) {
    std::string text = "{" + member + "}";
    simdjson::dom::element doc;
    if (parser.parse(text).get(doc) != simdjson::SUCCESS) {
      trace->diagnostics.Add(Diag::kMalformedHeader, -1);
      continue;
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) continue;
    for (auto [key, value] : obj) {
      TraceInfo& info = trace->info;
      if (key == "schemaVersion") {
        info.schema_version = GetInt(value, -1);
      } else if (key == "displayTimeUnit") {
        std::string_view s;
        if (value.get_string().get(s) == simdjson::SUCCESS)
          info.display_time_unit = SanitizeText(s);
      } else if (key == "traceName") {
        std::string_view s;
        if (value.get_string().get(s) == simdjson::SUCCESS) info.trace_name = SanitizeText(s);
      } else if (key == "baseTimeNanoseconds") {
        const int64_t base = GetInt(value, -1);
        if (base >= 0) info.base_time_ns = base;
      } else if (key == "distributedInfo") {
        simdjson::dom::object d;
        if (value.get_object().get(d) != simdjson::SUCCESS) continue;
        for (auto [dkey, dvalue] : d) {
          if (dkey == "rank") {
            const int64_t r = GetInt(dvalue, -1);
            if (r >= 0 && r < (1 << 30)) {
              info.rank = static_cast<int32_t>(r);
              info.rank_source = RankSource::kDistributedInfo;
            }
          } else if (dkey == "world_size") {
            const int64_t w = GetInt(dvalue, -1);
            if (w > 0 && w < (1 << 30)) info.world_size = static_cast<int32_t>(w);
          } else if (dkey == "backend") {
            std::string_view s;
            if (dvalue.get_string().get(s) == simdjson::SUCCESS)
              info.distributed_backend = SanitizeText(s);
          } else if (dkey == "pg_config") {
            ParseProcessGroups(dvalue, &info.process_groups);
          }
        }
      } else if (key == "host_name" || key == "hostname") {
        std::string_view s;
        if (value.get_string().get(s) == simdjson::SUCCESS) info.hostname = SanitizeText(s);
      } else if (key == "deviceProperties") {
        simdjson::dom::array arr;
        if (value.get_array().get(arr) != simdjson::SUCCESS) continue;
        for (simdjson::dom::element dev : arr) {
          simdjson::dom::object o;
          if (dev.get_object().get(o) != simdjson::SUCCESS) continue;
          DeviceProperties p;
          for (auto [pkey, pvalue] : o) {
            if (pkey == "id")
              p.id = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "name") {
              std::string_view s;
              if (pvalue.get_string().get(s) == simdjson::SUCCESS) p.name = SanitizeText(s);
            } else if (pkey == "totalGlobalMem")
              p.total_global_mem_bytes = GetInt(pvalue, -1);
            else if (pkey == "computeMajor")
              p.compute_major = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "computeMinor")
              p.compute_minor = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "numSms")
              p.num_sms = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "maxThreadsPerMultiprocessor")
              p.max_threads_per_sm = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "maxThreadsPerBlock")
              p.max_threads_per_block = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "warpSize")
              p.warp_size = static_cast<int32_t>(GetInt(pvalue, -1));
            else if (pkey == "regsPerMultiprocessor")
              p.regs_per_sm = GetInt(pvalue, -1);
            else if (pkey == "sharedMemPerMultiprocessor" ||
                     pkey == "maxSharedMemoryPerMultiProcessor") {
              p.shared_mem_per_sm_bytes = GetInt(pvalue, -1);
            }
          }
          trace->devices.push_back(std::move(p));
        }
      }
    }
  }
}

// What becomes of flow events: kept in Trace::flows, read and dropped after linking, or only
// counted (never stored: a second read gets them if linking turns out to need them).
enum class Flows : uint8_t { kKeep, kDropAfterLink, kCountOnly };

// True if some GPU activity has no correlation id and flows could link it: the only use of flows.
bool FlowsCouldLink(const Trace& trace) {
  if (trace.info.flow_events_dropped == 0) return false;
  for (int64_t c : trace.gpu.correlation)
    if (c < 0) return true;
  return false;
}

// Batches parsed in order and merged into the trace. One thread: every batch is parsed on the
// reading thread. More: each batch is a task on the program's pool (or one made for this file),
// parsed and merged by whichever thread takes it; at most 2 × threads + 1 batches are queued or
// being parsed, and the reading thread parses queued batches itself while it waits for room.
class BatchParsing {
 public:
  BatchParsing(const LoadOptions& options, Flows flows, OrderedMerger* merger)
      : merger_(merger), keep_flows_(flows != Flows::kCountOnly) {
    int threads = options.threads > 0 ? options.threads
                                      : (options.pool != nullptr ? options.pool->threads()
                                                                 : ThreadPool::DefaultThreads());
    threads = std::min(threads, 64);
    max_in_flight_ = 2 * static_cast<size_t>(threads) + 1;
    if (threads <= 1) {
      inline_parser_ = std::make_unique<EventParser>();
      return;
    }
    ThreadPool* task_pool = options.pool;
    if (task_pool == nullptr) {
      own_pool_ = std::make_unique<ThreadPool>(threads);
      task_pool = own_pool_.get();
    }
    tasks_.emplace(*task_pool);
  }

  // A batch buffer of `capacity` bytes, byte 0 reserved so the first event can be wrapped in '['
  // in place.
  OwnedBatch NewBuffer(size_t capacity) {
    OwnedBatch b;
    b.storage = buffers_.Acquire(capacity);
    b.batch.text = b.storage.get();
    b.batch.capacity = capacity;
    b.batch.size = 1;
    b.batch.keep_flows = keep_flows_;
    return b;
  }
  void Release(OwnedBatch&& b) { buffers_.Release(std::move(b.storage), b.batch.capacity); }

  uint64_t submitted() const { return sequence_; }
  void Submit(OwnedBatch&& b) {
    b.sequence = sequence_++;
    if (inline_parser_) {
      BatchResult result;
      inline_parser_->ParseBatch(b.batch, &result);
      Release(std::move(b));
      merger_->Add(b.sequence, std::move(result));
      return;
    }
    tasks_->WaitUntilPendingAtMost(max_in_flight_ - 1);
    // std::function needs a copyable callable: the batch travels in a shared_ptr.
    auto owned = std::make_shared<OwnedBatch>(std::move(b));
    tasks_->Run([owned, this] {
      std::unique_ptr<EventParser> parser = parsers_.Acquire();
      BatchResult result;
      parser->ParseBatch(owned->batch, &result);
      parsers_.Release(std::move(parser));
      Release(std::move(*owned));  // before merging: memory stays bounded
      merger_->Add(owned->sequence, std::move(result));
    });
  }

  // Every batch parsed and merged. The parsers (simdjson's buffers: ~4 bytes per batch byte) and
  // batch buffers are freed now: duplicate removal, linking and the analyses reuse their pages
  // instead of touching new ones (11 MB of the real-derived trace's peak RSS).
  void Finish() {
    if (tasks_) tasks_->Wait();
    parsers_.Clear();
    inline_parser_.reset();
    buffers_.Clear();
  }
  ThreadPool* pool() { return tasks_ ? &tasks_->pool() : nullptr; }

 private:
  OrderedMerger* merger_;
  bool keep_flows_;
  size_t max_in_flight_ = 1;
  uint64_t sequence_ = 0;
  BufferPool buffers_;
  ParserPool parsers_;
  std::unique_ptr<EventParser> inline_parser_;
  // Declared after what its tasks use, so that it is destroyed (and waited for) first.
  std::unique_ptr<ThreadPool> own_pool_;
  std::optional<TaskGroup> tasks_;
};

// One event (or the header) is larger than the buffer holds with one more read: grow it, doubling,
// straight to the limit when one more doubling would pass it (old and new buffers coexist while
// copying, so the last step should start from a small one).
void GrowForOneMoreRead(OwnedBatch& current, size_t max_capacity) {
  Batch& b = current.batch;
  size_t capacity =
      std::min(max_capacity, std::max(b.capacity * 2, b.size + kReadChunk + kPadding));
  if (capacity * 2 > max_capacity)
    capacity = std::max(max_capacity, b.size + kReadChunk + kPadding);
  std::unique_ptr<char[]> bigger(new char[capacity]);
  std::memcpy(bigger.get(), b.text, b.size);
  current.storage = std::move(bigger);
  b.text = current.storage.get();
  b.capacity = capacity;
}

// The last byte of [text, text + n) that is not JSON whitespace; `previous` when there is none.
char LastNonSpace(const char* text, size_t n, char previous) {
  for (size_t i = n; i > 0; --i) {
    const char c = text[i - 1];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
  }
  return previous;
}

// One element is capped whether it closed within this read or not: an element this large is not
// an event but a missing quote or brace (or a hostile input), so reading stops, naming its start.
// The same for a top-level member, and for the bytes still held (an open element, or the JSON
// outside traceEvents), which cannot be released.
Status CheckElementCap(const Scanner& scanner, const Batch& b, size_t elements_before,
                       size_t members_before, size_t max_element, const std::string& name) {
  for (size_t i = elements_before; i < b.elements.size(); ++i) {
    const ScannedElement& e = b.elements[i];
    if (e.end - e.begin > max_element)
      return scanner.TooLong(e.begin, e.end - e.begin, max_element);
  }
  for (size_t i = members_before; i < scanner.header_members().size(); ++i)
    if (scanner.header_members()[i].size() > max_element)
      return Status::InputError(
          name, 0,
          "a top-level member is " + std::to_string(scanner.header_members()[i].size()) +
              " bytes long, over the " + ByteSize(max_element) + " cap on one element",
          "a Kineto trace holds a few KB besides its events; this is not one");
  const size_t held = scanner.held_start();
  if (held != SIZE_MAX && b.size - held > max_element) return scanner.TooLarge(max_element);
  return Status::Ok();
}

// After every batch is merged: a trace of no event object is refused; the header is read,
// duplicates removed and launches linked (with Flows::kCountOnly, *reread is set and an error
// returned where linking needs the flows).
Status FinishTrace(const Scanner& scanner, const std::string& name, Flows flows, ThreadPool* pool,
                   Trace* trace, bool* reread) {
  // JSON whose events array holds elements, none of them an object ([1,2,3]): not a trace with
  // every event skipped, but no trace at all.
  const uint64_t not_objects = trace->diagnostics.count[static_cast<size_t>(Diag::kNotAnObject)];
  if (not_objects > 0 && not_objects == trace->info.events_total)
    return Status::InputError(
        name, 0,
        std::string("not a JSON trace: ") +
            (scanner.is_bare_array() ? "the top-level array" : "its traceEvents array") +
            " holds " + std::to_string(not_objects) + " elements, none of them an event object",
        "gpuscope reads PyTorch profiler (Kineto) Chrome-trace JSON: {\"traceEvents\": [{\"ph\": "
        "\"X\", \"name\": …}, …]}");
  ParseHeader(scanner.header_members(), trace);
  trace->info.format =
      scanner.is_bare_array() ? TraceFormat::kBareArray : TraceFormat::kKinetoObject;
  // Before linking: a duplicated runtime call would otherwise count as a duplicate correlation, and
  // no analysis must see an event twice (a repeated ProfilerStep#N became a zero-length step).
  const model::DuplicateCounts dups = model::RemoveDuplicateEvents(trace, pool);
  if (dups.gpu > 0) trace->diagnostics.Add(Diag::kDuplicateGpuEvent, -1, dups.gpu);
  if (dups.runtime > 0) trace->diagnostics.Add(Diag::kDuplicateRuntimeCall, -1, dups.runtime);
  if (dups.cpu > 0) trace->diagnostics.Add(Diag::kDuplicateCpuEvent, -1, dups.cpu);
  if (flows == Flows::kCountOnly && FlowsCouldLink(*trace)) {
    *reread = true;
    return Status::Error(StatusCode::kInternal, name + ": flows needed for linking");
  }
  LinkLaunches(trace);
  if (flows == Flows::kDropAfterLink) {
    trace->info.flow_events_dropped += trace->flows.size();
    trace->flows = FlowTable();
  }
  return Status::Ok();
}

// With Flows::kCountOnly, sets *reread and returns no trace where linking needs the flows.
Result<Trace> ReadKinetoJsonOnce(io::ByteSource& source, const std::string& name,
                                 uint64_t file_bytes, const LoadOptions& options, Flows flows,
                                 bool* reread) {
  Trace trace;
  trace.info.path = name;
  trace.info.file_bytes = file_bytes;
  trace.info.gzip = source.is_gzip();

  const size_t batch_bytes = std::max<size_t>(options.batch_bytes, 4096);
  Scanner scanner(name);
  OrderedMerger merger(&trace);
  BatchParsing parsing(options, flows, &merger);
  uint64_t json_bytes = 0;
  auto submit = [&](OwnedBatch&& b) {
    if (parsing.submitted() == 0 && source.raw_offset() > 0) {
      // Plain: the file size. Gzip: the file size times the compression ratio seen so far.
      merger.set_expected_json_bytes(
          static_cast<uint64_t>(static_cast<double>(file_bytes) * static_cast<double>(json_bytes) /
                                static_cast<double>(source.raw_offset())));
    }
    parsing.Submit(std::move(b));
  };
  const size_t initial_capacity = batch_bytes + kReadChunk + kPadding + 1;
  // One element (or the header) may grow a buffer up to the cap plus a batch and a read; never
  // beyond, whatever the input (memory stays bounded on a gzip bomb of one endless string).
  const size_t max_element = std::max<size_t>(options.max_element_bytes, 1);
  const size_t max_capacity = max_element + initial_capacity;
  OwnedBatch current = parsing.NewBuffer(initial_capacity);
  Status failure;
  bool scan_failed = false;  // the JSON is malformed before the end of the input
  char last_non_space = 0;   // of the stream so far: does the input end like a complete trace?

  while (true) {
    Batch& b = current.batch;
    if (b.size + kReadChunk + kPadding > b.capacity) GrowForOneMoreRead(current, max_capacity);
    auto got = source.Read(b.text + b.size, kReadChunk);
    if (!got.ok()) {
      failure = got.status();
      break;
    }
    if (*got == 0) break;
    last_non_space = LastNonSpace(b.text + b.size, *got, last_non_space);
    b.size += *got;
    json_bytes += *got;
    const size_t elements_before = b.elements.size();
    const size_t members_before = scanner.header_members().size();
    if (Status s = scanner.Scan(b.text, b.size, &b.elements); !s.ok()) {
      failure = s;
      scan_failed = true;
      break;
    }
    failure = CheckElementCap(scanner, b, elements_before, members_before, max_element, name);
    if (!failure.ok()) break;
    if (options.progress) options.progress(source.raw_offset(), file_bytes);
    if (scanner.in_events() && b.size - 1 >= batch_bytes) {
      // Cut after the last complete event (the partial one moves to a fresh buffer); with no event
      // in the buffer but the scanner between events (a long run of whitespace), drop what was
      // scanned. Either way the buffer never grows past a batch plus one read.
      size_t cut = 0;
      const bool has_events = !b.elements.empty();
      if (has_events) {
        cut = b.elements.back().end;
      } else if (scanner.between_elements()) {
        cut = scanner.pos();
      }
      if (cut > 1) {
        const size_t tail = b.size - cut;
        OwnedBatch next =
            parsing.NewBuffer(std::max(initial_capacity, 1 + tail + kReadChunk + kPadding));
        std::memcpy(next.batch.text + 1, b.text + cut, tail);
        next.batch.size = 1 + tail;
        b.stream_offset = scanner.Absolute(0);
        scanner.Rebase(cut, 1);
        if (has_events) {
          b.size = cut;
          submit(std::move(current));
        } else {
          parsing.Release(std::move(current));
        }
        current = std::move(next);
      }
    }
  }
  if (failure.ok()) failure = scanner.Finish(last_non_space == '}' || last_non_space == ']');
  if (failure.ok()) {
    Batch& b = current.batch;
    b.stream_offset = scanner.Absolute(0);
    if (!b.elements.empty()) submit(std::move(current));
  }
  current = OwnedBatch();
  parsing.Finish();
  if (!failure.ok()) {
    // Malformed JSON inside a gzip file may be damage: one changed byte inside the deflate stream
    // often still decodes, into wrong bytes, and only the CRC-32 at the end tells. Read on to the
    // end; a gzip error found there is the true cause. (Not after the element cap: that stops
    // early on purpose.)
    if (scan_failed && source.is_gzip())
      if (Status gzip = io::DrainForIntegrity(source); !gzip.ok()) return gzip;
    return failure;
  }

  PairBeginEnd(merger.begin_end(), &trace);
  trace.info.json_bytes = json_bytes;
  trace.info.events_total = merger.events();
  GPUSCOPE_RETURN_IF_ERROR(FinishTrace(scanner, name, flows, parsing.pool(), &trace, reread));
  return trace;
}

}  // namespace

Result<Trace> ReadKinetoJson(io::ByteSource& source, const std::string& name, uint64_t file_bytes,
                             const LoadOptions& options) {
  bool reread = false;
  if (options.keep_flows)
    return ReadKinetoJsonOnce(source, name, file_bytes, options, Flows::kKeep, &reread);
  // Profilers since Kineto put a correlation id on every GPU activity, which links it without
  // flows: a file that can be read again is read without storing them (two per launch, 17 % of
  // a model), and read a second time, keeping them until linked, only if some GPU activity lacks
  // its correlation id. A pipe is read once, with its flows kept until linked.
  if (!source.CanReopen())
    return ReadKinetoJsonOnce(source, name, file_bytes, options, Flows::kDropAfterLink, &reread);
  auto first = ReadKinetoJsonOnce(source, name, file_bytes, options, Flows::kCountOnly, &reread);
  if (!reread) return first;
  std::unique_ptr<io::ByteSource> again = source.Reopen();
  if (again == nullptr)
    return Status::Error(StatusCode::kIoError,
                         name +
                             ": changed while being read (its GPU activities without a "
                             "correlation id are linked by flow events, on a second read)");
  return ReadKinetoJsonOnce(*again, name, file_bytes, options, Flows::kDropAfterLink, &reread);
}

}  // namespace gpuscope::ingest
