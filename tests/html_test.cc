// The HTML report: escaping of trace strings, and rendering in a real browser (headless Chromium,
// Debian package `chromium`, installed by `tools/setup.sh --test`).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "render/html.h"
#include "report/job_document.h"
#include "test_util.h"

namespace gpuscope {
namespace {

using testing::ReadFile;
using testing::RunGpuscope;
using testing::TempPath;
using testing::WriteFile;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

TEST(HtmlEscape, MarkupQuotesAndBadBytes) {
  const auto Escape = [](std::string_view s) { return render::HtmlEscape(s); };
  EXPECT_EQ(Escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(Escape("x\" onerror='y' & z"), "x&quot; onerror=&#39;y&#39; &amp; z");
  // Invalid UTF-8 and C0 controls become U+FFFD; valid multi-byte text passes through.
  EXPECT_EQ(Escape(std::string("a\xff" "b\x01" "c", 5)), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c");
  EXPECT_EQ(Escape("µs → GB"), "µs → GB");
  EXPECT_EQ(Escape("tab\tnl\n"), "tab\tnl\n");
}

// A small trace whose device, kernel and op names are hostile markup (and one invalid UTF-8 name).
std::string HostileTrace() {
  const char* names[] = {"<script>alert(1)</script>", "x\\\" onerror=\\\"alert(2)",
                         "<img src=x onerror=alert(3)>", "bad\xff\xfe utf8 </script>"};
  std::string ev;
  int corr = 1;
  for (int step = 1; step <= 3; ++step) {
    const int t0 = step * 10000;
    ev += "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" +
          std::to_string(step) + "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(t0) +
          ",\"dur\":9000},\n";
    ev += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"<svg onload=alert(4)>\",\"pid\":1,\"tid\":1,"
          "\"ts\":" + std::to_string(t0 + 10) + ",\"dur\":8000},\n";
    for (int k = 0; k < 4; ++k, ++corr) {
      const int ts = t0 + 100 + k * 2000;
      ev += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
            "\"tid\":1,\"ts\":" + std::to_string(ts) + ",\"dur\":10,\"args\":{\"correlation\":" +
            std::to_string(corr) + "}},\n";
      ev += std::string("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"") + names[k] +
            "\",\"pid\":0,\"tid\":7,\"ts\":" + std::to_string(ts + 20) +
            ",\"dur\":1500,\"args\":{\"device\":0,\"stream\":7,\"correlation\":" +
            std::to_string(corr) + ",\"grid\":[4,1,1],\"block\":[128,1,1]}},\n";
    }
  }
  ev += "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"pid\":1,"
        "\"tid\":1,\"ts\":10005,\"args\":{\"Device Type\":1,\"Device Id\":0,\"Bytes\":1048576,"
        "\"Total Allocated\":1048576,\"Total Reserved\":2097152}}\n";
  return "{\"deviceProperties\":[{\"id\":0,\"name\":\"<b onmouseover=alert(5)>GPU</b>\","
         "\"totalGlobalMem\":42949672960,\"computeMajor\":8,\"computeMinor\":0,\"numSms\":108}],\n"
         "\"traceEvents\":[\n" + ev + "]}\n";
}

TEST(HtmlReport, TraceStringsAreInertText) {
  const std::string trace = TempPath("evil<i>\"name'.pt.trace.json");
  WriteFile(trace, HostileTrace());
  const std::string html = TempPath("evil.html");
  auto r = RunGpuscope("analyze '" + std::string(trace).replace(trace.find('\''), 1, "'\\''") +
                       "' --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = ReadFile(html);
  ASSERT_FALSE(page.empty());
  // No markup from the trace survives: the only <script> is the JSON data block.
  EXPECT_EQ(Count(page, "<script"), 1u);
  EXPECT_EQ(Count(page, "<script type=\"application/json\" id=\"gpuscope-report\">"), 1u);
  EXPECT_EQ(Count(page, "</script>"), 1u);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<svg onload"), std::string::npos);
  EXPECT_EQ(page.find("<b onmouseover"), std::string::npos);
  EXPECT_EQ(page.find("\" onerror"), std::string::npos);
  EXPECT_EQ(page.find("<i>"), std::string::npos);
  // ... but the names are there, as text. (Kernel names are shown short: ShortKernelName drops
  // what looks like template arguments, so "<script>alert(1)</script>" is listed as "alert".)
  EXPECT_NE(page.find("<td>&lt;img src=x onerror=alert(3)&gt;</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>onerror=&quot;alert</td>"), std::string::npos);
  EXPECT_NE(page.find("utf8 &lt;/script&gt;</td>"), std::string::npos);
  EXPECT_NE(page.find("<b>&lt;b onmouseover=alert(5)&gt;GPU&lt;/b&gt;</b>"), std::string::npos);
  EXPECT_NE(page.find("evil&lt;i&gt;&quot;name&#39;"), std::string::npos);
  // The embedded JSON parses, and carries the names (with \u003c for '<').
  const size_t open = page.find("id=\"gpuscope-report\">") + 21;
  const size_t close = page.find("</script>", open);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(page.substr(open, close - open)).get(doc), simdjson::SUCCESS);
  std::string_view schema;
  ASSERT_EQ(doc["schema"].get(schema), simdjson::SUCCESS);
  EXPECT_EQ(schema, "gpuscope.report");

  // --json stays valid for the same bytes (the invalid UTF-8 name is repaired by the reader).
  auto j = RunGpuscope("analyze --json '" +
                       std::string(trace).replace(trace.find('\''), 1, "'\\''") + "'");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  ASSERT_EQ(parser.parse(j.out).get(doc), simdjson::SUCCESS);
  EXPECT_NE(j.out.find("\\u003cimg src=x onerror=alert(3)\\u003e"), std::string::npos);
}

TEST(HtmlReport, UnwritableOutputIsAClearError) {
  auto r = RunGpuscope("analyze " + std::string(GPUSCOPE_SOURCE_DIR) +
                       "/examples/train_input_bound.pt.trace.json.gz --html /nonexistent-dir/x.html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--html /nonexistent-dir/x.html: cannot write into /nonexistent-dir: No "
                       "such file or directory"),
            std::string::npos)
      << r.err;
}

// ---- Headless Chromium ----

std::string Chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

#define REQUIRE_CHROMIUM(bin)                                                                \
  const std::string bin = Chromium();                                                        \
  if (bin.empty() && std::getenv("GPUSCOPE_SKIP_BROWSER_TESTS"))                             \
    GTEST_SKIP() << "chromium not installed and GPUSCOPE_SKIP_BROWSER_TESTS is set";         \
  ASSERT_FALSE(bin.empty()) << "headless Chromium is needed for the browser tests: run "     \
                               "tools/setup.sh --test (Debian package chromium), or set "    \
                               "GPUSCOPE_SKIP_BROWSER_TESTS=1 to skip them"

// Runs headless Chromium on a local file; returns its stdout. Each call has its own profile folder
// so tests can run in parallel; no network, no GPU, no sandbox (CI runs as root).
std::string RunChromium(const std::string& bin, const std::string& args, const std::string& tag) {
  const std::string profile = TempPath("chromium-profile-" + tag);
  const std::string out = TempPath("chromium-" + tag + ".out");
  const std::string cmd = "timeout 180 " + bin +
                          " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                          "--disable-background-networking --disable-extensions --no-first-run "
                          "--hide-scrollbars --user-data-dir=" + profile + " " + args + " >" +
                          out + " 2>" + out + ".err";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0)
      << cmd << "\n" << ReadFile(out + ".err");
  return ReadFile(out);
}

struct Image {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // 3 bytes per pixel
};

uint32_t Be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

// A PNG decoder for what Chromium writes: 8-bit RGB or RGBA, not interlaced (PNG spec §9 filters).
bool DecodePng(const std::string& png, Image* img, std::string* error) {
  if (png.size() < 8 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    *error = "not a PNG";
    return false;
  }
  std::string idat;
  uint8_t depth = 0, color = 0, interlace = 0;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t len = Be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + len > png.size()) break;
    if (type == "IHDR") {
      img->width = Be32(png, at + 8);
      img->height = Be32(png, at + 12);
      depth = uint8_t(png[at + 16]);
      color = uint8_t(png[at + 17]);
      interlace = uint8_t(png[at + 20]);
    } else if (type == "IDAT") {
      idat.append(png, at + 8, len);
    }
    at += 12 + len;
  }
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0) {
    *error = "unsupported PNG format";
    return false;
  }
  const size_t bpp = color == 6 ? 4 : 3, stride = img->width * bpp;
  std::vector<uint8_t> raw((stride + 1) * img->height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_len != raw.size()) {
    *error = "bad IDAT";
    return false;
  }
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img->rgb.clear();
  img->rgb.reserve(size_t(img->width) * img->height * 3);
  for (uint32_t y = 0; y < img->height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* line = &raw[y * (stride + 1) + 1];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? cur[x - bpp] : 0, b = prev[x], c = x >= bpp ? prev[x - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
          break;
        }
        default: *error = "bad filter"; return false;
      }
      cur[x] = uint8_t(line[x] + pred);
    }
    for (uint32_t x = 0; x < img->width; ++x)
      img->rgb.insert(img->rgb.end(), &cur[x * bpp], &cur[x * bpp] + 3);
    std::swap(prev, cur);
  }
  return true;
}

struct PixelStats {
  double non_white = 0;     // share of pixels that are not (near) white
  size_t palette_hits = 0;  // pixels of the chart palette's first colour, #0072B2
  size_t distinct = 0;      // distinct colours (6-bit quantised)
};

PixelStats Stats(const Image& img) {
  PixelStats s;
  size_t non_white = 0;
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 2 < img.rgb.size(); i += 3) {
    const uint8_t r = img.rgb[i], g = img.rgb[i + 1], b = img.rgb[i + 2];
    if (r < 245 || g < 245 || b < 245) ++non_white;
    if (std::abs(r - 0) < 8 && std::abs(g - 114) < 8 && std::abs(b - 178) < 8) ++s.palette_hits;
    colours.insert((uint32_t(r >> 2) << 12) | (uint32_t(g >> 2) << 6) | uint32_t(b >> 2));
  }
  s.non_white = img.rgb.empty() ? 0 : double(non_white) / double(img.rgb.size() / 3);
  s.distinct = colours.size();
  return s;
}

const char* kSections[] = {"rank_0-findings", "rank_0-steps",  "jobs-job_1",     "rank_0-kernels",
                           "rank_0-gpu_time", "rank_0-memory", "rank_1-copies",  "rank_1-launches",
                           "rank_0-inputs",   "rank_0-sync",   "rank_0-idle_gaps"};

TEST(HtmlBrowser, MultiRankReportRendersWithEverySection) {
  REQUIRE_CHROMIUM(chromium);
  // Two ranks, rank 1 late to every collective, with a DataLoader stall and exposed communication
  // planted.
  const std::string dir = TempPath("html_ranks");
  std::filesystem::remove_all(dir);
  auto s = RunGpuscope("synth -o " + dir +
                       " --ranks 2 --steps 6 --dataloader-stall 0.2 --exposed-comm 0.1 "
                       "--late-rank 1 --late 5ms");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string html = TempPath("ranks.html");
  auto r = RunGpuscope("analyze " + dir + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "dom");
  ASSERT_FALSE(dom.empty());
  for (const char* id : kSections)
    EXPECT_NE(dom.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  // Both ranks appear, with the planted findings.
  EXPECT_NE(dom.find("rank 0 of 2"), std::string::npos);
  EXPECT_NE(dom.find("rank 1 of 2"), std::string::npos);
  EXPECT_NE(dom.find("id=\"rank_0-findings-input_pipeline_stall\""), std::string::npos);
  // The job: rank 1 is the straggler, with its finding; the busy heatmap has a row per rank.
  EXPECT_NE(dom.find("id=\"jobs-job_1-findings-straggler\""), std::string::npos);
  EXPECT_NE(dom.find("Rank 1 arrives last at collectives"), std::string::npos);
  EXPECT_EQ(Count(dom, "<svg class=\"heatmap\""), 1u);
  // Charts: per-step bars and idle bars for each rank, memory lines.
  EXPECT_GE(Count(dom, "<svg class=\"bars\""), 4u);
  EXPECT_GE(Count(dom, "<rect "), 20u);
  EXPECT_GE(Count(dom, "<svg class=\"line\""), 2u);

  const std::string png = TempPath("ranks.png");
  RunChromium(chromium, "--window-size=1200,2400 --screenshot=" + png + " file://" + html, "shot");
  Image img;
  std::string error;
  ASSERT_TRUE(DecodePng(ReadFile(png), &img, &error)) << error;
  EXPECT_EQ(img.width, 1200u);
  EXPECT_EQ(img.height, 2400u);
  const PixelStats st = Stats(img);
  std::printf("screenshot: %ux%u, %.1f %% non-white, %zu pixels of #0072B2, %zu colours\n",
              img.width, img.height, 100 * st.non_white, st.palette_hits, st.distinct);
  EXPECT_GT(st.non_white, 0.05);        // text, tables and charts, not a blank page
  EXPECT_GT(st.palette_hits, 2000u);    // the bars were drawn
  EXPECT_GT(st.distinct, 20u);
}

TEST(HtmlBrowser, HostileNamesStayTextInTheDom) {
  REQUIRE_CHROMIUM(chromium);
  const std::string trace = TempPath("hostile.pt.trace.json");
  WriteFile(trace, HostileTrace());
  const std::string html = TempPath("hostile.html");
  auto r = RunGpuscope("analyze " + trace + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "hostile");
  ASSERT_FALSE(dom.empty());
  // The browser built no element from a name: no img, no extra script, and no tag carries an
  // event-handler attribute. (In serialised DOM text '<' is always escaped, so every '<' opens a
  // real tag; a '"' in text is not escaped, hence the per-tag check.)
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(Count(dom, "<script"), 1u);
  for (size_t open = dom.find('<'); open != std::string::npos; open = dom.find('<', open + 1)) {
    const std::string tag = dom.substr(open, dom.find('>', open) - open);
    EXPECT_EQ(tag.find(" on"), std::string::npos) << tag;
  }
  EXPECT_NE(dom.find("<td>&lt;img src=x onerror=alert(3)&gt;</td>"), std::string::npos);
  EXPECT_NE(dom.find("<b>&lt;b onmouseover=alert(5)&gt;GPU&lt;/b&gt;</b>"), std::string::npos);
}

// A job's page: the busy heatmap (one row of cells per rank) and the skew table, with rank file
// names, a group note and collective names that carry markup. Three hand-made ranks, rank 2 late
// at every collective, so the page depends on nothing but the job document.
TEST(HtmlBrowser, JobPageHasHeatmapAndSkewTableAndEscapesHostileRankFiles) {
  REQUIRE_CHROMIUM(chromium);
  constexpr int64_t kMs = 1'000'000, kBase = 1'700'000'000'000'000'000;
  const std::string hostile = "<img src=x onerror=alert(7)>";
  std::vector<report::RankSummary> ranks(3);
  report::AnalysedJob job;
  for (int32_t r = 0; r < 3; ++r) {
    report::RankSummary& s = ranks[r];
    s.facts.identity.rank = r;
    s.facts.identity.world_size = 3;
    s.facts.identity.absolute_clock = true;
    s.facts.identity.path = "runs/" + hostile + "rank" + std::to_string(r) + ".json";
    s.facts.mean_step_ns = 50 * kMs;
    s.facts.span_ns = 500 * kMs;
    s.facts.compute_ns = 300 * kMs;
    s.facts.busy.first_bin_start_ns = kBase;
    s.facts.busy.bin_ns = 5 * kMs;
    for (int b = 0; b < 100; ++b) s.facts.busy.busy_ns.push_back(b % 10 == 9 && r != 2 ? 0 : 4 * kMs);
    s.section.key = "rank_" + std::to_string(r);
    s.section.title = "rank " + std::to_string(r) + " of 3  " + s.facts.identity.path;
    job.group.members.push_back(static_cast<size_t>(r));
    analyze::RankWait w;
    w.rank = r;
    w.input = static_cast<size_t>(r);
    w.collectives = 10;
    w.times_last = r == 2 ? 10 : 0;
    w.wait_caused_ns_per_step = r == 2 ? 3 * kMs : 0;
    w.wait_suffered_ns_per_step = r == 2 ? 0 : 3 * kMs;
    w.waits_most_for = r == 2 ? -1 : 2;
    job.analysis.ranks.push_back(w);
  }
  job.group.label = "job 1";
  job.group.notes = {"rank 1 appears twice: " + ranks[1].facts.identity.path};
  for (int i = 0; i < 10; ++i) {
    analyze::MatchedCollective c;
    c.group = "<b onmouseover=alert(8)>pg</b>";
    c.type = "allreduce";
    c.seq = i;
    c.bytes = 1 << 20;
    c.ranks = c.expected_ranks = 3;
    c.last_rank = 2;
    c.skew_ns = 3 * kMs + i;
    c.wait_caused_ns = 3 * kMs;
    c.duration_ns = kMs;
    c.busbw_gbps = 1.4;
    job.analysis.collectives.push_back(c);
  }
  job.analysis.mean_step_ns = 50 * kMs;
  job.analysis.steps = 10;
  job.analysis.straggler = analyze::Straggler{2, 2, 3 * kMs, 0.06};
  const std::string html = TempPath("job.html");
  WriteFile(html, render::RenderHtml(report::BuildJobDocument(ranks, {job}, {}, {})));
  const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "job");
  ASSERT_FALSE(dom.empty());
  // The job section, its finding, the heatmap (3 rows × 100 cells: 5 ms bins, no cell finer) and
  // the skew table with all ten collectives.
  EXPECT_NE(dom.find("<section id=\"jobs-job_1\">"), std::string::npos);
  EXPECT_NE(dom.find("id=\"jobs-job_1-findings-straggler\""), std::string::npos);
  const size_t svg = dom.find("<svg class=\"heatmap\"");
  ASSERT_NE(svg, std::string::npos);
  EXPECT_EQ(Count(dom.substr(svg, dom.find("</svg>", svg) - svg), "<rect "), 300u);
  EXPECT_NE(dom.find("<h4>collectives with the largest arrival skew</h4>"), std::string::npos);
  EXPECT_EQ(Count(dom, "<td>allreduce</td>"), 10u);
  // Nothing in a name became an element or an attribute.
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(Count(dom, "<script"), 1u);
  for (size_t open = dom.find('<'); open != std::string::npos; open = dom.find('<', open + 1)) {
    const std::string tag = dom.substr(open, dom.find('>', open) - open);
    EXPECT_EQ(tag.find(" on"), std::string::npos) << tag;
  }
  EXPECT_NE(dom.find("runs/&lt;img src=x onerror=alert(7)&gt;rank1.json"), std::string::npos);
  EXPECT_NE(dom.find("<td>&lt;b onmouseover=alert(8)&gt;pg&lt;/b&gt;</td>"), std::string::npos);
  std::filesystem::remove(html);
}

// `gpuscope run --html` (the "gpuscope.run" document) with names a job and a driver choose: a
// GPU name from NVML (the fake library), the process name (comm, from the file name run), and the
// command's path, each holding markup and escape sequences. The browser builds no element from
// them, the page holds no control character, and the names are shown as text.
TEST(HtmlBrowser, RunPageEscapesHostileProcessAndGpuNames) {
  REQUIRE_CHROMIUM(chromium);
  const std::string dir = TempPath("html_run");
  std::filesystem::remove_all(dir);
  // The command's path: a folder named with markup and ESC ]52 (a clipboard write), and a file
  // name whose first 15 bytes, the process name (comm), are ESC [2J and an img tag.
  const std::string folder = dir + "/<svg onload=alert(2)>\x1b]52;c;aGk=\x07";
  std::filesystem::create_directories(folder);
  const std::string evil = folder + "/\x1b[2J<img src=x>";
  std::filesystem::create_symlink("/bin/sleep", evil);
  const std::string script = dir + "/nvml";
  WriteFile(script,
            "gpus 1\nname 0 <script>alert(1)</script>\x1b]0;pwned\x07 H100\nutil 0 40 10\n"
            "memory 0 20000000000 80000000000\npower 0 150000 700000\n");
  setenv("GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML, 1);
  setenv("GPUSCOPE_FAKE_NVML_SCRIPT", script.c_str(), 1);
  const std::string html = dir + "/run.html";
  auto r = RunGpuscope("run --interval 50ms --html " + html + " -- '" + evil + "' 0.4");
  unsetenv("GPUSCOPE_NVML_LIBRARY");
  unsetenv("GPUSCOPE_FAKE_NVML_SCRIPT");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = ReadFile(html);
  ASSERT_FALSE(page.empty()) << r.err;
  for (const char c : {'\x1b', '\x07'}) EXPECT_EQ(page.find(c), std::string::npos);
  EXPECT_EQ(Count(page, "<script"), 1u);  // the JSON data block only
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<svg onload"), std::string::npos);

  const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "run");
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(Count(dom, "<script"), 1u);
  for (size_t open = dom.find('<'); open != std::string::npos; open = dom.find('<', open + 1)) {
    const std::string tag = dom.substr(open, dom.find('>', open) - open);
    EXPECT_EQ(tag.find(" on"), std::string::npos) << tag;
  }
  EXPECT_NE(dom.find("<section id=\"monitor\">"), std::string::npos) << dom;
  EXPECT_NE(dom.find("gpuscope monitor · run"), std::string::npos);
  // The names as text, their control characters made spaces by the sanitiser.
  EXPECT_NE(dom.find("&lt;script&gt;alert(1)&lt;/script&gt; ]0;pwned  H100"), std::string::npos)
      << dom;
  EXPECT_NE(dom.find(" [2J&lt;img src=x&gt; (pid "), std::string::npos) << dom;
  EXPECT_NE(dom.find("&lt;svg onload=alert(2)&gt; ]52;c;aGk= / [2J&lt;img src=x&gt; 0.4"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("util <b>40 %</b>"), std::string::npos) << dom;
  // The embedded JSON is the run document and carries the same names.
  const size_t open = page.find("id=\"gpuscope-report\">") + 21;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(page.substr(open, page.find("</script>", open) - open)).get(doc),
            simdjson::SUCCESS);
  std::string_view schema, gpu;
  ASSERT_EQ(doc["schema"].get(schema), simdjson::SUCCESS);
  EXPECT_EQ(schema, "gpuscope.run");
  ASSERT_EQ(doc["sections"]["monitor"]["items"]["gpu_0"]["fields"]["name"]["value"].get(gpu),
            simdjson::SUCCESS);
  EXPECT_EQ(gpu, "<script>alert(1)</script> ]0;pwned  H100");
  std::filesystem::remove_all(dir);
}

// The diff's side-by-side page (same renderer helpers) in the browser: a stall removed.
TEST(HtmlBrowser, DiffPageRenders) {
  REQUIRE_CHROMIUM(chromium);
  const std::string before = TempPath("diff_before.pt.trace.json");
  const std::string after = TempPath("diff_after.pt.trace.json");
  ASSERT_EQ(RunGpuscope("synth -o " + before + " --steps 6 --dataloader-stall 0.3").exit_code, 0);
  ASSERT_EQ(RunGpuscope("synth -o " + after + " --steps 6").exit_code, 0);
  const std::string html = TempPath("diff.html");
  auto r = RunGpuscope("diff " + before + " " + after + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "diff");
  EXPECT_NE(dom.find("<h1>gpuscope diff</h1>"), std::string::npos);
  EXPECT_NE(dom.find("<section id=\"pair_0\">"), std::string::npos);
  for (const char* h : {"step breakdown (mean of steady steps)", "kernels: top movers", "CPU ops: top movers",
                        "findings (estimated saving per step)", "<th>allocated</th>"})
    EXPECT_NE(dom.find(h), std::string::npos) << h;
  // The synthetic loop's verdict (its host idles between steps: the critical path reads host).
  EXPECT_NE(dom.find("host-bound"), std::string::npos);
  EXPECT_GE(Count(dom, "<svg class=\"bars\""), 2u);
  const std::string png = TempPath("diff.png");
  RunChromium(chromium, "--window-size=1200,1600 --screenshot=" + png + " file://" + html,
              "diffshot");
  Image img;
  std::string error;
  ASSERT_TRUE(DecodePng(ReadFile(png), &img, &error)) << error;
  const PixelStats st = Stats(img);
  EXPECT_GT(st.non_white, 0.03);
  EXPECT_GT(st.palette_hits, 500u);
}

// How far a page overflows a window of `width` px: a harness page loads it in an iframe of that
// width and writes the document's scroll width minus its client width, and the elements and text
// that reach past the right edge outside a scrolling box, into its DOM (the report itself runs
// no script: its CSP forbids them).
struct Overflow {
  int excess = -1;  // px; -1: not measured
  std::string wide;  // the first elements past the edge
};
Overflow MeasureOverflow(const std::string& chromium, const std::string& page, int width,
                         const std::string& tag) {
  const std::string harness = TempPath("harness-" + tag + ".html");
  WriteFile(harness,
            "<!doctype html><html><body><iframe id=\"f\" src=\"file://" + page + "\" width=\"" +
                std::to_string(width) +
                "\" height=\"900\"></iframe><script>"
                "document.getElementById('f').onload = function () {"
                "  var d = this.contentDocument.documentElement, wide = [];"
                "  var doc = this.contentDocument, inside = function (e) {"
                "    return e.closest('.scroll, .tlscroll, pre'); };"
                "  doc.querySelectorAll('body *').forEach(function (e) {"
                "    if (e.getBoundingClientRect().right > d.clientWidth + 1 && !inside(e))"
                "      wide.push(e.tagName);"
                "  });"
                // Text runs past its box's edge without widening the box: each text node's own
                // rectangle, named by its element with '#text'.
                "  var walk = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT), n;"
                "  while ((n = walk.nextNode())) {"
                "    var range = doc.createRange(); range.selectNodeContents(n);"
                "    if (range.getBoundingClientRect().right > d.clientWidth + 1 &&"
                "        !inside(n.parentElement)) wide.push(n.parentElement.tagName + '#text');"
                "  }"
                "  document.body.setAttribute('data-excess', d.scrollWidth - d.clientWidth);"
                "  document.body.setAttribute('data-wide', wide.slice(0, 8).join(' '));"
                "};</script></body></html>");
  const std::string dom =
      RunChromium(chromium,
                  "--allow-file-access-from-files --virtual-time-budget=5000 --dump-dom file://" +
                      harness,
                  tag);
  Overflow o;
  const size_t at = dom.find("data-excess=\"");
  if (at != std::string::npos) o.excess = std::atoi(dom.c_str() + at + 13);
  const size_t w = dom.find("data-wide=\"");
  if (w != std::string::npos) o.wide = dom.substr(w + 11, dom.find('"', w + 11) - w - 11);
  return o;
}

// A number of 16 digits or more, grouped ("1,623,142,623,460,172,032"): an epoch in ns printed
// raw. The page's visible text only (the embedded JSON keeps exact integers).
bool HasEpochNumber(std::string dom) {
  const size_t script = dom.find("<script type=\"application/json\"");
  if (script != std::string::npos) dom.erase(script, dom.find("</script>", script) - script);
  const std::regex grouped("[0-9]{1,3}(,[0-9]{3}){5,}");
  return std::regex_search(dom, grouped);
}

// Every page — analyze (the bundled example), a run recording, an nvidia-smi log, a plan, a CUDA
// memory snapshot, a diff — at 800 and 1280 px: its charts (and the analyze page's table of
// contents and step timeline) in the DOM, no epoch-ns number, no script that could fail, no
// horizontal overflow, and a screenshot of the window's size that is not blank.
TEST(HtmlBrowser, EveryPageFitsTwoWidthsWithItsCharts) {
  REQUIRE_CHROMIUM(chromium);
  // The inputs through a long folder name: a page's title holds the input's path, and a path
  // longer than the window, with no hyphen to break at, must wrap, not widen the page (CI's
  // checkout is deeper than ours).
  const std::string src = TempPath(
      "a_long_folder_name_as_users_have_them_experiments_2026_11_29_llama_8b_fsdp_sweep_run_17");
  std::filesystem::remove(src);
  std::filesystem::create_directory_symlink(GPUSCOPE_SOURCE_DIR, src);
  const std::string before = TempPath("pages_before.pt.trace.json");
  const std::string after = TempPath("pages_after.pt.trace.json");
  ASSERT_EQ(RunGpuscope("synth -o " + before + " --steps 6 --dataloader-stall 0.3").exit_code, 0);
  ASSERT_EQ(RunGpuscope("synth -o " + after + " --steps 6").exit_code, 0);
  struct Page {
    std::string name, args;
    std::vector<std::pair<std::string, size_t>> at_least;  // DOM text, how many times
  };
  const std::vector<Page> pages = {
      {"analyze",
       "analyze " + src + "/examples/train_input_bound.pt.trace.json.gz",
       {{"<nav>", 1},
        {"<details", 10},
        {"class=\"tl\" id=\"rank_0-timeline-timeline\"", 1},
        {"GPU 0 stream 7", 1},
        {"<svg class=\"bars\"", 2}}},
      {"run",
       "analyze " + src + "/tests/data/monitor/run_cpu_busy_workers.jsonl",
       {{"<section id=\"monitor-over_time\">", 1}, {"<svg class=\"line\"", 1}}},
      {"smi",
       "analyze " + src + "/tests/data/monitor/nvidia_smi_2gpu.csv",
       {{"GPU utilisation", 1}, {"<svg class=\"line\"", 3}}},
      {"plan",
       "plan --model llama-3-8b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096",
       {{"memory per GPU by kind of term", 1}, {"step time by term", 1},
        {"<svg class=\"bars\"", 2}, {"<details>", 1}}},
      {"snapshot",
       "analyze " + src + "/fuzz/seeds/snapshot/snapshot_p4.pickle",
       {{"<svg class=\"", 1}}},
      {"diff", "diff " + before + " " + after, {{"<svg class=\"bars\"", 2}}},
  };
  for (const Page& p : pages) {
    SCOPED_TRACE(p.name);
    const std::string html = TempPath("page-" + p.name + ".html");
    const auto r = RunGpuscope(p.args + " --html " + html);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;  // a plan may not fit: still a page
    const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "dom-" + p.name);
    for (const auto& [text, n] : p.at_least) EXPECT_GE(Count(dom, text), n) << text;
    EXPECT_FALSE(HasEpochNumber(dom));
    // No script to fail: the only script element is the embedded JSON, which does not run.
    EXPECT_EQ(Count(dom, "<script"), Count(dom, "<script type=\"application/json\""));
    for (const int width : {800, 1280}) {
      const Overflow o = MeasureOverflow(chromium, html, width, p.name + std::to_string(width));
      EXPECT_EQ(o.excess, 0) << width << " px: " << o.wide;
      const std::string png = TempPath("page-" + p.name + std::to_string(width) + ".png");
      RunChromium(chromium,
                  "--window-size=" + std::to_string(width) + ",1000 --screenshot=" + png +
                      " file://" + html,
                  "shot-" + p.name + std::to_string(width));
      Image img;
      std::string error;
      ASSERT_TRUE(DecodePng(ReadFile(png), &img, &error)) << error;
      EXPECT_EQ(img.width, static_cast<uint32_t>(width));
      EXPECT_EQ(img.height, 1000u);
      EXPECT_GT(Stats(img).non_white, 0.02);
    }
  }
}

TEST(HtmlBrowser, RealTraceReport) {
  GPUSCOPE_REQUIRE_REAL(
      "traces/kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  REQUIRE_CHROMIUM(chromium);
  const std::string trace = testing::RealTrace(
      "kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz");
  const std::string html = TempPath("resnet.html");
  auto r = RunGpuscope("analyze " + trace + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dom = RunChromium(chromium, "--dump-dom file://" + html, "resnet");
  // One rank without a rank id: its section is input_0, and there is no across-ranks section.
  for (const char* id : {"input_0-findings", "input_0-steps", "input_0-kernels", "input_0-gpu_time",
                         "input_0-memory", "input_0-copies", "input_0-launches", "input_0-inputs",
                         "input_0-critical_path"})
    EXPECT_NE(dom.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  // Its critical path: host 53 %, DataLoader 38 %; the per-step chart and the what-if table.
  EXPECT_NE(dom.find("<b>host-bound</b>"), std::string::npos);
  EXPECT_NE(dom.find("critical path per step, by what bounds it"), std::string::npos);
  EXPECT_NE(dom.find("each fix replayed"), std::string::npos);
  EXPECT_NE(dom.find("num_workers"), std::string::npos);
  EXPECT_NE(dom.find("Tesla V100"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
