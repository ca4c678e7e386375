#include "ingest/torch_snapshot/pickle.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace gpuscope::ingest::pickle {

namespace {

struct OpInfo {
  uint8_t op;
  const char* name;
};

// Every opcode of protocols 0–5 (Lib/pickletools.py), for messages.
constexpr OpInfo kOpcodes[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name, size_t max_string)
      : in_(bytes), name_(name), max_string_(max_string) {}

  Result<Value> Run();

 private:
  // Run's opcode groups (each returns on an error; a STOP or a refusal stays in Run).
  Status Scalar(size_t at, uint8_t op, const char* name);
  Status Containers(size_t at, uint8_t op, const char* name, std::vector<uint32_t>& items);
  Status MemoOp(size_t at, uint8_t op, const char* name);
  Status Refuse(size_t at, uint8_t op, const char* name) const;

  Status Error(size_t at, const std::string& what, const std::string& hint) const {
    return Status::InputError(name_, at, what, hint);
  }
  Status Truncated(size_t at, const char* op) const {
    return Error(at,
                 std::string("the pickle ends inside opcode ") + op + " (" +
                     std::to_string(in_.size()) + " bytes in all)",
                 "the file is cut short: copy it again, or dump the snapshot again");
  }
  bool Need(size_t n) const { return in_.size() - pos_ >= n; }
  // Values above the innermost open MARK: all an opcode may pop (as in Python's unpickler, where
  // a MARK starts a fresh stack).
  size_t Visible() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  uint64_t Le(size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{static_cast<uint8_t>(in_[pos_ + k])} << (8 * k);
    pos_ += n;
    return v;
  }
  uint32_t NewNode(Kind kind) {
    nodes_.emplace_back();
    nodes_.back().kind = kind;
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  uint32_t NewString(Kind kind, std::string_view s) {
    const uint32_t n = NewNode(kind);
    nodes_[n].i = static_cast<int64_t>(strings_.size());
    strings_.emplace_back(s);
    return n;
  }
  uint32_t NewInt(int64_t v) {
    const uint32_t n = NewNode(Kind::kInt);
    nodes_[n].i = v;
    return n;
  }
  // Items from the last mark to the top, popped with the mark.
  Status PopMark(size_t at, const char* op, std::vector<uint32_t>* items) {
    if (marks_.empty())
      return Error(at, std::string("pickle opcode ") + op + " without a MARK before it",
                   "the pickle is damaged");
    const size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size())  // cannot happen: no opcode pops below the innermost mark (Visible)
      return Error(at, "pickle stack below its MARK", "the pickle is damaged");
    items->assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return Status::Ok();
  }
  Status Push(size_t at, uint32_t n) {
    if (stack_.size() >= kMaxStack)
      return Error(at, "more than " + std::to_string(kMaxStack) + " values on the pickle stack",
                   "a memory snapshot never needs that many; refusing to go on");
    if (nodes_.size() > kMaxNodes)
      return Error(at, "more than " + std::to_string(kMaxNodes) + " values in the pickle",
                   "refusing to go on");
    stack_.push_back(n);
    return Status::Ok();
  }
  // Adds `children` to container `parent`, keeping its depth.
  Status AddChildren(size_t at, uint32_t parent, const std::vector<uint32_t>& children) {
    uint16_t depth = nodes_[parent].depth;
    for (uint32_t c : children) depth = std::max<uint16_t>(depth, nodes_[c].depth + 1);
    if (depth > kMaxDepth)
      return Error(at, "containers nested more than " + std::to_string(kMaxDepth) + " deep",
                   "a memory snapshot nests a few levels; refusing a nesting bomb");
    nodes_[parent].depth = depth;
    auto& items = nodes_[parent].items;
    items.insert(items.end(), children.begin(), children.end());
    return Status::Ok();
  }
  Status Container(size_t at, Kind kind, const std::vector<uint32_t>& children, uint32_t* out) {
    *out = NewNode(kind);
    nodes_[*out].depth = 1;
    return AddChildren(at, *out, children);
  }
  Status Memo(size_t at, uint64_t key) {
    if (Visible() == 0) return Error(at, "pickle memo PUT with an empty stack", "damaged");
    if (memo_.size() >= kMaxNodes) return Error(at, "too many memo entries", "refusing to go on");
    memo_[key] = stack_.back();
    return Status::Ok();
  }
  Status Get(size_t at, uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end())
      return Error(at, "pickle memo GET of key " + std::to_string(key) + " that was never PUT",
                   "the pickle is damaged");
    return Push(at, it->second);
  }
  // A text line (protocol 0 INT/LONG/FLOAT/PUT/GET): the bytes up to '\n'.
  Status Line(size_t at, const char* op, std::string_view* line) {
    const size_t nl = in_.find('\n', pos_);
    if (nl == std::string_view::npos) return Truncated(at, op);
    *line = in_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return Status::Ok();
  }
  Status Decimal(size_t at, const char* op, std::string_view text, int64_t* v) {
    if (!text.empty() && text.back() == 'L') text.remove_suffix(1);
    bool neg = false;
    size_t k = 0;
    if (k < text.size() && (text[k] == '-' || text[k] == '+')) neg = text[k++] == '-';
    if (k == text.size() || text.size() - k > 18)
      return Error(at, std::string("pickle opcode ") + op + ": not a number this reader takes",
                   "the pickle is damaged");
    int64_t r = 0;
    for (; k < text.size(); ++k) {
      if (text[k] < '0' || text[k] > '9')
        return Error(at, std::string("pickle opcode ") + op + ": not a decimal number",
                     "the pickle is damaged");
      r = r * 10 + (text[k] - '0');
    }
    *v = neg ? -r : r;
    return Status::Ok();
  }
  Status Long(size_t at, size_t n) {
    // Little-endian two's complement of n bytes.
    const auto* b = reinterpret_cast<const uint8_t*>(in_.data() + pos_);
    const uint32_t node = NewNode(Kind::kInt);
    const bool neg = n > 0 && (b[n - 1] & 0x80) != 0;
    if (n <= 8) {
      uint64_t v = 0;
      for (size_t k = 0; k < n; ++k) v |= uint64_t{b[k]} << (8 * k);
      if (neg && n < 8) v |= ~uint64_t{0} << (8 * n);
      nodes_[node].i = static_cast<int64_t>(v);
    } else {
      double v = 0;
      for (size_t k = n; k-- > 0;) v = v * 256 + (neg ? static_cast<uint8_t>(~b[k]) : b[k]);
      nodes_[node].big = true;
      nodes_[node].f = neg ? -(v + 1) : v;
    }
    pos_ += n;
    return Push(at, node);
  }
  Status Str(size_t at, const char* op, size_t len_bytes, Kind kind) {
    if (!Need(len_bytes)) return Truncated(at, op);
    const uint64_t len = Le(len_bytes);
    if (len > in_.size() - pos_) return Truncated(at, op);
    if (len > max_string_)
      return Error(at,
                   std::string("pickle opcode ") + op + ": a string of " + std::to_string(len) +
                       " bytes, over the cap of " + std::to_string(max_string_),
                   "refusing one value that large");
    const uint32_t n = NewString(kind, in_.substr(pos_, len));
    pos_ += len;
    return Push(at, n);
  }

  std::string_view in_;
  const std::string& name_;
  size_t max_string_;
  size_t pos_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::string> strings_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

// A number, bool or None pushed (N, NEWTRUE/NEWFALSE, BININT*, LONG*, INT, LONG, FLOAT, BINFLOAT).
Status Reader::Scalar(size_t at, uint8_t op, const char* name) {
  switch (op) {
    case 'N':
      return Push(at, NewNode(Kind::kNone));
    case 0x88:
    case 0x89: {
      const uint32_t n = NewNode(Kind::kBool);
      nodes_[n].i = op == 0x88;
      return Push(at, n);
    }
    case 'J':
      if (!Need(4)) return Truncated(at, name);
      return Push(at, NewInt(static_cast<int32_t>(static_cast<uint32_t>(Le(4)))));
    case 'K':
      if (!Need(1)) return Truncated(at, name);
      return Push(at, NewInt(static_cast<int64_t>(Le(1))));
    case 'M':
      if (!Need(2)) return Truncated(at, name);
      return Push(at, NewInt(static_cast<int64_t>(Le(2))));
    case 0x8a:    // LONG1
    case 0x8b: {  // LONG4
      const size_t lb = op == 0x8a ? 1 : 4;
      if (!Need(lb)) return Truncated(at, name);
      const uint64_t n = Le(lb);
      if (n > in_.size() - pos_) return Truncated(at, name);
      return Long(at, n);
    }
    case 'I':
    case 'L': {
      std::string_view line;
      GPUSCOPE_RETURN_IF_ERROR(Line(at, name, &line));
      int64_t v = 0;
      uint32_t n;
      if (op == 'I' && (line == "00" || line == "01")) {
        n = NewNode(Kind::kBool);
        nodes_[n].i = line == "01";
      } else {
        GPUSCOPE_RETURN_IF_ERROR(Decimal(at, name, line, &v));
        n = NewInt(v);
      }
      return Push(at, n);
    }
    case 'F': {
      std::string_view line;
      GPUSCOPE_RETURN_IF_ERROR(Line(at, name, &line));
      const std::string text(line.substr(0, 64));
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size())
        return Error(at, "pickle opcode FLOAT: not a number", "the pickle is damaged");
      const uint32_t n = NewNode(Kind::kFloat);
      nodes_[n].f = d;
      return Push(at, n);
    }
    case 'G': {  // BINFLOAT: big-endian double
      if (!Need(8)) return Truncated(at, name);
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(in_[pos_ + k]);
      pos_ += 8;
      double d;
      std::memcpy(&d, &bits, 8);
      const uint32_t n = NewNode(Kind::kFloat);
      nodes_[n].f = d;
      return Push(at, n);
    }
  }
  return Status::Ok();
}

// A container made, filled or extended (EMPTY_*, LIST/TUPLE/DICT/FROZENSET from the mark,
// TUPLE1–3, APPEND(S), SETITEM(S), ADDITEMS); `items` is scratch space.
Status Reader::Containers(size_t at, uint8_t op, const char* name, std::vector<uint32_t>& items) {
  switch (op) {
    case ']':
    case ')':
    case '}':
    case 0x8f: {
      const Kind k = op == ']'   ? Kind::kList
                     : op == ')' ? Kind::kTuple
                     : op == '}' ? Kind::kDict
                                 : Kind::kSet;
      const uint32_t n = NewNode(k);
      nodes_[n].depth = 1;
      return Push(at, n);
    }
    case 'l':
    case 't':
    case 'd':
    case 0x91: {  // LIST, TUPLE, DICT, FROZENSET from the mark
      GPUSCOPE_RETURN_IF_ERROR(PopMark(at, name, &items));
      const Kind k = op == 'l'   ? Kind::kList
                     : op == 't' ? Kind::kTuple
                     : op == 'd' ? Kind::kDict
                                 : Kind::kSet;
      if (k == Kind::kDict && items.size() % 2 != 0)
        return Error(at, "pickle DICT with an odd number of items", "the pickle is damaged");
      uint32_t n;
      GPUSCOPE_RETURN_IF_ERROR(Container(at, k, items, &n));
      return Push(at, n);
    }
    case 0x85:
    case 0x86:
    case 0x87: {
      const size_t count = op - 0x84u;
      if (Visible() < count)
        return Error(at, std::string("pickle opcode ") + name + " with too few values on the stack",
                     "the pickle is damaged");
      items.assign(stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
      stack_.resize(stack_.size() - count);
      uint32_t n;
      GPUSCOPE_RETURN_IF_ERROR(Container(at, Kind::kTuple, items, &n));
      return Push(at, n);
    }
    case 'a':    // APPEND
    case 's': {  // SETITEM
      const size_t count = op == 'a' ? 1 : 2;
      if (Visible() < count + 1)
        return Error(at, std::string("pickle opcode ") + name + " with too few values on the stack",
                     "the pickle is damaged");
      items.assign(stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
      stack_.resize(stack_.size() - count);
      const uint32_t target = stack_.back();
      const Kind want = op == 'a' ? Kind::kList : Kind::kDict;
      if (nodes_[target].kind != want)
        return Error(at,
                     std::string("pickle opcode ") + name + " on a value that is not a " +
                         (op == 'a' ? "list" : "dict"),
                     "the pickle is damaged");
      return AddChildren(at, target, items);
    }
    case 'e':     // APPENDS
    case 'u':     // SETITEMS
    case 0x90: {  // ADDITEMS
      GPUSCOPE_RETURN_IF_ERROR(PopMark(at, name, &items));
      if (Visible() == 0)
        return Error(at, std::string("pickle opcode ") + name + " without a container",
                     "the pickle is damaged");
      const uint32_t target = stack_.back();
      const Kind want = op == 'e' ? Kind::kList : op == 'u' ? Kind::kDict : Kind::kSet;
      if (nodes_[target].kind != want || (op == 'u' && items.size() % 2 != 0))
        return Error(at, std::string("pickle opcode ") + name + " on the wrong kind of value",
                     "the pickle is damaged");
      return AddChildren(at, target, items);
    }
  }
  return Status::Ok();
}

// The memo: MEMOIZE, (BIN|LONG_BIN)PUT, (BIN|LONG_BIN)GET, PUT, GET.
Status Reader::MemoOp(size_t at, uint8_t op, const char* name) {
  switch (op) {
    case 0x94:  // MEMOIZE
      return Memo(at, memo_.size());
    case 'q':
    case 'r': {
      const size_t lb = op == 'q' ? 1 : 4;
      if (!Need(lb)) return Truncated(at, name);
      return Memo(at, Le(lb));
    }
    case 'h':
    case 'j': {
      const size_t lb = op == 'h' ? 1 : 4;
      if (!Need(lb)) return Truncated(at, name);
      return Get(at, Le(lb));
    }
    case 'p':
    case 'g': {
      std::string_view line;
      GPUSCOPE_RETURN_IF_ERROR(Line(at, name, &line));
      int64_t key = 0;
      GPUSCOPE_RETURN_IF_ERROR(Decimal(at, name, line, &key));
      return op == 'p' ? Memo(at, static_cast<uint64_t>(key)) : Get(at, static_cast<uint64_t>(key));
    }
  }
  return Status::Ok();
}

// An opcode this reader does not run: one that builds objects (imports or calls code), a
// protocol-0 quoted string, or a byte that is no opcode. Always an error.
Status Reader::Refuse(size_t at, uint8_t op, const char* name) const {
  switch (op) {
    case 'c':
    case 0x93:
    case 'R':
    case 'b':
    case 'i':
    case 'o':
    case 0x81:
    case 0x92:
    case 'P':
    case 'Q':
    case 0x82:
    case 0x83:
    case 0x84:
    case 0x97:
    case 0x98:
      return Error(at,
                   std::string("pickle opcode ") + name +
                       ": snapshots are plain data; refusing to build objects",
                   "gpuscope reads torch.cuda.memory._dump_snapshot files, which hold only "
                   "dicts, lists, strings and numbers; this pickle imports or calls code (a "
                   "torch.save file, another program's pickle?) and is never executed");
    case 'S':
    case 'V':
      return Error(
          at, std::string("pickle opcode ") + name + " (a protocol-0 quoted string) is not read",
          "dump the snapshot with protocol 2 or later, as torch does");
    default:
      return Error(
          at,
          "byte 0x" +
              [op] {
                const char* hex = "0123456789abcdef";
                return std::string{hex[op >> 4], hex[op & 15]};
              }() +
              " is no pickle opcode",
          "this is not a pickle, or it is damaged here");
  }
}

Result<Value> Reader::Run() {
  std::vector<uint32_t> items;
  while (true) {
    const size_t at = pos_;
    if (pos_ >= in_.size())
      return Error(at,
                   "the pickle ends without its STOP opcode (" + std::to_string(in_.size()) +
                       " bytes in all)",
                   "the file is cut short: copy it again, or dump the snapshot again");
    const uint8_t op = static_cast<uint8_t>(in_[pos_++]);
    const char* name = OpcodeName(op);
    auto need = [&](size_t n) { return Need(n); };
    switch (op) {
      case 0x80:  // PROTO
        if (!need(1)) return Truncated(at, name);
        if (static_cast<uint8_t>(in_[pos_]) > 5)
          return Error(at,
                       "pickle protocol " + std::to_string(static_cast<uint8_t>(in_[pos_])) +
                           " (this reader knows 0–5)",
                       "dump the snapshot with a Python that writes protocol 5 or lower");
        ++pos_;
        break;
      case 0x95:  // FRAME: a length hint only (a cut inside it is named at the opcode it cuts)
        if (!need(8)) return Truncated(at, name);
        pos_ += 8;
        break;
      case '.': {  // STOP
        if (stack_.size() != 1 || !marks_.empty())
          return Error(at,
                       "pickle STOP with " + std::to_string(stack_.size()) +
                           " values on the stack (1 expected)",
                       "the pickle is damaged");
        Value v;
        v.root = stack_.back();
        v.nodes = std::move(nodes_);
        v.strings = std::move(strings_);
        return v;
      }
      case '(':  // MARK
        if (marks_.size() >= kMaxMarks)
          return Error(at, "more than " + std::to_string(kMaxMarks) + " open pickle MARKs",
                       "refusing a nesting bomb");
        marks_.push_back(stack_.size());
        break;
      case '0':  // POP: the top value, or the MARK when nothing is above it (as Python does)
        if (Visible() > 0) {
          stack_.pop_back();
        } else if (!marks_.empty()) {
          marks_.pop_back();
        } else {
          return Error(at, "pickle POP of an empty stack", "damaged pickle");
        }
        break;
      case '1':  // POP_MARK
        GPUSCOPE_RETURN_IF_ERROR(PopMark(at, name, &items));
        break;
      case '2':  // DUP
        if (Visible() == 0) return Error(at, "pickle DUP of an empty stack", "damaged pickle");
        GPUSCOPE_RETURN_IF_ERROR(Push(at, stack_.back()));
        break;
      case 'N':
      case 0x88:
      case 0x89:
      case 'J':
      case 'K':
      case 'M':
      case 0x8a:  // LONG1
      case 0x8b:  // LONG4
      case 'I':
      case 'L':
      case 'F':
      case 'G':  // BINFLOAT: big-endian double
        GPUSCOPE_RETURN_IF_ERROR(Scalar(at, op, name));
        break;
      case 0x8c:
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 1, Kind::kStr));
        break;
      case 'X':
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 4, Kind::kStr));
        break;
      case 0x8d:
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 8, Kind::kStr));
        break;
      case 'U':  // Python 2 str: text in a snapshot written by Python 2
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 1, Kind::kStr));
        break;
      case 'T':
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 4, Kind::kStr));
        break;
      case 'C':
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 1, Kind::kBytes));
        break;
      case 'B':
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 4, Kind::kBytes));
        break;
      case 0x8e:
      case 0x96:
        GPUSCOPE_RETURN_IF_ERROR(Str(at, name, 8, Kind::kBytes));
        break;
      case ']':
      case ')':
      case '}':
      case 0x8f:
      case 'l':
      case 't':
      case 'd':
      case 0x91:  // LIST, TUPLE, DICT, FROZENSET from the mark
      case 0x85:
      case 0x86:
      case 0x87:
      case 'a':   // APPEND
      case 's':   // SETITEM
      case 'e':   // APPENDS
      case 'u':   // SETITEMS
      case 0x90:  // ADDITEMS
        GPUSCOPE_RETURN_IF_ERROR(Containers(at, op, name, items));
        break;
      case 0x94:  // MEMOIZE
      case 'q':
      case 'r':
      case 'h':
      case 'j':
      case 'p':
      case 'g':
        GPUSCOPE_RETURN_IF_ERROR(MemoOp(at, op, name));
        break;
      default:
        return Refuse(at, op, name);
    }
  }
}

}  // namespace

const char* OpcodeName(uint8_t op) {
  for (const OpInfo& o : kOpcodes)
    if (o.op == op) return o.name;
  return nullptr;
}

int64_t Value::Get(uint32_t dict, std::string_view key) const {
  const Node& d = nodes[dict];
  if (d.kind != Kind::kDict) return -1;
  for (size_t k = 0; k + 1 < d.items.size(); k += 2)
    if (is_str(d.items[k]) && str(d.items[k]) == key) return d.items[k + 1];
  return -1;
}

Result<Value> Unpickle(std::string_view bytes, const std::string& name, size_t max_string_bytes) {
  return Reader(bytes, name, max_string_bytes).Run();
}

}  // namespace gpuscope::ingest::pickle
