// The physical limit gpuscope's ingest is compared with (issue 17): one core, simdjson On-Demand,
// over the same file, doing the least any event reader must do.
//
//   gpuscope_ceiling FILE [--window BYTES]
//
// 1. Read: the whole file through gpuscope's own byte source into one reused 1 MiB buffer (plain:
//    read(2) from the page cache; gzip: inflated by isa-l, or zlib where isa-l is absent), one
//    core. Its time is the inflate ceiling of a gzip trace. The content is then read again into
//    memory, untimed, for the passes.
// 2. Parse: the traceEvents array, cut into windows of about --window bytes (default 4 MiB, the
//    reader's batch size) after a complete event, each parsed as one JSON array on one core: every
//    field of every event is visited, its key looked at, "args" objects entered the same way;
//    nothing is stored. The copy of each window into a padded buffer is not timed, so buffers are
//    warm as in the reader.
//
// Three passes, each on one core:
//   tokens    4 MiB windows, every value's token delimited, nothing decoded (the least any
//             reader can do);
//   parse     4 MiB windows, every value decoded: strings unescaped, integers exact, other
//             numbers as doubles, nested objects visited (what reading the events means);
//   document  the tokens pass over 1 GiB windows: the file as one document, as simdjson's
//             examples read it (issue 17 measured 1.46 GB/s this way and set the goal from it).
// Prints one line of key=value pairs (bench/run.sh reads it):
//   ceiling: json_bytes=… events=… read_seconds=… tokens_seconds=… parse_seconds=…
//            document_seconds=… (and GB/s of each)
// Cutting: a window ends at a '}' followed by ',' and '{' (whitespace between), found searching
// backwards from the window's end; a cut inside a nested array of objects would make the window's
// parse fail, which is reported (exit 1), never silently measured.
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "io/byte_source.h"

namespace {

namespace od = simdjson::ondemand;
using Clock = std::chrono::steady_clock;

// The "document" pass: windows of 1 GiB, i.e. the file iterated as one document the way
// simdjson's examples do (`padded_string::load`, `iterate`), cut only because simdjson documents
// stop at 4 GiB. Stage 1 then runs over far more than the caches hold before stage 2 starts.
constexpr size_t kDocumentWindow = size_t{1} << 30;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Position just after the last '}' in [begin, end) that is followed by ',' and '{' (whitespace
// allowed between), or 0 when there is none.
size_t LastEventEnd(const char* text, size_t begin, size_t end) {
  for (size_t i = end; i > begin + 1; --i) {
    if (text[i - 1] != '{') continue;
    size_t j = i - 1;
    while (j > begin && IsSpace(text[j - 1])) --j;
    if (j == begin || text[j - 1] != ',') continue;
    --j;
    while (j > begin && IsSpace(text[j - 1])) --j;
    if (j > begin && text[j - 1] == '}') return j;
  }
  return 0;
}

struct Counts {
  uint64_t events = 0;
  uint64_t fields = 0;
  uint64_t token_bytes = 0;  // keeps the visits from being optimised away
};

simdjson::error_code VisitObject(od::object obj, Counts* c, int depth, bool decode) {
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    const char* raw = field.key().raw();
    ++c->fields;
    od::value v = field.value();
    if (depth == 0 && std::memcmp(raw, "args\"", 5) == 0) {
      od::object args;
      if (v.get_object().get(args) == simdjson::SUCCESS) {
        if (auto e = VisitObject(args, c, 1, decode)) return e;
        continue;
      }
    }
    if (!decode) {
      c->token_bytes += v.raw_json_token().size();
      continue;
    }
    // Decode: what reading the event means to any simdjson user — strings unescaped, numbers
    // converted (integers exactly, the rest as doubles), nested values visited.
    od::json_type type;
    if (auto e = v.type().get(type)) return e;
    switch (type) {
      case od::json_type::string: {
        std::string_view s;
        if (auto e = v.get_string().get(s)) return e;
        c->token_bytes += s.size();
        break;
      }
      case od::json_type::number: {
        od::number_type nt;
        if (auto e = v.get_number_type().get(nt)) return e;
        if (nt == od::number_type::signed_integer) {
          int64_t i;
          if (auto e = v.get_int64().get(i)) return e;
          c->token_bytes += static_cast<uint64_t>(i) & 1;
        } else {
          double d;
          if (auto e = v.get_double().get(d)) return e;
          c->token_bytes += d > 0 ? 1 : 0;
        }
        break;
      }
      case od::json_type::object: {
        od::object o;
        if (auto e = v.get_object().get(o)) return e;
        if (auto e = VisitObject(o, c, depth + 1, decode)) return e;
        break;
      }
      default:
        c->token_bytes += v.raw_json_token().size();
        break;
    }
  }
  return simdjson::SUCCESS;
}

// One pass over the events from `pos` to `close` in windows; false (said on stderr) when a window
// does not parse.
bool Pass(const std::string& all, const std::string& path, size_t pos, size_t close, size_t window,
          bool decode, Counts* counts, double* seconds) {
  od::parser parser;
  std::string buffer;
  while (pos < close) {
    size_t end = close;
    if (close - pos > window) {
      end = LastEventEnd(all.data(), pos, pos + window);
      if (end == 0) end = close;  // one event longer than a window: take the rest
    }
    buffer.assign(1, '[');
    buffer.append(all, pos, end - pos);
    buffer.push_back(']');
    const size_t len = buffer.size();
    buffer.append(simdjson::SIMDJSON_PADDING, ' ');
    const auto p0 = Clock::now();
    od::document doc;
    od::array arr;
    simdjson::error_code e = parser.iterate(buffer.data(), len, buffer.size()).get(doc);
    if (!e) e = doc.get_array().get(arr);
    if (!e) {
      for (auto item : arr) {
        od::object obj;
        if ((e = std::move(item).get_object().get(obj))) break;
        ++counts->events;
        if ((e = VisitObject(obj, counts, 0, decode))) break;
      }
    }
    *seconds += Seconds(p0, Clock::now());
    if (e) {
      std::fprintf(stderr, "gpuscope_ceiling: %s: the window at byte %zu did not parse (%s)\n",
                   path.c_str(), pos, simdjson::error_message(e));
      return false;
    }
    pos = end;
    while (pos < close && (IsSpace(all[pos]) || all[pos] == ',')) ++pos;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpuscope_ceiling FILE [--window BYTES]\n");
    return 2;
  }
  const std::string path = argv[1];
  size_t window = size_t{4} << 20;
  if (argc >= 4 && std::string_view(argv[2]) == "--window") window = std::strtoull(argv[3], nullptr, 10);
  if (window < 4096) window = 4096;

  // 1. The read alone, into one reused buffer (plain: read(2) from the page cache; gzip: the
  //    inflate), timed. 2. The content again into memory, untimed, for the parse passes.
  size_t total = 0;
  bool gzip = false;
  double read_seconds = 0;
  std::string all;
  for (int round = 0; round < 2; ++round) {
    auto opened = gpuscope::io::OpenByteSource(path);
    if (!opened.ok()) {
      std::fprintf(stderr, "gpuscope_ceiling: %s\n", opened.status().message().c_str());
      return 2;
    }
    gpuscope::io::ByteSource& source = **opened;
    gzip = source.is_gzip();
    if (round == 1) all.reserve(total);
    std::vector<char> chunk(size_t{1} << 20);
    const auto t0 = Clock::now();
    while (true) {
      auto got = source.Read(chunk.data(), chunk.size());
      if (!got.ok()) {
        std::fprintf(stderr, "gpuscope_ceiling: %s\n", got.status().message().c_str());
        return 2;
      }
      if (*got == 0) break;
      if (round == 0)
        total += *got;
      else
        all.append(chunk.data(), *got);
    }
    if (round == 0) read_seconds = Seconds(t0, Clock::now());
  }

  const size_t key = all.find("\"traceEvents\"");
  const size_t open = key == std::string::npos ? all.find('[') : all.find('[', key);
  if (open == std::string::npos) {
    std::fprintf(stderr, "gpuscope_ceiling: %s: no traceEvents array\n", path.c_str());
    return 2;
  }
  size_t pos = open + 1;
  while (pos < all.size() && IsSpace(all[pos])) ++pos;
  // The array's closing ']': the last one in the file (members after traceEvents are small).
  const size_t close = all.rfind(']');
  if (close == std::string::npos || close < pos) {
    std::fprintf(stderr, "gpuscope_ceiling: %s: traceEvents is not closed\n", path.c_str());
    return 2;
  }

  double token_seconds = 0, parse_seconds = 0, document_seconds = 0;
  Counts tokens, counts, document;
  if (!Pass(all, path, pos, close, window, false, &tokens, &token_seconds) ||
      !Pass(all, path, pos, close, window, true, &counts, &parse_seconds) ||
      !Pass(all, path, pos, close, kDocumentWindow, false, &document, &document_seconds))
    return 1;
  const double gb = static_cast<double>(all.size()) / 1e9;
  std::printf(
      "ceiling: json_bytes=%zu events=%llu fields=%llu read_seconds=%.3f read_GBps=%.2f "
      "tokens_seconds=%.3f tokens_GBps=%.2f parse_seconds=%.3f parse_GBps=%.2f "
      "document_seconds=%.3f document_GBps=%.2f gzip=%d checksum=%llu\n",
      all.size(), static_cast<unsigned long long>(counts.events),
      static_cast<unsigned long long>(counts.fields), read_seconds, gb / read_seconds,
      token_seconds, gb / token_seconds, parse_seconds, gb / parse_seconds, document_seconds,
      gb / document_seconds, gzip ? 1 : 0,
      static_cast<unsigned long long>(counts.token_bytes + tokens.token_bytes +
                                      document.token_bytes));
  return 0;
}
