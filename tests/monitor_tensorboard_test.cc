// TensorBoard event files checked by an independent reader written here from the published
// format, with its own bitwise CRC32C (the writer uses a table), so a shared bug cannot hide:
//   TFRecord: uint64 length · uint32 masked_crc32c(length) · data · uint32 masked_crc32c(data),
//   masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8;
//   Event: wall_time=1 (double), step=2 (int64), file_version=3 (string), summary=5 (Summary);
//   Summary: value=1 (Value); Value: tag=1 (string), simple_value=2 (float).
// When python3 can import the protobuf runtime, a second check decodes with it (else skipped).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "monitor/tensorboard.h"
#include "monitor_test_util.h"

namespace gpuscope::monitor {
namespace {

uint32_t BitwiseCrc32c(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t LittleEndian(const std::string& s, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// A minimal protobuf reader: (field, wire type, varint or fixed value, bytes).
struct Field {
  int number;
  int wire;
  uint64_t value = 0;
  std::string bytes;
};

bool ReadVarint(const std::string& s, size_t* at, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *at < s.size(); shift += 7) {
    const unsigned char b = static_cast<unsigned char>(s[(*at)++]);
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

std::vector<Field> Decode(const std::string& s) {
  std::vector<Field> out;
  size_t at = 0;
  while (at < s.size()) {
    uint64_t key;
    if (!ReadVarint(s, &at, &key)) ADD_FAILURE() << "bad key";
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, {}};
    if (f.wire == 0) {
      ReadVarint(s, &at, &f.value);
    } else if (f.wire == 1) {
      f.value = LittleEndian(s, at, 8), at += 8;
    } else if (f.wire == 5) {
      f.value = LittleEndian(s, at, 4), at += 4;
    } else if (f.wire == 2) {
      uint64_t n;
      ReadVarint(s, &at, &n);
      f.bytes = s.substr(at, n), at += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      return out;
    }
    out.push_back(f);
  }
  EXPECT_EQ(at, s.size());
  return out;
}

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::map<std::string, float> scalars;
};

// Counts records whose length or data CRC does not match in *bad_crcs.
std::vector<Event> ReadEventFile(const std::string& bytes, int* bad_crcs) {
  std::vector<Event> events;
  *bad_crcs = 0;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_GE(bytes.size() - at, 16u);
    const std::string length_bytes = bytes.substr(at, 8);
    const uint64_t length = LittleEndian(bytes, at, 8);
    if (LittleEndian(bytes, at + 8, 4) != Mask(BitwiseCrc32c(length_bytes))) ++*bad_crcs;
    const std::string data = bytes.substr(at + 12, length);
    if (LittleEndian(bytes, at + 12 + length, 4) != Mask(BitwiseCrc32c(data))) ++*bad_crcs;
    at += 12 + length + 4;
    Event e;
    for (const Field& f : Decode(data)) {
      if (f.number == 1 && f.wire == 1) std::memcpy(&e.wall_time, &f.value, 8);
      if (f.number == 2 && f.wire == 0) e.step = static_cast<int64_t>(f.value);
      if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
      if (f.number == 5 && f.wire == 2)
        for (const Field& v : Decode(f.bytes)) {
          EXPECT_EQ(v.number, 1);
          std::string tag;
          float value = 0;
          for (const Field& x : Decode(v.bytes)) {
            if (x.number == 1) tag = x.bytes;
            if (x.number == 2 && x.wire == 5) {
              const uint32_t bits = static_cast<uint32_t>(x.value);
              std::memcpy(&value, &bits, 4);
            }
          }
          e.scalars[tag] = value;
        }
    }
    events.push_back(e);
  }
  return events;
}

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) check value of "123456789".
  EXPECT_EQ(BitwiseCrc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
  const std::string some = "gpuscope writes TensorBoard events";
  EXPECT_EQ(Crc32c(some), BitwiseCrc32c(some));
  EXPECT_EQ(MaskCrc32c(0x12345678u), Mask(0x12345678u));
}

Sample MakeSample(int64_t t_ns, double util, uint64_t mem) {
  Sample s;
  s.time_ns = t_ns;
  GpuSample g;
  g.index = 0;
  g.sm_util_pct = util;
  g.mem_used_bytes = mem;
  g.power_w = 250.5;
  s.gpus.push_back(g);
  ProcessSample main;
  main.pid = 10;
  main.ppid = 1;
  main.name = "python";
  main.cpu_pct = 99;
  main.cpu_time_ns = 5'000'000'000;
  ProcessSample worker;
  worker.pid = 11;
  worker.ppid = 10;
  worker.name = "pt_data_worker";
  worker.cpu_pct = 12.5;
  worker.cpu_time_ns = 1'000'000'000;
  s.processes = {main, worker};
  return s;
}

TEST(TensorBoard, IndependentReaderSeesValuesAndValidCrcs) {
  const std::string dir = testing::TempPath("tb");
  std::filesystem::remove_all(dir);
  auto w = TensorBoardWriter::Open(dir);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const std::string path = (*w)->path();
  EXPECT_NE(path.find("events.out.tfevents."), std::string::npos);
  (*w)->Write(MakeSample(1'700'000'000'000'000'000, 43, 22'000'000'000));
  (*w)->Write(MakeSample(1'700'000'000'100'000'000, 97, 23'000'000'000));
  ASSERT_TRUE((*w)->Finish().ok());

  int bad_crcs = -1;
  const auto events = ReadEventFile(testing::ReadFile(path), &bad_crcs);
  EXPECT_EQ(bad_crcs, 0);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].step, 0);
  EXPECT_EQ(events[2].step, 1);
  EXPECT_DOUBLE_EQ(events[1].wall_time, 1'700'000'000.0);
  EXPECT_DOUBLE_EQ(events[2].wall_time, 1'700'000'000.1);
  EXPECT_FLOAT_EQ(events[1].scalars.at("gpu0/sm_util_pct"), 43.0f);
  EXPECT_FLOAT_EQ(events[2].scalars.at("gpu0/sm_util_pct"), 97.0f);
  EXPECT_FLOAT_EQ(events[1].scalars.at("gpu0/memory_used_GB"), 22.0f);
  EXPECT_FLOAT_EQ(events[1].scalars.at("gpu0/power_W"), 250.5f);
  EXPECT_FLOAT_EQ(events[1].scalars.at("cpu/main_process_pct"), 99.0f);
  EXPECT_FLOAT_EQ(events[1].scalars.at("cpu/workers_pct"), 12.5f);
  EXPECT_FLOAT_EQ(events[1].scalars.at("cpu/tree_pct"), 111.5f);

  // A corrupted byte must be caught by the reader's CRC check (the test of the test).
  std::string bytes = testing::ReadFile(path);
  bytes[bytes.size() - 10] ^= 0x40;  // inside the last event's tag string
  ReadEventFile(bytes, &bad_crcs);
  EXPECT_EQ(bad_crcs, 1);
}

TEST(TensorBoard, PythonProtobufReaderIfAvailable) {
  if (std::system("python3 -c 'import google.protobuf' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-protobuf not installed (apt-get install python3-protobuf)";
  const std::string dir = testing::TempPath("tb_py");
  std::filesystem::remove_all(dir);
  auto w = TensorBoardWriter::Open(dir);
  ASSERT_TRUE(w.ok());
  (*w)->Write(MakeSample(1'700'000'000'000'000'000, 43, 22'000'000'000));
  ASSERT_TRUE((*w)->Finish().ok());
  // Builds the Event/Summary message types at run time from their published field numbers.
  const std::string script = testing::TempPath("read_events.py");
  testing::WriteFile(script, R"(import struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
f = descriptor_pb2.FileDescriptorProto(name="ev.proto", package="t", syntax="proto3")
v = f.message_type.add(name="Value")
v.field.add(name="tag", number=1, type=9, label=1)
v.field.add(name="simple_value", number=2, type=2, label=1)
s = f.message_type.add(name="Summary")
s.field.add(name="value", number=1, type=11, label=3, type_name=".t.Value")
e = f.message_type.add(name="Event")
e.field.add(name="wall_time", number=1, type=1, label=1)
e.field.add(name="step", number=2, type=3, label=1)
e.field.add(name="file_version", number=3, type=9, label=1)
e.field.add(name="summary", number=5, type=11, label=1, type_name=".t.Summary")
pool = descriptor_pool.DescriptorPool(); pool.Add(f)
desc = pool.FindMessageTypeByName("t.Event")
Event = message_factory.GetMessageClass(desc) if hasattr(message_factory, "GetMessageClass") else message_factory.MessageFactory(pool).GetPrototype(desc)
data = open(sys.argv[1], "rb").read(); at = 0
while at < len(data):
    (n,) = struct.unpack_from("<Q", data, at); ev = Event(); ev.ParseFromString(data[at + 12:at + 12 + n]); at += 16 + n
    for val in ev.summary.value: print(ev.step, val.tag, round(val.simple_value, 3))
)");
  const std::string out = testing::TempPath("read_events.out");
  ASSERT_EQ(std::system(("python3 " + script + " " + (*w)->path() + " >" + out).c_str()), 0);
  const std::string text = testing::ReadFile(out);
  EXPECT_NE(text.find("0 gpu0/sm_util_pct 43.0"), std::string::npos) << text;
  EXPECT_NE(text.find("0 gpu0/power_W 250.5"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::monitor
