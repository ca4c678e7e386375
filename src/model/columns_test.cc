#include "model/columns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "model/dedup.h"
#include "model/merge.h"

namespace gpuscope::model {
namespace {

// Each Columns() entry is a distinct member of its table (the build checks that they cover the
// table's bytes; a member listed twice would leave another out, or fail that check).
template <typename Table>
void ExpectDistinctMembers(const char* name) {
  Table table;
  std::set<const void*> seen;
  size_t n = 0;
  ForEachColumn(table, [&](auto column) {
    const void* at = &column.values;
    EXPECT_GE(static_cast<const char*>(at), reinterpret_cast<const char*>(&table)) << name;
    EXPECT_LT(static_cast<const char*>(at), reinterpret_cast<const char*>(&table + 1)) << name;
    seen.insert(at);
    ++n;
  });
  EXPECT_EQ(seen.size(), n) << name << ": a column is listed twice";
}

TEST(Columns, ListEveryMemberOnce) {
  ExpectDistinctMembers<GpuActivityTable>("gpu");
  ExpectDistinctMembers<RuntimeCallTable>("runtime");
  ExpectDistinctMembers<CpuOpTable>("cpu");
  ExpectDistinctMembers<MemoryEventTable>("memory");
  ExpectDistinctMembers<CounterTable>("counters");
  ExpectDistinctMembers<FlowTable>("flows");
  ExpectDistinctMembers<InstantTable>("instants");
}

// One row of default values in every column of `table` (a sparse column left empty).
template <typename Table>
void AddRow(Table& table) {
  ForEachColumn(table, [](auto column) {
    if constexpr (decltype(column)::role != ColumnRole::kSparseName) column.values.push_back({});
  });
}

TEST(Columns, MisalignedColumnsNamesTheShortColumnAndTheBadIndex) {
  Trace t;
  AddRow(t.gpu);
  AddRow(t.gpu);
  AddRow(t.cpu);
  AddRow(t.flows);
  EXPECT_EQ(MisalignedColumns(t), "");
  t.gpu.launch.pop_back();  // the 11th column
  EXPECT_EQ(MisalignedColumns(t), "gpu: column 10 has 1 rows of 2");
  t.gpu.launch.push_back(-1);
  t.cpu.input_dims.assign(2, kEmptyString);  // a sparse column: none or one per row
  EXPECT_EQ(MisalignedColumns(t), "cpu: column 9 has 2 rows of 1");
  t.cpu.input_dims.assign(1, kEmptyString);
  EXPECT_EQ(MisalignedColumns(t), "");
  t.collectives.push_back({});
  t.collectives.back().gpu_index = 2;
  EXPECT_EQ(MisalignedColumns(t), "collectives: entry 0 names GPU row 2 of 2");
  t.collectives.back().gpu_index = 1;
  t.sync_waits.push_back({.gpu_index = 5});
  EXPECT_EQ(MisalignedColumns(t), "sync_waits: entry 0 names GPU row 5 of 2");
}

// Merging remaps names and string-encoded ids, pads a sparse column the other side lacks, and
// keeps every table aligned; TableBytes counts the columns of every table.
TEST(Columns, AppendTraceRemapsNamesAndPadsSparseColumns) {
  Trace a, b;
  AddRow(a.cpu);
  a.cpu.name[0] = a.strings.Intern("aten::mm");
  AddRow(b.cpu);
  AddRow(b.cpu);
  b.strings.Intern("unused");  // b's ids differ from a's
  b.cpu.name[1] = b.strings.Intern("aten::add");
  b.cpu.pid = TraceIdColumn();  // instead of AddRow's two zeros
  b.cpu.pid.push_back(7);
  b.cpu.pid.push_back(TraceIdOfString(b.strings.Intern("stream x")));
  b.cpu.input_dims = {b.strings.Intern("[[2, 3]]"), kEmptyString};
  AddRow(b.counters);
  b.counters.series[0] = b.strings.Intern("GPU 0");
  const size_t before = a.TableBytes();
  AppendTrace(&a, std::move(b));
  EXPECT_EQ(MisalignedColumns(a), "");
  ASSERT_EQ(a.cpu.size(), 3u);
  EXPECT_EQ(a.Str(a.cpu.name[0]), "aten::mm");
  EXPECT_EQ(a.Str(a.cpu.name[2]), "aten::add");
  EXPECT_EQ(a.cpu.pid[1], 7);
  ASSERT_TRUE(IsStringTraceId(a.cpu.pid[2]));
  EXPECT_EQ(a.Str(StringOfTraceId(a.cpu.pid[2])), "stream x");
  ASSERT_EQ(a.cpu.input_dims.size(), 3u);
  EXPECT_EQ(a.cpu.input_dims[0], kEmptyString);
  EXPECT_EQ(a.Str(a.cpu.input_dims[1]), "[[2, 3]]");
  EXPECT_EQ(a.Str(a.counters.series[0]), "GPU 0");
  EXPECT_GT(a.TableBytes(), before);
}

// Two CPU ops equal in every column but record_shapes' inputs are two ops, not a duplicate;
// equal there too, one is removed from every column, the sparse one included.
TEST(Columns, DuplicateRemovalComparesEverySparseColumn) {
  Trace t;
  for (int i = 0; i < 3; ++i) AddRow(t.cpu);
  t.cpu.input_dims = {t.strings.Intern("[[2]]"), t.strings.Intern("[[3]]"),
                      t.strings.Intern("[[2]]")};
  const DuplicateCounts removed = RemoveDuplicateEvents(&t);
  EXPECT_EQ(removed.cpu, 1u);
  EXPECT_EQ(MisalignedColumns(t), "");
  ASSERT_EQ(t.cpu.size(), 2u);
  EXPECT_EQ(t.Str(t.cpu.input_dims[0]), "[[2]]");
  EXPECT_EQ(t.Str(t.cpu.input_dims[1]), "[[3]]");
}

// Floats compare by their bits, not by ==: 0.0 and -0.0 are two values as read, so the rows
// differ; NaN equals the same NaN, so a row holding one is still a duplicate of its copy.
TEST(Columns, DuplicateRemovalComparesFloatsByTheirBits) {
  Trace t;
  for (int i = 0; i < 4; ++i) AddRow(t.gpu);
  t.gpu.blocks_per_sm = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::quiet_NaN()};
  const DuplicateCounts removed = RemoveDuplicateEvents(&t);
  EXPECT_EQ(removed.gpu, 1u);
  ASSERT_EQ(t.gpu.size(), 3u);
  EXPECT_TRUE(std::signbit(t.gpu.blocks_per_sm[1]));
  EXPECT_TRUE(std::isnan(t.gpu.blocks_per_sm[2]));
  EXPECT_EQ(MisalignedColumns(t), "");
}

}  // namespace
}  // namespace gpuscope::model
