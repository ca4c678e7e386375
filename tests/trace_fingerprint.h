// A canonical text dump of a Trace's tables (strings resolved), so two loads can be compared
// exactly.
#pragma once

#include <sstream>
#include <string>

#include "gpuscope/model.h"

namespace gpuscope::testing {

inline std::string Id(const Trace& t, TraceId id) {
  // append, not "'" + std::string(...): GCC 12 reports a false -Wrestrict there (bug 105329).
  return IsStringTraceId(id) ? std::string("'").append(t.Str(StringOfTraceId(id))).append("'")
                             : std::to_string(id);
}

inline std::string Fingerprint(const Trace& t) {
  std::ostringstream o;
  const auto& g = t.gpu;
  for (size_t i = 0; i < g.size(); ++i) {
    o << "G " << int(g.kind[i]) << ' ' << g.start_ns[i] << ' ' << g.dur_ns[i] << ' '
      << t.Str(g.name[i]) << ' ' << Id(t, g.pid[i]) << ' ' << Id(t, g.tid[i]) << ' ' << g.device[i]
      << ' ' << g.stream[i] << ' ' << g.correlation[i] << ' ' << g.external_id[i] << ' '
      << g.launch[i] << ' ' << g.grid[i][0] << ',' << g.grid[i][1] << ',' << g.grid[i][2] << ' '
      << g.block[i][0] << ' ' << g.registers_per_thread[i] << ' ' << g.shared_memory_bytes[i] << ' '
      << g.blocks_per_sm[i] << ' ' << g.warps_per_sm[i] << ' ' << g.est_occupancy_pct[i] << ' '
      << g.bytes[i] << ' ' << g.bandwidth_gbps[i] << ' ' << int(g.copy_direction[i])
      << int(g.src_kind[i]) << int(g.dst_kind[i]) << int(g.sync_kind[i]) << '\n';
  }
  for (const auto& c : t.collectives) {
    o << "C " << c.gpu_index << ' ' << t.Str(c.collective) << ' ' << c.in_nelems << ' '
      << c.out_nelems << ' ' << c.group_size << ' ' << t.Str(c.dtype) << '\n';
  }
  const auto& r = t.runtime;
  for (size_t i = 0; i < r.size(); ++i) {
    o << "R " << r.start_ns[i] << ' ' << r.dur_ns[i] << ' ' << t.Str(r.name[i]) << ' '
      << Id(t, r.pid[i]) << ' ' << Id(t, r.tid[i]) << ' ' << r.correlation[i] << ' '
      << r.external_id[i] << ' ' << r.cbid[i] << ' ' << int(r.kind[i]) << int(r.is_driver[i])
      << '\n';
  }
  const auto& c = t.cpu;
  for (size_t i = 0; i < c.size(); ++i) {
    o << "P " << c.start_ns[i] << ' ' << c.dur_ns[i] << ' ' << t.Str(c.name[i]) << ' '
      << Id(t, c.pid[i]) << ' ' << Id(t, c.tid[i]) << ' ' << c.external_id[i] << ' '
      << int(c.kind[i]) << ' ' << c.step[i] << ' ' << int(c.is_dataloader[i]);
    // Shape columns: empty while no op has the arg, else one row per op.
    for (const auto* col : {&c.input_dims, &c.input_types, &c.input_strides, &c.concrete_inputs})
      o << " S" << (col->empty() ? std::string("-") : std::string(t.Str((*col)[i])));
    o << '\n';
  }
  o << "shape columns " << c.input_dims.size() << ' ' << c.input_types.size() << ' '
    << c.input_strides.size() << ' ' << c.concrete_inputs.size() << '\n';
  const auto& m = t.memory;
  for (size_t i = 0; i < m.size(); ++i) {
    o << "M " << m.ts_ns[i] << ' ' << int(m.device_type[i]) << ' ' << m.device_id[i] << ' '
      << m.bytes_delta[i] << ' ' << m.total_allocated[i] << ' ' << m.total_reserved[i] << ' '
      << m.addr[i] << '\n';
  }
  for (size_t i = 0; i < t.counters.size(); ++i) {
    o << "K " << t.counters.ts_ns[i] << ' ' << t.Str(t.counters.name[i]) << ' '
      << t.Str(t.counters.series[i]) << ' ' << t.counters.value[i] << '\n';
  }
  for (size_t i = 0; i < t.flows.size(); ++i) {
    o << "F " << t.flows.ts_ns[i] << ' ' << Id(t, t.flows.pid[i]) << ' ' << Id(t, t.flows.tid[i])
      << ' ' << t.flows.id[i] << ' ' << t.flows.phase[i] << ' ' << t.Str(t.flows.category[i])
      << '\n';
  }
  for (size_t i = 0; i < t.instants.size(); ++i) {
    o << "I " << t.instants.ts_ns[i] << ' ' << t.Str(t.instants.name[i]) << '\n';
  }
  for (auto& [pid, name] : t.metadata.process_names)
    o << "PN " << Id(t, pid) << ' ' << name << '\n';
  for (auto& [key, name] : t.metadata.thread_names)
    o << "TN " << Id(t, key.first) << ' ' << Id(t, key.second) << ' ' << name << '\n';
  for (size_t i = 0; i < t.diagnostics.count.size(); ++i) {
    if (t.diagnostics.count[i])
      o << "D " << DiagName(static_cast<Diag>(i)) << ' ' << t.diagnostics.count[i] << ' '
        << t.diagnostics.first_offset[i] << '\n';
  }
  o << "events " << t.info.events_total << " json " << t.info.json_bytes << '\n';
  return o.str();
}

}  // namespace gpuscope::testing
