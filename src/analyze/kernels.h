// Kernels: the top kernels per class and the precision / tensor-core mix of the math.
//
// Definitions:
//  * per class (compute, communication, memory, sync, other; docs/kernel-classes.md), kernels are
//    grouped by their short name (templates and argument lists stripped, ShortKernelName) and
//    ranked by total time: count, total, mean, min, max, share of the class's total time.
//    Times are the events' own durations summed (not a union): overlapping kernels both count.
//  * precision mix: total kernel time of GEMM / convolution / attention kernels by precision class
//    (fp32 on CUDA cores, TF32 / fp16 / bf16 / fp8 / int8 tensor cores, ...), from the name-pattern
//    table in kernel_class.h, and the share of math time on tensor cores.
// Over all GPU activities of the trace (no step filter): what ran, not when.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/kernel_class.h"
#include "gpuscope/model.h"

namespace gpuscope::analyze {

inline constexpr size_t kTopKernelsPerClass = 10;
inline constexpr size_t kKernelClassCount = 5;
inline constexpr size_t kMathPrecisionCount = 10;

struct KernelRow {
  std::string name;  // short name
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double share = 0;  // of the class's total
  MathPrecision precision = MathPrecision::kNone;
};

struct ClassKernels {
  KernelClass cls = KernelClass::kCompute;
  uint64_t count = 0;
  int64_t total_ns = 0;
  uint64_t distinct_names = 0;
  std::vector<KernelRow> top;  // at most kTopKernelsPerClass, by total time
  std::vector<KernelRow> all;  // every short name, by total time (`top` is its head)
};

struct KernelsResult {
  std::array<ClassKernels, kKernelClassCount> classes;              // indexed by KernelClass
  std::array<int64_t, kMathPrecisionCount> math_ns_by_precision{};  // indexed by MathPrecision
  int64_t math_ns = 0;                                      // all GEMM/conv/attention kernel time
  int64_t tensor_core_ns = 0;                               // of which on tensor / matrix cores
  MathPrecision dominant_precision = MathPrecision::kNone;  // most math time; kNone without math
};

// `classes`: BuildKernelClasses(trace): each row's class, each name's short name and math info.
KernelsResult AnalyzeKernels(const Trace& trace, const KernelClasses& classes,
                             size_t top_n = kTopKernelsPerClass);
// The same, classifying the trace's kernels itself (one-off callers and tests).
KernelsResult AnalyzeKernels(const Trace& trace, size_t top_n = kTopKernelsPerClass);

}  // namespace gpuscope::analyze
