// The JSON view of a document (schema_version 2, docs/json-schema.md, docs/schema/*.json) and the
// way back: FromJson(ToJson(doc)) == doc, so a saved report renders exactly as the original.
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

}  // namespace gpuscope::render
