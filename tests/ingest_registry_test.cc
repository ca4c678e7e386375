// The input registry and the input-robustness fixes that live in it (issue 12 item 7, issue 19
// items 4, 6, 7, 9, 11, 12): every input is opened once and sniffed by content; known non-inputs
// are refused by what they are; pipes, FIFOs and stdin work; devices and symlink loops get true
// messages; gzip damage is told from malformed JSON; one endless element is capped in bounded
// memory; nvidia-smi values out of range are malformed lines; no control character from an input
// reaches the terminal. Each test makes its small input itself, in a folder removed afterwards.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "analyze/monitor_stats.h"
#include "gpuscope/ingest.h"
#include "ingest/nvidia_smi/nvidia_smi.h"
#include "ingest/recording/recording_reader.h"
#include "ingest/registry.h"
#include "monitor/recorder.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::WriteFile;

// A folder of its own per test, removed afterwards.
class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuscope_ingest_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  struct Outcome {
    int exit_code = -1;  // -1: killed after the timeout
    std::string out, err;
    long max_rss_kib = 0;  // the child's peak resident set (getrusage / wait4)
  };

  // Runs gpuscope with `args`. With `feed`, its bytes arrive through a pipe: on stdin, or on file
  // descriptor `feed_fd` when that is not -1 (as bash's <(…) passes /dev/fd/63). With `fifo`,
  // the bytes are written into that named FIFO once gpuscope opens it.
  Outcome Run(const std::vector<std::string>& args, const std::string* feed = nullptr,
              int feed_fd = -1, const std::string& fifo = "", double timeout_s = 60) {
    signal(SIGPIPE, SIG_IGN);  // gpuscope may stop reading early (an error): no SIGPIPE here
    const std::string out = Path("stdout"), err = Path("stderr");
    int pipe_fds[2] = {-1, -1};
    if (feed && fifo.empty()) {
      EXPECT_EQ(pipe(pipe_fds), 0);
    }
    const pid_t pid = fork();
    if (pid == 0) {
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      if (pipe_fds[0] >= 0) {
        close(pipe_fds[1]);
        if (feed_fd >= 0) {
          dup2(pipe_fds[0], feed_fd);
          const int null_fd = open("/dev/null", O_RDONLY);
          dup2(null_fd, 0);
        } else {
          dup2(pipe_fds[0], 0);
        }
      } else {
        const int null_fd = open("/dev/null", O_RDONLY);
        dup2(null_fd, 0);
      }
      std::vector<char*> argv = {const_cast<char*>(GPUSCOPE_BINARY)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(GPUSCOPE_BINARY, argv.data());
      _exit(126);
    }
    std::thread writer;
    if (feed) {
      writer = std::thread([&] {
        const int fd = fifo.empty() ? pipe_fds[1] : open(fifo.c_str(), O_WRONLY);
        size_t done = 0;
        while (fd >= 0 && done < feed->size()) {
          const ssize_t n = write(fd, feed->data() + done, feed->size() - done);
          if (n <= 0) break;
          done += static_cast<size_t>(n);
        }
        if (fd >= 0) close(fd);
      });
      if (pipe_fds[0] >= 0) close(pipe_fds[0]);
    }
    Outcome r;
    int status = 0;
    struct rusage usage {};
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      if (wait4(pid, &status, WNOHANG, &usage) == pid) {
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > end) {
        kill(pid, SIGKILL);
        wait4(pid, &status, 0, &usage);
        if (!fifo.empty()) {  // unblock a writer still waiting for a reader
          const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
          if (fd >= 0) close(fd);
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (writer.joinable()) writer.join();
    r.max_rss_kib = usage.ru_maxrss;
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
  }

  std::string dir_;
};

std::string Example() {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/examples/train_input_bound.pt.trace.json.gz";
}

// A small trace, one event per line: `count` kernels, each 2 µs long, 10 µs apart.
std::string SmallTrace(int count) {
  std::string t = "{\"traceEvents\": [\n";
  for (int i = 0; i < count; ++i) {
    if (i) t += ",\n";
    t += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k" + std::to_string(i) +
         "\", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(10 * i + 1) +
         ", \"dur\": 2, \"args\": {\"device\": 0, \"stream\": 7}}";
  }
  return t + "\n]}\n";
}

Status LoadError(const std::string& bytes, LoadOptions options = {}) {
  auto r = LoadTraceFromBytes(bytes, "t.json", options);
  return r.ok() ? Status() : r.status();
}

// --- Known non-inputs (issue 12 item 7) -------------------------------------------------------

TEST_F(IngestTest, MemoryTimelineExportExitsTwoNamingWhatItIs) {
  // Both forms export_memory_timeline writes: raw rows, and [times, sizes by category].
  WriteFile(Path("raw.json"), "[[-1, 1, 37888, 7], [-1, 1, 512, 7]]");
  WriteFile(Path("timeline.json"), "[[1700000000000, 1700000000010], [[0, 512], [0, 1024]]]");
  WriteFile(Path("timeline.json.gz"), testing::Gzip(ReadFile(Path("timeline.json"))));
  for (const char* name : {"raw.json", "timeline.json", "timeline.json.gz"}) {
    const Outcome r = Run({"analyze", Path(name)});
    EXPECT_EQ(r.exit_code, 2) << name << r.err;
    EXPECT_NE(r.err.find(Path(name) + ": at byte 0: this is a PyTorch memory-timeline export"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("hint: pass the profiler trace itself"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;  // not "analysed" as an empty trace
  }
  // A bare array of events is still a trace.
  EXPECT_TRUE(
      LoadTraceFromBytes("[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}]", "a").ok());
}

TEST_F(IngestTest, RealMemoryTimelineExportIsRefused) {
  GPUSCOPE_REQUIRE_SHARED();
  const Outcome r =
      Run({"analyze", testing::SharedDir() + "/traces/hta/memory_timeline_export.raw.gz"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("this is a PyTorch memory-timeline export"), std::string::npos) << r.err;
}

// gpuscope tune's own results file (the H200 lab's tune.jsonl was "unexpected '{' after the end
// of the JSON document"), as tune writes it and as Python's json.dumps writes it.
TEST_F(IngestTest, TuneResultsFileIsNamedWithTheCommandThatReadsIt) {
  const std::string record =
      "{\"type\":\"gpuscope.tune.trial\",\"command\":[\"python3\"],\"outcome\":\"ok\"}\n";
  WriteFile(Path("tune.jsonl"), record + record);
  WriteFile(Path("dumps.jsonl"), "{\"type\": \"gpuscope.tune.trial\", \"outcome\": \"ok\"}\n");
  for (const char* name : {"tune.jsonl", "dumps.jsonl"}) {
    const Outcome r = Run({"analyze", Path(name)});
    EXPECT_EQ(r.exit_code, 2) << name << r.err;
    EXPECT_NE(r.err.find("this is gpuscope tune's results file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--results FILE"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(IngestTest, HtmlPageAndTensorBoardEventFileAreRefusedByName) {
  WriteFile(Path("report.html"), "\n<!DOCTYPE html>\n<html><body>gpuscope</body></html>\n");
  // The first TFRecord of a TensorBoard event file: u64 length, u32 masked CRC, then an Event
  // (wall_time double, file_version "brain.Event:2"); CRCs are not checked by the sniffer.
  std::string tf(
      "\x18\0\0\0\0\0\0\0"
      "\0\0\0\0"
      "\x09"
      "\0\0\0\0\0\0\xf0\x3f"
      "\x1a\x0d",
      23);
  tf += "brain.Event:2";
  tf += std::string(4, '\0');
  WriteFile(Path("events.out.tfevents.1.host"), tf);
  const Outcome html = Run({"analyze", Path("report.html")});
  EXPECT_EQ(html.exit_code, 2);
  EXPECT_NE(html.err.find("this is an HTML page, not a trace"), std::string::npos) << html.err;
  const Outcome tb = Run({"analyze", Path("events.out.tfevents.1.host")});
  EXPECT_EQ(tb.exit_code, 2);
  EXPECT_NE(tb.err.find("this is a TensorBoard event file"), std::string::npos) << tb.err;
  EXPECT_NE(tb.err.find("*.pt.trace.json"), std::string::npos) << tb.err;
  // The sniffers look at content, not names: a trace named .html is read as a trace.
  WriteFile(Path("trace.html"), SmallTrace(3));
  EXPECT_EQ(Run({"analyze", Path("trace.html")}).exit_code, 0);
}

TEST_F(IngestTest, RecordingsAreNotTracesForDiff) {
  auto rec = monitor::Recorder::Open(Path("run.jsonl"));
  ASSERT_TRUE(rec.ok());
  monitor::Recording meta;
  meta.start_ns = 1'700'000'000'000'000'000;
  (*rec)->WriteHeader(meta);
  ASSERT_TRUE((*rec)->Finish(meta).ok());
  WriteFile(Path("t.json"), SmallTrace(3));
  const Outcome r = Run({"diff", Path("t.json"), Path("run.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a gpuscope run recording (JSONL), not a profiler trace"),
            std::string::npos)
      << r.err;
  const Outcome m = Run({"analyze", Path("t.json"), "--monitor", Path("t.json")});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("is a PyTorch profiler (Kineto) trace, not a monitor recording"),
            std::string::npos)
      << m.err;
}

// --- Pipes, FIFOs, stdin (issue 19 item 7) ------------------------------------------------------

TEST_F(IngestTest, StdinPipesAndFifosAreReadOnce) {
  const std::string gz = ReadFile(Example());
  const Outcome file = Run({"analyze", "--json", Example()});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  // `zcat t.json.gz | gpuscope analyze -` and `cat t.json.gz | gpuscope analyze /dev/stdin`.
  const std::string plain = testing::Gunzip(Example());
  const Outcome dash = Run({"analyze", "--json", "-"}, &plain);
  EXPECT_EQ(dash.exit_code, 0) << dash.err;
  const Outcome dev_stdin = Run({"analyze", "--json", "/dev/stdin"}, &gz);
  EXPECT_EQ(dev_stdin.exit_code, 0) << dev_stdin.err;
  // `gpuscope analyze <(zcat t.json.gz)`: bash passes a pipe as /dev/fd/63.
  const Outcome substituted = Run({"analyze", "--json", "/dev/fd/63"}, &plain, 63);
  EXPECT_EQ(substituted.exit_code, 0) << substituted.err;
  // A named FIFO: read once (opening it twice waited forever for a second writer).
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  const Outcome fifo = Run({"analyze", "--json", Path("fifo")}, &gz, -1, Path("fifo"), 30);
  EXPECT_EQ(fifo.exit_code, 0) << fifo.err;
  // The same report as from the file (the path differs: "<stdin>", /dev/fd/63, the FIFO).
  auto verdict = [](const std::string& json) {
    const size_t at = json.find("\"verdict\"");
    return at == std::string::npos ? std::string() : json.substr(at, 200);
  };
  ASSERT_FALSE(verdict(file.out).empty()) << file.out;
  for (const Outcome* r : {&dash, &dev_stdin, &substituted, &fifo})
    EXPECT_EQ(verdict(r->out), verdict(file.out));
  EXPECT_NE(dash.out.find("stdin"), std::string::npos);
  // Nothing on the pipe: said so, not "empty file".
  const std::string nothing;
  const Outcome empty = Run({"analyze", "-"}, &nothing);
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("<stdin>: at byte 0: empty input: nothing arrived on the pipe"),
            std::string::npos)
      << empty.err;
}

TEST_F(IngestTest, DevicesAndSymlinkLoopsGetTrueMessages) {
  Outcome r = Run({"analyze", "/dev/zero"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/dev/zero: not a regular file: a character device"), std::string::npos)
      << r.err;
  r = Run({"analyze", "-"});  // stdin is /dev/null, a character device too
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("<stdin>: not a regular file: a character device"), std::string::npos)
      << r.err;
  ASSERT_EQ(symlink(Path("b").c_str(), Path("a").c_str()), 0);
  ASSERT_EQ(symlink(Path("a").c_str(), Path("b").c_str()), 0);
  r = Run({"analyze", Path("a")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(Path("a") + ": cannot open: Too many levels of symbolic links"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("no such file"), std::string::npos) << r.err;
}

// --- gzip damage (issue 19 item 11)
// ---------------------------------------------------------------

TEST_F(IngestTest, GzipWithTrailingGarbageSaysTrailingData) {
  const std::string gz = testing::Gzip(SmallTrace(20)) + "garbage appended by a broken upload";
  for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal}) {
    LoadOptions o;
    o.inflater = inflater;
    const Status s = LoadError(gz, o);
    EXPECT_NE(s.message().find("trailing data after the gzip stream"), std::string::npos)
        << s.message();
    EXPECT_EQ(s.message().find("truncated"), std::string::npos) << s.message();
  }
  // Zero padding after the stream (tape blocks) and a second member are fine.
  EXPECT_TRUE(LoadTraceFromBytes(testing::Gzip(SmallTrace(20)) + std::string(512, '\0'), "p").ok());
  const std::string two = SmallTrace(20);
  EXPECT_TRUE(LoadTraceFromBytes(testing::Gzip(two.substr(0, 100)) + testing::Gzip(two.substr(100)),
                                 "members")
                  .ok());
}

// Deflate with stored blocks keeps each byte at a known place: flipping one changes exactly that
// byte of the JSON, the stream still decodes, and only the CRC-32 at its end tells.
std::string StoredGzip(const std::string& data) {
  std::string out(data.size() + 1024, '\0');
  z_stream zs{};
  deflateInit2(&zs, 0, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Found by registry_fuzz: isa-l wrapped its input count below zero on this damaged header (a
// file name running into the deflate data) and the reader's cursor overflowed (UBSan). Both
// inflaters must say the gzip is corrupt.
TEST_F(IngestTest, DamagedGzipHeaderIsCorruptNotAnOverflow) {
  const unsigned char bytes[] = {
      0x1f, 0x8b, 0x08, 0x08, 0xc2, 0x4f, 0x05, 0x6b, 0x00, 0x03, 0x6d, 0x65, 0x6d, 0x6f, 0x72,
      0x79, 0x5f, 0x6c, 0x69, 0x6d, 0x74, 0x65, 0x69, 0x6e, 0x65, 0x2e, 0x6a, 0x73, 0x6f, 0x6e,
      0x02, 0x03, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x5f, 0x74, 0x69, 0x6d, 0x65, 0x6c, 0x69,
      0x6e, 0x65, 0x2e, 0x6a, 0x73, 0x6f, 0x6e, 0x00, 0x8b, 0x8e, 0xd6, 0x35, 0xd4, 0x51, 0x22,
      0x64, 0x75, 0x72, 0x22, 0x3a, 0x20, 0x32, 0x00, 0x22, 0xc2, 0x2c, 0x22, 0x61, 0x72, 0x00};
  const std::string gz(reinterpret_cast<const char*>(bytes), sizeof bytes);
  for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal}) {
    LoadOptions o;
    o.inflater = inflater;
    o.batch_bytes = 4096 + 997;
    const Status s = LoadError(gz, o);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("gzip"), std::string::npos) << s.message();
  }
}

// A flipped byte of the trailer's ISIZE: the data and its CRC are intact, only the length field
// changed; both inflaters say so instead of "CRC mismatch" (issue 36 item 6). A flipped CRC byte
// is still a checksum mismatch.
TEST_F(IngestTest, FlippedTrailerLengthIsNotCalledACrcMismatch) {
  const std::string gz = StoredGzip(SmallTrace(30));
  for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal}) {
    LoadOptions o;
    o.inflater = inflater;
    std::string size_flipped = gz, crc_flipped = gz;
    size_flipped[gz.size() - 2] ^= 0x01;
    crc_flipped[gz.size() - 6] ^= 0x01;
    std::string m = LoadError(size_flipped, o).message();
    EXPECT_NE(m.find("the length in the gzip trailer (ISIZE) does not match"), std::string::npos) << m;
    EXPECT_EQ(m.find("CRC-32 checksum does not match"), std::string::npos) << m;
    m = LoadError(crc_flipped, o).message();
    EXPECT_NE(m.find("the CRC-32 checksum does not match"), std::string::npos) << m;
  }
}

TEST_F(IngestTest, FlippedByteInsideDeflateSaysTheGzipIsCorruptNotTheJson) {
  const std::string json = SmallTrace(30);
  const std::string gz = StoredGzip(json);
  // gzip header (10 bytes) + stored block header (5 bytes): JSON byte k is at 15 + k.
  const size_t quote = json.find("\"name\"", 200);
  ASSERT_EQ(gz.substr(15 + quote, 6), "\"name\"");
  // Two flips: one the scanner stops at (the first byte), one it reads past to the end.
  for (size_t at : {size_t{0}, quote}) {
    std::string bad = gz;
    bad[15 + at] = at == 0 ? 'x' : '{';
    for (Inflater inflater : {Inflater::kZlib, Inflater::kIsal}) {
      LoadOptions o;
      o.inflater = inflater;
      const Status s = LoadError(bad, o);
      EXPECT_NE(s.message().find("corrupt gzip data: the CRC-32 checksum does not match"),
                std::string::npos)
          << s.message();
      EXPECT_EQ(s.message().find("JSON trace"), std::string::npos) << s.message();
    }
    // The same change in a plain file is a JSON error.
    std::string plain = json;
    plain[at] = bad[15 + at];
    const std::string message = LoadError(plain).message();
    EXPECT_NE(message.find(at == 0 ? "not a JSON trace" : "never closes"), std::string::npos)
        << message;
  }
}

// --- Numbers (issue 19 item 11) -----------------------------------------------------------------

TEST_F(IngestTest, TimestampOf1e300IsANumberOutOfRange) {
  auto t = LoadTraceFromBytes(
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1e300, "
      "\"dur\": 1}, {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 5, \"dur\": 1}]}",
      "t.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->diagnostics.count[static_cast<size_t>(Diag::kIntegerOutOfRange)], 1u);
  const std::string why = DiagDescription(Diag::kIntegerOutOfRange);
  EXPECT_NE(why.find("number out of range"), std::string::npos) << why;
  EXPECT_EQ(why.find("integer beyond int64"), std::string::npos) << why;
}

// --- One element that never ends (issue 19 item 6) --------------------------------------------

TEST_F(IngestTest, MissingQuoteNamesWhereTheUnterminatedElementStarts) {
  const std::string json = SmallTrace(40);
  // Remove the closing quote of event 7's name: from there on, strings and structure swap.
  const size_t event = json.find("{\"ph\"", json.find("\"k7\"") - 60);
  const size_t quote = json.find("k7\"") + 2;
  std::string broken = json;
  broken.erase(quote, 1);
  Status s = LoadError(broken);
  EXPECT_NE(s.message().find("t.json: at byte " + std::to_string(event) +
                             ": the traceEvents element starting here never closes"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("it was not cut short"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("re-export"), std::string::npos) << s.message();
  // A file that is really cut short still says so, and where the unfinished element starts.
  const std::string cut = json.substr(0, json.find("\"k9\""));
  s = LoadError(cut);
  EXPECT_NE(s.message().find("at byte " + std::to_string(cut.size()) + ": truncated JSON"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("the unfinished element starts at byte " +
                             std::to_string(json.find("{\"ph\"", cut.size() - 60))),
            std::string::npos)
      << s.message();
}

TEST_F(IngestTest, ElementCapStopsEarlyAtTheElementsStart) {
  LoadOptions o;
  o.max_element_bytes = 64 << 10;
  o.batch_bytes = 8192;
  const std::string head = SmallTrace(5).substr(0, SmallTrace(5).rfind("\n]}"));
  const std::string big = ",\n{\"ph\": \"X\", \"name\": \"" + std::string(1 << 20, 'a');
  // Never closed: stopped once 64 KiB are held, at the element's first byte.
  Status s = LoadError(head + big, o);
  EXPECT_NE(s.message().find("at byte " + std::to_string(head.size() + 2) +
                             ": the traceEvents element starting here is still open after 64 KiB"),
            std::string::npos)
      << s.message();
  // It may be valid, only large: not called "a missing quote" alone (issue 36 item 6).
  EXPECT_NE(s.message().find("either one element that large, which no profiler writes, or an "
                             "unterminated string"),
            std::string::npos)
      << s.message();
  // Closed, but over the cap: the same cap, whatever the reads it arrived in.
  const std::string closed = head + big + "\"}\n]}\n";
  s = LoadError(closed, o);
  EXPECT_NE(
      s.message().find("at byte " + std::to_string(head.size() + 2) +
                       ": the traceEvents element starting here is " +
                       std::to_string(big.size() + 2 - 2) + " bytes long, over the 64 KiB cap"),
      std::string::npos)
      << s.message();
  // Under the default cap the same trace loads.
  EXPECT_TRUE(LoadTraceFromBytes(closed, "t.json").ok());
  // Top-level members outside traceEvents are capped likewise, open or closed.
  const std::string member = "{\"deviceProperties\": \"" + std::string(1 << 20, 'b');
  s = LoadError(member, o);
  EXPECT_NE(s.message().find("at byte 1: the top-level member starting here is still open after "
                             "64 KiB"),
            std::string::npos)
      << s.message();
  s = LoadError(member + "\", \"traceEvents\": []}", o);
  EXPECT_NE(s.message().find("a top-level member is " + std::to_string(member.size() + 1 - 1) +
                             " bytes long, over the 64 KiB cap"),
            std::string::npos)
      << s.message();
}

// A gzip "bomb": 512 MiB of one string in ≈ 0.5 MB. Peak RSS must stay near the 64 MiB cap
// (documented bound: model + cap + batches + buffers), not grow with the element.
TEST_F(IngestTest, GzipBombOfOneHugeElementFailsInBoundedMemory) {
  // gzip members concatenated are one stream (pigz writes them so): one 1 MiB member of 'a'
  // repeated 512 times costs one compression.
  const std::string mib = testing::Gzip(std::string(1 << 20, 'a'));
  std::string bomb = testing::Gzip("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"");
  for (int i = 0; i < 512; ++i) bomb += mib;
  WriteFile(Path("bomb.json.gz"), bomb + testing::Gzip("\"}]}"));
  EXPECT_LT(std::filesystem::file_size(Path("bomb.json.gz")), 2u << 20);
  const Outcome r = Run({"analyze", "--threads", "2", Path("bomb.json.gz")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("at byte 17: the traceEvents element starting here is still open after 64 "
                       "MiB"),
            std::string::npos)
      << r.err;
#if !defined(__SANITIZE_ADDRESS__)
  // The documented bound (docs/architecture.md): the 64 MiB cap + a batch and a read (3 MiB) +
  // (2 × 2 threads + 2) × 2 MiB batches + the parsers + 1 MiB gzip buffers + the binary (≈ 10 MiB):
  // under 128 MiB. Measured 71 MiB; the element alone is 512 MiB (1.0 GiB RSS before the cap).
  EXPECT_LT(r.max_rss_kib, 128 * 1024) << "peak RSS " << r.max_rss_kib / 1024 << " MiB";
#endif
  // A line-based input is capped the same way: a recording header with an endless line.
  bomb = testing::Gzip("{\"type\":\"header\",\"format\":\"gpuscope-monitor\"}\n{\"x\":\"");
  for (int i = 0; i < 512; ++i) bomb += mib;
  WriteFile(Path("bomb.jsonl.gz"), bomb);
  const Outcome line = Run({"analyze", Path("bomb.jsonl.gz")});
  EXPECT_EQ(line.exit_code, 2) << line.err;
  const size_t line2 =
      std::string("{\"type\":\"header\",\"format\":\"gpuscope-monitor\"}\n").size();
  EXPECT_NE(line.err.find("at byte " + std::to_string(line2) +
                          ": line 2 (starting here) runs over 64 MiB without a newline"),
            std::string::npos)
      << line.err;
#if !defined(__SANITIZE_ADDRESS__)
  // The line cap + two reads + the binary. Measured 71 MiB.
  EXPECT_LT(line.max_rss_kib, 128 * 1024) << "peak RSS " << line.max_rss_kib / 1024 << " MiB";
#endif
}

// --- nvidia-smi logs (issue 19 item 4) ----------------------------------------------------------

TEST_F(IngestTest, NvidiaSmiValuesOutOfRangeAreMalformedAndNamed) {
  const std::string head =
      "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
      "power.draw [W]\n";
  auto row = [](int second, const std::string& util, const std::string& used,
                const std::string& power) {
    return "2024/01/15 10:00:0" + std::to_string(second) + ".000, 0, NVIDIA A100, " + util +
           " %, " + used + " MiB, 81920 MiB, " + power + " W\n";
  };
  const std::string text = head + row(0, "150", "1000", "100") + row(1, "-50", "1000", "100") +
                           row(2, std::string(90, '9'), "1000", "100") +
                           row(3, "40", "90000", "100") + row(4, "40", "1000", "-5") +
                           row(5, "40", "1000", "100") + row(6, "60", "1000", "100");
  auto rec = ingest::ParseNvidiaSmiLog(text, "smi.csv");
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_EQ(rec->samples.size(), 2u);
  EXPECT_EQ(rec->malformed_lines, 5u);
  ASSERT_EQ(rec->malformed_examples.size(), 3u);
  EXPECT_EQ(rec->malformed_examples[0],
            "smi.csv:2: utilization.gpu: \"150 %\" is out of range (0 to 100 %)");
  EXPECT_EQ(rec->malformed_examples[1],
            "smi.csv:3: utilization.gpu: \"-50 %\" is out of range (0 to 100 %)");
  EXPECT_EQ(rec->malformed_examples[2], "smi.csv:4: utilization.gpu: \"" + std::string(90, '9') +
                                            " %\" is out of range (0 to 100 %)");
  // Only the good samples are averaged: (40 + 60) / 2 = 50 %.
  const analyze::MonitorStats report = analyze::ComputeMonitorStats(*rec);
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_NEAR(report.gpus[0].util_mean_pct.value_or(-1), 50, 1e-9);
  // The two remaining rows, named too (the first three examples are kept; the rest counted).
  auto used = ingest::ParseNvidiaSmiLog(head + row(3, "40", "90000", "100"), "smi.csv");
  ASSERT_FALSE(used.ok());
  EXPECT_NE(used.status().message().find(
                "smi.csv:2: memory.used \"90000 MiB\" is above memory.total \"81920 MiB\""),
            std::string::npos)
      << used.status().message();
  auto power = ingest::ParseNvidiaSmiLog(head + row(4, "40", "1000", "-5"), "smi.csv");
  ASSERT_FALSE(power.ok());
  EXPECT_NE(power.status().message().find(
                "smi.csv:2: power.draw: \"-5 W\" is out of range (0 to 100000 W)"),
            std::string::npos)
      << power.status().message();
  // From the command line: the verdict is not "GPU well used" from a 90-digit utilisation, and
  // the malformed lines make the exit code 2.
  WriteFile(Path("smi.csv"), head + row(2, std::string(90, '9'), "1000", "100") +
                                 row(3, "20", "1000", "100") + row(4, "20", "1000", "100"));
  const Outcome r = Run({"analyze", Path("smi.csv")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.find("well used"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("util 20 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("malformed lines 1"), std::string::npos) << r.out;
}

TEST_F(IngestTest, NvidiaSmiWithoutHeaderIsReadWithTheColumnsItRecognised) {
  WriteFile(Path("noheader.csv"),
            "2024/01/15 10:23:45.123, 0, NVIDIA A100-SXM4-80GB, 43 %, 22000 MiB, 81920 MiB, "
            "120.50 W, 400.00 W\n"
            "2024/01/15 10:23:46.123, 0, NVIDIA A100-SXM4-80GB, 45 %, 22100 MiB, 81920 MiB, "
            "125.00 W, 400.00 W\n");
  const Outcome r = Run({"analyze", Path("noheader.csv")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("util 44 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no header line: columns recognised from their values (1 timestamp, 2 "
                       "index, 3 name, 4 utilization.gpu, 5 memory.used, 6 memory.total, 7 "
                       "power.draw, 8 power.limit)"),
            std::string::npos)
      << r.out;
}

// --- Control characters from inputs (issue 19 item 9) ------------------------------------------

constexpr const char* kHostile =
    "\x1b]52;c;cHduZWQ=\x07\x1b[2J\xc2\x9b"
    "31m";

TEST_F(IngestTest, NoControlSequenceFromAnInputReachesTheTerminal) {
  // An nvidia-smi GPU name.
  WriteFile(Path("smi.csv"), std::string("index, name, utilization.gpu [%]\n0, GPU") + kHostile +
                                 ", 50 %\n0, GPU" + kHostile + ", 60 %\n");
  Outcome r = Run({"analyze", Path("smi.csv")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU ]52;c;cHduZWQ=  [2J 31m"), std::string::npos) << r.out;
  // A recording: command, GPU name, process name, note (JSON escapes decode to raw ESC).
  const std::string esc = "\\u001b]0;owned\\u0007\\u009b31m";
  WriteFile(Path("run.jsonl"),
            "{\"type\":\"header\",\"format\":\"gpuscope-monitor\",\"version\":1,\"command\":"
            "[\"python" +
                esc +
                "\"],\"interval_ns\":100000000,\"start_ns\":1700000000000000000,"
                "\"root_pid\":10,\"gpus\":[{\"index\":0,\"name\":\"A100" +
                esc +
                "\"}]}\n"
                "{\"type\":\"sample\",\"t_ns\":1700000000100000000,\"gpus\":[{\"index\":0,"
                "\"sm_util_pct\":50}],\"procs\":[{\"pid\":10,\"ppid\":1,\"name\":\"py" +
                esc +
                "\",\"cpu_pct\":99,\"cpu_time_ns\":100,\"rss_bytes\":1}]}\n"
                "{\"type\":\"end\",\"end_ns\":1700000000200000000,\"exit_code\":0,\"notes\":[\"n" +
                esc + "\"]}\n");
  r = Run({"analyze", Path("run.jsonl")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("python ]0;owned  31m"), std::string::npos) << r.out;
  // A Kineto trace: a kernel name with escaped control characters.
  WriteFile(Path("t.json"),
            "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm" + esc +
                "\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 5, \"args\": {\"device\": 0, "
                "\"stream\": 7}}]}");
  r = Run({"analyze", "--color", "always", "-v", Path("t.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gemm ]0;owned  31m"), std::string::npos) << r.out;
  for (const Outcome* o : {&r}) {
    // With --color always the report's own colour codes are ESC [ … m; nothing else may be.
    for (size_t at = o->out.find('\x1b'); at != std::string::npos;
         at = o->out.find('\x1b', at + 1)) {
      const size_t m = o->out.find('m', at);
      ASSERT_NE(m, std::string::npos);
      const std::string code = o->out.substr(at + 1, m - at);
      EXPECT_EQ(code.find_first_not_of("[0123456789;m"), std::string::npos) << code;
    }
    EXPECT_EQ(o->out.find('\x07'), std::string::npos);
    EXPECT_EQ(o->out.find("\xc2\x9b"), std::string::npos);
  }
  // The trace counts it: one event with a control character.
  auto t = LoadTrace(Path("t.json"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->diagnostics.count[static_cast<size_t>(Diag::kControlCharacter)], 1u);
}

// A recording written again by Python's json.dumps ("type": "header", a space after each ':') is
// still a recording (issue 32 item 7).
TEST_F(IngestTest, RecordingRewrittenByPythonIsStillARecording) {
  WriteFile(Path("redump.jsonl"),
            "{\"type\": \"header\", \"format\": \"gpuscope-monitor\", \"version\": 1, \"command\": [\"python\"], "
            "\"interval_ns\": 100000000, \"start_ns\": 1700000000000000000, \"root_pid\": 10, \"gpus\": "
            "[{\"index\": 0, \"name\": \"A100\"}]}\n"
            "{\"type\": \"sample\", \"t_ns\": 1700000000100000000, \"gpus\": [{\"index\": 0, \"sm_util_pct\": 50}]}\n"
            "{\"type\": \"end\", \"end_ns\": 1700000000200000000, \"exit_code\": 0}\n");
  auto in = ingest::ReadInput(Path("redump.jsonl"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->kind, ingest::ModelKind::kMonitor);
}

// Characters that reorder or break the text after them (Trojan Source): bidirectional overrides
// and isolates, marks, line and paragraph separators, in a kernel name and an nvidia-smi GPU
// name, never reach the report (issue 36 item 5).
TEST_F(IngestTest, BidiControlsFromInputsAreReplaced) {
  const char* kLayout[] = {"\u202e", "\u202a", "\u2066", "\u2069", "\u2028", "\u2029", "\u200f", "\u061c"};
  const char* kRaw[] = {"\xE2\x80\xAE", "\xE2\x80\xAA", "\xE2\x81\xA6", "\xE2\x81\xA9",
                        "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\x8F", "\xD8\x9C"};
  std::string escaped_name = "gemm", raw_name = "GPU";
  for (const char* c : kLayout) escaped_name += c;
  for (const char* c : kRaw) raw_name += c;
  WriteFile(Path("t.json"),
            "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + escaped_name +
                "x\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 5, \"args\": {\"device\": 0, "
                "\"stream\": 7}}]}");
  WriteFile(Path("smi.csv"), "index, name, utilization.gpu [%]\n0, " + raw_name + "x, 50 %\n0, " +
                                 raw_name + "x, 60 %\n");
  for (const char* file : {"t.json", "smi.csv"}) {
    Outcome r = Run({"analyze", "-v", Path(file)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string(file[0] == 't' ? "gemm" : "GPU") + "        x"), std::string::npos)
        << r.out;
    for (const char* c : kRaw) EXPECT_EQ(r.out.find(c), std::string::npos) << file << " " << r.out;
  }
  auto t = LoadTrace(Path("t.json"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Str(t->gpu.name[0]), "gemm        x");
  EXPECT_EQ(t->diagnostics.count[static_cast<size_t>(Diag::kControlCharacter)], 1u);
}

// --- Recordings cut short (issue 19 item 12) ----------------------------------------------------

TEST_F(IngestTest, RecordingCutShortSaysSoAndExitsZero) {
  for (const char* name : {"run.jsonl", "run.csv", "run.json"}) {
    const std::string full = Path(name);
    {
      auto rec = monitor::Recorder::Open(full);
      ASSERT_TRUE(rec.ok());
      monitor::Recording meta;
      meta.start_ns = 1'700'000'000'000'000'000;
      meta.interval_ns = 100'000'000;
      meta.gpus = {{0, "NVIDIA A100-SXM4-80GB", 80'000'000'000, 400}};
      (*rec)->WriteHeader(meta);
      for (int i = 1; i <= 20; ++i) {
        monitor::Sample s;
        s.time_ns = meta.start_ns + i * meta.interval_ns;
        monitor::GpuSample g;
        g.sm_util_pct = 40;
        s.gpus.push_back(g);
        (*rec)->WriteSample(s);
      }
      meta.end_ns = meta.start_ns + 21 * meta.interval_ns;
      meta.exit_code = 0;
      ASSERT_TRUE((*rec)->Finish(meta).ok());
    }
    const Outcome whole = Run({"analyze", full});
    EXPECT_EQ(whole.exit_code, 0) << name << whole.err;
    EXPECT_EQ(whole.out.find("cut short"), std::string::npos) << whole.out;
    EXPECT_NE(whole.out.find("samples 20"), std::string::npos) << whole.out;
    // SIGKILL or a full disk: the file stops mid-line, with no end.
    const std::string text = ReadFile(full);
    const std::string cut = text.substr(0, text.size() * 2 / 3);
    WriteFile(full, cut);
    const Outcome r = Run({"analyze", full});
    EXPECT_EQ(r.exit_code, 0) << name << r.err;
    EXPECT_NE(r.out.find("cut short: no "), std::string::npos) << name << r.out;
    EXPECT_NE(r.out.find("is incomplete and was left out"), std::string::npos) << name << r.out;
    EXPECT_NE(r.out.find("util 40 %"), std::string::npos) << name << r.out;
    EXPECT_EQ(r.out.find("malformed"), std::string::npos) << name << r.out;
  }
}

TEST_F(IngestTest, RecordingFormatsAreSniffedByContent) {
  // The three formats' first bytes, as recorder.cc writes them.
  EXPECT_TRUE(ingest::LooksLikeJsonlRecording(
      "{\"type\":\"header\",\"format\":\"gpuscope-monitor\",\"version\":1}\n"));
  EXPECT_TRUE(ingest::LooksLikeCsvRecording("time_s,unix_ns,source,id,metric,value\n0.0,1,run"));
  EXPECT_TRUE(ingest::LooksLikeChromeTraceRecording(
      "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\","
      "\"pid\":\"gpuscope monitor\",\"args\":{\"name\":\"gpuscope monitor\"}}"));
  // A Kineto trace with the same first key is not a recording.
  EXPECT_FALSE(ingest::LooksLikeChromeTraceRecording(
      "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"ph\":\"X\",\"pid\":1}"));
  auto kineto = ingest::SniffFormat("{\"traceEvents\": []}", "t");
  ASSERT_TRUE(kineto.ok());
  EXPECT_EQ((*kineto)->id, ingest::InputFormat::kKinetoJson);
  auto dmon = ingest::SniffFormat("# gpu   pwr  gtemp\n# Idx W C\n 0 60 30\n", "d");
  ASSERT_TRUE(dmon.ok());
  EXPECT_EQ((*dmon)->id, ingest::InputFormat::kNvidiaSmiLog);
}

// registry_fuzz found it (fuzz/seeds/registry/recording_csv_cpu_time_overflow.csv): a CSV recording
// without cpu_time_ns rows whose sample times are 10^26 ns apart; the CPU time estimated from
// cpu_pct × the time between samples overflowed the cast to uint64 (undefined behaviour). Now it
// saturates at 9.2e18 ns.
TEST_F(IngestTest, RecordingCpuTimeEstimateSaturates) {
  const std::string bytes = testing::ReadFile(std::string(GPUSCOPE_SOURCE_DIR) +
                                              "/fuzz/seeds/registry/recording_csv_cpu_time_overflow.csv");
  ASSERT_FALSE(bytes.empty());
  auto in = ingest::ReadInputFromBytes(bytes, "cpu_time.csv", {});
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->kind, ingest::ModelKind::kMonitor);
  size_t processes = 0;
  for (const monitor::Sample& s : in->recording->samples)
    for (const monitor::ProcessSample& p : s.processes) {
      ++processes;
      EXPECT_LE(p.cpu_time_ns, 9'200'000'000'000'000'000u);
    }
  EXPECT_GT(processes, 0u);
}

}  // namespace
}  // namespace gpuscope
