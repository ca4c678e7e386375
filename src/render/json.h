// The JSON view of a document (schema_version 2, docs/json-schema.md, docs/schema/*.json) and the
// way back: FromJson(ToJson(doc)) == AsReadBack(doc), which is doc itself unless it holds integers
// beyond 2^53 (e.g. unix-ns timestamps): those are written as doubles and read back as the
// nearest double, as every JSON consumer reads them.
#pragma once

#include <string>
#include <string_view>

#include "gpuscope/status.h"
#include "render/document.h"

namespace gpuscope::render {

std::string ToJson(const Document& doc, int indent = 2);
// `source` names the input in error messages.
Result<Document> FromJson(std::string_view json, const std::string& source);

// Integers are exact in JSON consumers (doubles, int64) only up to 2^53; larger ones are written
// as doubles with an exponent.
inline constexpr int64_t kMaxExactJsonInteger = int64_t{1} << 53;

// `doc` as FromJson(ToJson(doc)) returns it: every integer value beyond 2^53 rounded to the
// nearest double.
Document AsReadBack(Document doc);

}  // namespace gpuscope::render
