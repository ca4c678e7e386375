// Golden sections: each file in tests/golden/sections holds a command, its inputs (paths in the
// checkout: the bundled example and the real traces vendored in tests/data, so every clone runs
// them), the key path of one section of the document it prints, and that section as it printed
// it. The test runs every file's command and compares that section alone, so a change shows up
// in the file of the section it changed. The file is rewritten from the command's output by
// `GPUSCOPE_REBASELINE=1 ctest -R Golden` (golden.h), its command, inputs and section kept.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "golden.h"
#include "render/json_writer.h"
#include "test_util.h"

namespace gpuscope {
namespace {

std::string SectionsDir() { return testing::GoldenDir() + "/sections"; }

struct SectionCase {
  std::vector<std::string> command;  // arguments; "{0}", "{1}": the inputs' paths
  std::vector<std::string> inputs;   // relative to the checkout
  std::string section;               // section keys from the document's top: "rank_0/findings"
};

// The case a golden file describes; a failure names what is missing.
bool ReadCase(const std::string& path, SectionCase* c) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(path).get(doc) != simdjson::SUCCESS) {
    ADD_FAILURE() << path << ": not JSON";
    return false;
  }
  simdjson::dom::array command, inputs;
  std::string_view section;
  if (doc["command"].get(command) || doc["inputs"].get(inputs) || doc["section"].get(section)) {
    ADD_FAILURE() << path << ": expected \"command\" (array of strings), \"inputs\" (array of "
                  << "paths in the checkout) and \"section\" (keys joined by '/')";
    return false;
  }
  for (simdjson::dom::element e : command) c->command.emplace_back(e.get_string().value());
  for (simdjson::dom::element e : inputs) c->inputs.emplace_back(e.get_string().value());
  c->section = section;
  return true;
}

std::string Quoted(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// The raw text of the section at `keys` (slash-separated) of the document `json`, as printed.
bool SectionText(const std::string& json, const std::string& keys, std::string* text) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(object)) return false;
  for (size_t start = 0; start <= keys.size();) {
    const size_t end = std::min(keys.find('/', start), keys.size());
    const std::string key = keys.substr(start, end - start);
    if (object["sections"][key].get_object().get(object)) return false;
    start = end + 1;
  }
  std::string_view raw;
  if (object.raw_json().get(raw)) return false;
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n')) raw.remove_suffix(1);
  *text = raw;
  return true;
}

// `text` (a JSON value printed at some depth) re-indented to sit after a key at depth 1: every
// line after the first loses the closing line's indentation and gains two spaces.
std::string Reindented(const std::string& text) {
  const size_t last = text.rfind('\n');
  if (last == std::string::npos) return text;
  const size_t depth = text.find_first_not_of(' ', last + 1) - (last + 1);
  std::string out;
  size_t start = 0;
  for (bool first = true; start <= text.size(); first = false) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    if (!first) {
      const size_t strip = std::min(depth, line.find_first_not_of(' '));
      line.remove_prefix(std::min(strip, line.size()));
      out += "\n  ";
    }
    out += line;
    start = end + 1;
  }
  return out;
}

std::string StringArray(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    render::JsonWriter::AppendEscaped(&out, v[i]);
  }
  return out + "]";
}

// The golden file's text for `c` and the section as the command prints it now.
std::string GoldenText(const SectionCase& c, const std::string& section_text) {
  std::string out = "{\n  \"command\": " + StringArray(c.command) + ",\n  \"inputs\": " +
                    StringArray(c.inputs) + ",\n  \"section\": ";
  render::JsonWriter::AppendEscaped(&out, c.section);
  return out + ",\n  \"expected\": " + Reindented(section_text) + "\n}\n";
}

void CheckSection(const std::string& golden_path) {
  SCOPED_TRACE(golden_path);
  SectionCase c;
  if (!ReadCase(golden_path, &c)) return;
  std::vector<testing::GoldenInput> inputs;
  for (const std::string& in : c.inputs)
    inputs.push_back({std::string(GPUSCOPE_SOURCE_DIR) + "/" + in, in});
  std::string args;
  for (std::string arg : c.command) {
    for (size_t i = 0; i < inputs.size(); ++i)
      arg = testing::ReplaceAll(arg, "{" + std::to_string(i) + "}", inputs[i].path);
    args += (args.empty() ? "" : " ") + Quoted(arg);
  }
  const std::string out = testing::RunForGolden(args, inputs);
  if (out.empty()) return;
  std::string section;
  if (!SectionText(out, c.section, &section)) {
    ADD_FAILURE() << "the output of gpuscope " << args << " has no section " << c.section;
    return;
  }
  testing::ExpectGolden(GoldenText(c, section), golden_path);
}

TEST(GoldenSections, EverySectionFileMatchesItsCommandsOutput) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(SectionsDir()))
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  // Fourteen files: every section of a rank in analyze's document (several traces, each where
  // its section has something to say), a diff's rank pair and a plan's working. Fewer means one
  // was lost.
  ASSERT_GE(files.size(), 14u) << SectionsDir();
  for (const std::string& f : files) CheckSection(f);
}

// The machinery itself: a section is found by its key path and printed as the command printed
// it, re-indented; a missing key is an error, not an empty section.
TEST(GoldenSections, SectionTextIsTheSectionAsPrinted) {
  const std::string doc =
      "{\n  \"sections\": {\n    \"a\": {\n      \"sections\": {\n        \"b\": {\n"
      "          \"title\": \"B\",\n          \"items\": {\n            \"x\": 1\n          }\n"
      "        }\n      }\n    }\n  }\n}\n";
  std::string text;
  ASSERT_TRUE(SectionText(doc, "a/b", &text));
  EXPECT_EQ(text,
            "{\n          \"title\": \"B\",\n          \"items\": {\n            \"x\": 1\n"
            "          }\n        }");
  EXPECT_EQ(Reindented(text), "{\n    \"title\": \"B\",\n    \"items\": {\n      \"x\": 1\n    }\n  }");
  EXPECT_FALSE(SectionText(doc, "a/c", &text));
  EXPECT_FALSE(SectionText(doc, "b", &text));
  EXPECT_EQ(GoldenText({{"analyze", "--json", "{0}"}, {"examples/x.json"}, "a/b"}, text),
            "{\n  \"command\": [\"analyze\", \"--json\", \"{0}\"],\n  \"inputs\": "
            "[\"examples/x.json\"],\n  \"section\": \"a/b\",\n  \"expected\": {\n    \"title\": "
            "\"B\",\n    \"items\": {\n      \"x\": 1\n    }\n  }\n}\n");
}

}  // namespace
}  // namespace gpuscope
