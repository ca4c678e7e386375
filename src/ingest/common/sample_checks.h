// Plausible ranges of monitor readings, shared by every reader of monitor data (nvidia-smi logs,
// gpuscope recordings): a value outside is not a reading but damage or a parse error, and the
// sample holding it is counted as malformed and skipped (never averaged: 150 % and −50 % must not
// average to a believable 50 %). The bounds are far outside any real GPU, so no real log trips
// them; they only catch nonsense.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "model/monitor_samples.h"

namespace gpuscope::ingest {

// The monitor model's words, as every monitor reader (recordings, nvidia-smi, DCGM) uses them.
// Inside ingest only: this header is the stage's own, not part of its public surface.
using monitor::GpuInfo;
using monitor::GpuSample;
using monitor::Recording;
using monitor::Sample;
using monitor::SourceKind;

inline constexpr double kMaxUtilPct = 100;          // utilisation is a share of the sample period
inline constexpr double kMaxPowerW = 100'000;       // 100 kW: above any GPU board (≈ 1.5 kW)
inline constexpr double kMaxClockMhz = 100'000;     // 100 GHz
inline constexpr double kMinTemperatureC = -100;    // below any cooling
inline constexpr double kMaxTemperatureC = 300;     // above any die that still reports
inline constexpr double kMaxPcieBytesPerS = 1e13;   // 10 TB/s: above any PCIe or C2C link
inline constexpr double kMaxCpuPct = 100 * 65'536;  // % of one core; 65,536 cores at 100 %
inline constexpr double kMaxBytes = 0x1p63;         // 8 EiB
inline constexpr double kMaxEnergyJ = 1e15;         // 1 PJ: 100 kW for 300 years

// Why a value is out of range ("is out of range (0 to 100 %)"), or "" when it is fine.
inline std::string CheckRange(double v, double lo, double hi, const char* unit) {
  if (v >= lo && v <= hi) return "";
  auto num = [](double x) { return fmt::format("{:.15g}", x); };
  return "is out of range (" + num(lo) + " to " + num(hi) + (unit[0] ? " " : "") + unit + ")";
}

// The first implausible value of a GPU sample as "field value why", or "" when all are plausible.
// Cross-field: memory used may not exceed the memory total of the same sample.
inline std::string CheckGpuSample(const monitor::GpuSample& g) {
  auto check = [](const char* field, const std::optional<double>& v, double lo, double hi,
                  const char* unit) -> std::string {
    if (!v) return "";
    const std::string why = CheckRange(*v, lo, hi, unit);
    if (why.empty()) return "";
    return fmt::format("{} {:.6g} {}", field, *v, why);
  };
  for (const std::string& why :
       {check("sm_util_pct", g.sm_util_pct, 0, kMaxUtilPct, "%"),
        check("mem_util_pct", g.mem_util_pct, 0, kMaxUtilPct, "%"),
        check("power_w", g.power_w, 0, kMaxPowerW, "W"),
        check("power_limit_w", g.power_limit_w, 0, kMaxPowerW, "W"),
        check("sm_clock_mhz", g.sm_clock_mhz, 0, kMaxClockMhz, "MHz"),
        check("temperature_c", g.temperature_c, kMinTemperatureC, kMaxTemperatureC, "C"),
        check("pcie_rx_bytes_per_s", g.pcie_rx_bytes_per_s, 0, kMaxPcieBytesPerS, "B/s"),
        check("pcie_tx_bytes_per_s", g.pcie_tx_bytes_per_s, 0, kMaxPcieBytesPerS, "B/s"),
        check("sm_active_pct", g.sm_active_pct, 0, kMaxUtilPct, "%"),
        check("sm_occupancy_pct", g.sm_occupancy_pct, 0, kMaxUtilPct, "%"),
        check("tensor_active_pct", g.tensor_active_pct, 0, kMaxUtilPct, "%"),
        check("dram_active_pct", g.dram_active_pct, 0, kMaxUtilPct, "%"),
        check("energy_j", g.energy_j, 0, kMaxEnergyJ, "J")})
    if (!why.empty()) return why;
  if (g.mem_used_bytes && g.mem_total_bytes && *g.mem_used_bytes > *g.mem_total_bytes)
    return "memory used " + std::to_string(*g.mem_used_bytes) + " B is above the total " +
           std::to_string(*g.mem_total_bytes) + " B";
  return "";
}

}  // namespace gpuscope::ingest
