// Walks over a table's columns as its Columns() lists them (include/gpuscope/model.h): what
// merging, duplicate removal, reserving and byte counts do to every column of a table.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "gpuscope/model.h"

namespace gpuscope::model {

template <typename Table>
auto ColumnsOf(Table& table) {
  return std::remove_const_t<Table>::Columns(table);
}

// f(column) for every ColumnRef of `table`, in declaration order.
template <typename Table, typename F>
void ForEachColumn(Table& table, F&& f) {
  std::apply([&f](auto... column) { (f(column), ...); }, ColumnsOf(table));
}

// f(a's column, b's same column) for every column of two tables of one type.
template <typename TableA, typename TableB, typename F>
void ForEachColumnPair(TableA& a, TableB& b, F&& f) {
  auto ca = ColumnsOf(a);
  auto cb = ColumnsOf(b);
  [&]<size_t... I>(std::index_sequence<I...>) { (f(std::get<I>(ca), std::get<I>(cb)), ...); }
  (std::make_index_sequence<std::tuple_size_v<decltype(ca)>>());
}

// True when f(column) holds for every column (stops at the first that does not).
template <typename Table, typename F>
bool AllColumns(Table& table, F&& f) {
  return std::apply([&f](auto... column) { return (f(column) && ...); }, ColumnsOf(table));
}

// "" when every table of `trace` has as many rows in each column as the table's size() (a sparse
// column: none, or as many), and every CollectiveInfo and SyncWaitInfo names a GPU row; else what
// is wrong, e.g. "gpu: column 7 has 9 rows of 10". A reader that pushed a row into some columns
// and not others would make analyses read past a column's end: the fuzz targets and the readers'
// tests check every trace they load with it.
std::string MisalignedColumns(const Trace& trace);

}  // namespace gpuscope::model
