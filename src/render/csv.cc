#include "render/csv.h"

#include "base/output_file.h"

#include <charconv>
#include <filesystem>
#include <map>

namespace gpuscope::render {

namespace {

std::string Quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Cell(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNull:
      return "";
    case Value::Kind::kInt:
      return std::to_string(v.i);
    case Value::Kind::kDouble: {
      char buf[32];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.d);  // shortest round trip
      return ec == std::errc() ? std::string(buf, end) : std::string();
    }
    case Value::Kind::kText:
      return Quote(v.text);
    case Value::Kind::kBool:
      return v.i != 0 ? "true" : "false";
  }
  return "";
}

struct Sheet {
  std::vector<std::string> columns;  // the first table's columns
  // Unless the table has such a column itself.
  bool add_run = true, add_rank = true, add_path = true;
  std::string body;
};

// What names a row's input: the top section's key, and a rank's run (its job's section), number
// and file (its "identity" row), so rows of several ranks and runs in one sheet stay apart.
struct Origin {
  std::string section, run, rank, path;
};

Origin OriginOf(const Section& top) {
  Origin o{top.key, "", "", ""};
  if (const Item* item = top.FindItem("identity"))
    if (const Row* r = std::get_if<Row>(item))
      for (const Field& f : r->fields) {
        if (f.key == "run") o.run = Cell(f.value);
        if (f.key == "rank") o.rank = Cell(f.value);
        if (f.key == "path") o.path = Cell(f.value);
      }
  return o;
}

void Collect(const Section& s, const Origin& top, std::map<std::string, size_t>* index,
             std::vector<std::pair<std::string, Sheet>>* sheets) {
  for (const Item& item : s.items) {
    const Table* t = std::get_if<Table>(&item);
    if (!t) continue;
    auto [it, added] = index->try_emplace(t->key, sheets->size());
    if (added) {
      Sheet sheet;
      for (const Column& c : t->columns) {
        sheet.columns.push_back(c.key);
        sheet.add_run &= c.key != "run";
        sheet.add_rank &= c.key != "rank";
        sheet.add_path &= c.key != "path";
      }
      sheets->emplace_back(t->key, std::move(sheet));
    }
    Sheet& sheet = (*sheets)[it->second].second;
    for (const std::vector<Value>& row : t->rows) {
      sheet.body += Quote(top.section);
      if (sheet.add_run) sheet.body += ',' + top.run;
      if (sheet.add_rank) sheet.body += ',' + top.rank;
      if (sheet.add_path) sheet.body += ',' + top.path;
      // By column key, so a table whose columns differ between sections still lines up.
      for (const std::string& key : sheet.columns) {
        sheet.body += ',';
        for (size_t j = 0; j < t->columns.size() && j < row.size(); ++j)
          if (t->columns[j].key == key) sheet.body += Cell(row[j]);
      }
      sheet.body += "\r\n";
    }
  }
  for (const Section& sub : s.sections) Collect(sub, top, index, sheets);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CsvTables(const Document& doc) {
  std::map<std::string, size_t> index;
  std::vector<std::pair<std::string, Sheet>> sheets;
  for (const Section& s : doc.sections) Collect(s, OriginOf(s), &index, &sheets);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [key, sheet] : sheets) {
    std::string text = "section";
    if (sheet.add_run) text += ",run";
    if (sheet.add_rank) text += ",rank";
    if (sheet.add_path) text += ",path";
    for (const std::string& c : sheet.columns) {
      text += ',';  // (not "," + Quote(c): GCC 12 warns -Wrestrict on that falsely)
      text += Quote(c);
    }
    out.emplace_back(key, text + "\r\n" + sheet.body);
  }
  return out;
}

Result<std::vector<std::string>> WriteCsvFiles(
    const std::vector<std::pair<std::string, std::string>>& tables, const std::string& dir,
    const char* option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // What this call makes, removed again if a later write fails: no half set of tables is left.
  fs::path made_folder;  // the outermost folder created, or empty
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made_folder = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return Status::Error(StatusCode::kUsage,
                         std::string(option) + " " + dir +
                             (ec ? ": cannot create the folder: " + ec.message() +
                                       " (hint: give a folder in a writable place)"
                                 : std::string(": exists and is not a folder (hint: ") + option +
                                       " takes a folder; it is made if missing)"));
  std::vector<std::string> written, created;
  for (const auto& [key, text] : tables) {
    const std::string path = (fs::path(dir) / (key + ".csv")).string();
    const bool existed = fs::exists(fs::symlink_status(path, ec));
    if (Status s = WriteOutputFile(path, text, option); !s.ok()) {
      for (const std::string& c : created) fs::remove(c, ec);
      if (!made_folder.empty()) fs::remove_all(made_folder, ec);
      return s;
    }
    if (!existed) created.push_back(path);
    written.push_back(path);
  }
  return written;
}

Result<std::vector<std::string>> WriteCsvTables(const Document& doc, const std::string& dir,
                                                const char* option) {
  return WriteCsvFiles(CsvTables(doc), dir, option);
}

}  // namespace gpuscope::render
