#include "model/columns.h"

#include <fmt/format.h>

namespace gpuscope::model {

namespace {

// A table's Columns() lists every member: the columns' sizes add up to the table's. A member added
// to a table and not to its Columns() (which merging, dedup and reserving would then skip) fails
// the build here. (Every member is 8-byte aligned: no padding between them.)
template <typename Table>
consteval bool ColumnsCoverTheTable() {
  using Tuple = decltype(Table::Columns(std::declval<Table&>()));
  return []<size_t... I>(std::index_sequence<I...>) {
    return (sizeof(std::remove_reference_t<decltype(std::tuple_element_t<I, Tuple>::values)>) +
            ... + 0) == sizeof(Table);
  }
  (std::make_index_sequence<std::tuple_size_v<Tuple>>());
}
static_assert(ColumnsCoverTheTable<GpuActivityTable>());
static_assert(ColumnsCoverTheTable<RuntimeCallTable>());
static_assert(ColumnsCoverTheTable<CpuOpTable>());
static_assert(ColumnsCoverTheTable<MemoryEventTable>());
static_assert(ColumnsCoverTheTable<CounterTable>());
static_assert(ColumnsCoverTheTable<FlowTable>());
static_assert(ColumnsCoverTheTable<InstantTable>());

// What is wrong with one table's columns, "" if nothing.
template <typename Table>
std::string MisalignedIn(const char* table_name, const Table& table) {
  const size_t rows = table.size();
  std::string problem;
  size_t index = 0;
  ForEachColumn(table, [&](auto column) {
    const size_t n = column.values.size();
    const bool sparse = decltype(column)::role == ColumnRole::kSparseName;
    if (problem.empty() && n != rows && !(sparse && n == 0))
      problem = fmt::format("{}: column {} has {} rows of {}", table_name, index, n, rows);
    ++index;
  });
  return problem;
}

}  // namespace

std::string MisalignedColumns(const Trace& trace) {
  for (std::string problem :
       {MisalignedIn("gpu", trace.gpu), MisalignedIn("runtime", trace.runtime),
        MisalignedIn("cpu", trace.cpu), MisalignedIn("memory", trace.memory),
        MisalignedIn("counters", trace.counters), MisalignedIn("flows", trace.flows),
        MisalignedIn("instants", trace.instants)}) {
    if (!problem.empty()) return problem;
  }
  for (size_t i = 0; i < trace.collectives.size(); ++i) {
    if (trace.collectives[i].gpu_index >= trace.gpu.size())
      return fmt::format("collectives: entry {} names GPU row {} of {}", i,
                         trace.collectives[i].gpu_index, trace.gpu.size());
  }
  for (size_t i = 0; i < trace.sync_waits.size(); ++i) {
    if (trace.sync_waits[i].gpu_index >= trace.gpu.size())
      return fmt::format("sync_waits: entry {} names GPU row {} of {}", i,
                         trace.sync_waits[i].gpu_index, trace.gpu.size());
  }
  return "";
}

}  // namespace gpuscope::model
