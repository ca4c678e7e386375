// A safe reader of the plain-data subset of Python's pickle format (protocols 0–5 opcodes for
// None, bool, int, float, str, bytes, list, tuple, dict, set; marks, memo, frames), which is all a
// torch.cuda.memory._dump_snapshot file uses. It never builds an object: any opcode that would
// import a name or call something (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
// NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4, NEXT_BUFFER, READONLY_BUFFER) is refused by name and
// byte offset. Memory is bounded by the input: every value is a node of an arena (a memo GET
// refers to the same node, it copies nothing), the stack, the marks and the nesting depth are
// capped, and a length is checked against the bytes left before anything is read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope::ingest::pickle {

inline constexpr size_t kMaxDepth = 64;               // containers inside containers
inline constexpr size_t kMaxStack = size_t{1} << 20;  // values on the stack at once
inline constexpr size_t kMaxMarks = 1024;             // open marks
inline constexpr size_t kMaxNodes = size_t{1} << 25;  // values in one file (~100 B each at most)

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict, kSet };

struct Node {
  Kind kind = Kind::kNone;
  bool big = false;             // an int beyond int64: `f` holds it approximately, `i` is 0
  uint16_t depth = 0;           // 0 for a scalar; 1 + the deepest child for a container
  int64_t i = 0;                // kInt, kBool; kStr/kBytes: index into Value::strings
  double f = 0;                 // kFloat
  std::vector<uint32_t> items;  // list/tuple/set: the items; dict: key, value, key, value, …
};

// The unpickled value: nodes[root] is the top object.
struct Value {
  std::vector<Node> nodes;
  std::vector<std::string> strings;
  uint32_t root = 0;

  const Node& at(uint32_t n) const { return nodes[n]; }
  const std::string& str(uint32_t n) const { return strings[static_cast<size_t>(nodes[n].i)]; }
  bool is_str(uint32_t n) const { return nodes[n].kind == Kind::kStr; }
  // The value of `key` in dict node `dict` (a str key), or -1.
  int64_t Get(uint32_t dict, std::string_view key) const;
};

// The name of a pickle opcode byte ("GLOBAL"), or nullptr for a byte that is no opcode.
const char* OpcodeName(uint8_t op);

// Reads one pickle from `bytes`. Errors are InputError(name, offset, …) naming the opcode.
// `max_string_bytes` caps one str/bytes value.
Result<Value> Unpickle(std::string_view bytes, const std::string& name,
                       size_t max_string_bytes = size_t{1} << 30);

}  // namespace gpuscope::ingest::pickle
