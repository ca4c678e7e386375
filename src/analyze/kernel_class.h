// Kernel classification: pure functions on GPU activity names.
//
// Three independent questions are answered here, each from a documented table
// (docs/kernel-classes.md lists the same rows as the constexpr tables in kernel_class.cc):
//  * ClassifyGpuActivity: gpuscope's own class of a GPU activity (compute / communication /
//    memory / sync). Unlike HTA it recognises collectives whose names do not start with "nccl".
//  * HtaKernelTypeOf: HTA's get_kernel_type reproduced exactly, so that numbers compared against
//    HTA use HTA's classes (including its mistakes).
//  * ClassifyMathKernel: is this a GEMM / convolution / attention kernel, and which math precision
//    and unit (tensor cores or CUDA cores) does its name say it uses.
// Plus ShortKernelName (the name used to match kernels across traces) and tb_plugin's tensor-core
// list (kept verbatim, so reports can show where it disagrees with ours).
//
// All functions are pure and thread-safe; they are meant to run once per unique name (StringId),
// not once per event.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/model.h"

namespace gpuscope::analyze {

// ---------------------------------------------------------------------------------------------
// gpuscope's classification.

enum class KernelClass : uint8_t { kCompute, kCommunication, kMemory, kSync, kOther };
const char* KernelClassName(
    KernelClass c);  // "compute", "communication", "memory", "sync", "other"

// memcpy / memset activities are memory and cuda_sync activities are sync, whatever their name.
// A kernel is communication when the trace attached collective args to it (has_collective_args)
// or when its ShortKernelName matches a row of CommunicationPatterns(); it is memory when it is a
// runtime blit kernel (MemoryKernelPatterns(), e.g. ROCm's __amd_rocclr_copyBuffer that implements
// hipMemcpy); otherwise it is compute.
KernelClass ClassifyGpuActivity(GpuKind kind, std::string_view name, bool has_collective_args);

// ClassifyGpuActivity for every row of trace.gpu, classifying each distinct name once (the name
// matching costs microseconds; a large trace has millions of events but a few thousand names).
std::vector<KernelClass> ClassifyTraceGpuActivities(const Trace& trace);

// Kernels per args.device (−1 where absent), for "the device the rank's kernels ran on": the one
// with the most. Kernels come in long runs on one device, so the map is updated once per run.
std::map<int32_t, uint64_t> KernelsPerDevice(const GpuActivityTable& gpu);

// One row of the communication table. `pattern` is searched case-insensitively in
// ShortKernelName(name): the kernel's own qualified name, without return type, template arguments
// or parameters, so that a word inside a template argument (a functor, an element type) cannot
// make a compute kernel look like a collective.
struct KernelNamePattern {
  std::string_view pattern;
  std::string_view note;
};
std::span<const KernelNamePattern> CommunicationPatterns();
std::span<const KernelNamePattern> MemoryKernelPatterns();
// The communication row that matches `name`, or nullptr.
const KernelNamePattern* MatchCommunicationPattern(std::string_view name);

// ---------------------------------------------------------------------------------------------
// HTA's classification (hta/utils/utils.py get_kernel_type with the regexes of hta/common/types.py,
// at HTA commit f4d0062): re.match semantics, tried in the order COMMUNICATION, MEMORY,
// COMPUTATION; a name matching none of them is OTHER (cuda_sync rows, for example).

enum class HtaKernelType : uint8_t { kCommunication, kMemory, kComputation, kOther };
HtaKernelType HtaKernelTypeOf(std::string_view name);
const char* HtaKernelTypeName(
    HtaKernelType t);  // "COMMUNICATION", "MEMORY", "COMPUTATION", "OTHER"

// ---------------------------------------------------------------------------------------------
// Short kernel names.
//
// Rule (details and the differences from HTA's trace_diff short_name in docs/kernel-classes.md):
//  1. A name that is not a C++ signature, i.e. has no '<' or '(' directly after an identifier
//     character, is returned unchanged: "volta_sgemm_128x64_nn", "Memcpy HtoD (Pinned -> Device)",
//     mangled "_ZN..." names, "Cijk_..." Tensile names.
//  2. Otherwise "(anonymous namespace)::" qualifiers are dropped, template argument lists <...>
//     and parameter lists (...) are removed with their nesting, "->" is removed (as HTA does), a
//     trailing " [clone ...]" and trailing const/volatile qualifiers are dropped, and everything up
//     to the last remaining space is dropped (the return type: "void ", "std::enable_if<...>::type
//     ").
//  3. Exception: a generic launch wrapper whose template argument is a single plain identifier
//     keeps it, because that identifier is the kernel: "cutlass::Kernel<cutlass_80_tensorop_
//     s1688gemm_64x64_32x4_nn_align4>" (HTA shortens all of these to "cutlass::Kernel").
//  4. If the result would be empty, the name is returned unchanged.
// Example: "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
// at::detail::Array<char*, 3> >(int, ...)" -> "at::native::vectorized_elementwise_kernel".
std::string ShortKernelName(std::string_view name);

// ---------------------------------------------------------------------------------------------
// Math kernels (GEMM, convolution, attention) and their precision.

enum class MathPrecision : uint8_t {
  kNone,            // not a GEMM / conv / attention kernel
  kFp32Simt,        // fp32 on CUDA cores (FFMA)
  kTf32TensorCore,  // fp32 data on tensor cores: TF32 (also 3xTF32 "fast fp32")
  kFp16TensorCore,
  kBf16TensorCore,
  kFp8TensorCore,
  kInt8TensorCore,         // integer tensor cores (int4 kernels land here too)
  kTensorCoreUnknownType,  // tensor / matrix cores, element type not readable from the name
  kFp64,                   // fp64, tensor cores (DMMA) or not: see MathKernelInfo::tensor_core
  kUnknown,                // math kernel, precision not identifiable (or no value above fits,
                           // e.g. fp16 on CUDA cores)
};
const char* MathPrecisionName(MathPrecision p);  // "none", "fp32_simt", "tf32_tc", ...

struct MathKernelInfo {
  bool is_math = false;  // GEMM (incl. GEMV), convolution or attention
  MathPrecision precision = MathPrecision::kNone;
  bool tensor_core = false;  // true only when the name says tensor/matrix cores are used
  std::string_view rule;     // id of the MathRules() row that matched (evidence); empty if none
};

MathKernelInfo ClassifyMathKernel(std::string_view name);

// The table behind ClassifyMathKernel. Rows are tried in order; the first whose `pattern`
// matches (and `also` / `unless` allow) decides. `pattern`, `also` and `unless` may hold several
// alternatives separated by '|'. Library-specific rows match the full name (CUTLASS and cuDNN
// kernels are named by their template arguments); generic words ("gemm", "conv") match only
// ShortKernelName(name), so that a parameter type such as cudnnConvolutionStruct does not make
// im2col a convolution. Element-type markers are always read from the full name.
enum class NameMatch : uint8_t {
  kContains,        // case-sensitive substring
  kContainsNoCase,  // ASCII case-insensitive substring
  kPrefix,          // the name starts with it (case-sensitive)
};
enum class NameScope : uint8_t { kFull, kShort };
enum class PrecisionFrom : uint8_t {
  kFixed,         // `precision` as given
  kTypeMarkers,   // scan the name for TypeMarkers(); `precision` when none is found
  kTensile,       // ROCm Tensile / hipBLASLt "Cijk_..." naming (type letters and MI = MFMA)
  kNvjet,         // cuBLASLt nvjet_<type letters>_... naming
  kXformersFmha,  // PyTorch / xformers mem-efficient attention fmha_cutlass{F,B}_<dtype>_..._sm<N>
};
enum class TensorCoreFrom : uint8_t {
  kNo,
  kYes,
  kUnlessSimt,  // yes unless the name says "simt" / "Simt" (CUTLASS templates)
  kIfHint,      // yes if the name holds a tensor-core hint (TensorCoreHints())
  kFromName,    // decided by the PrecisionFrom parser (Tensile, xformers)
};
struct MathRule {
  std::string_view id;  // unique, returned in MathKernelInfo::rule
  std::string_view pattern;
  NameMatch match;
  NameScope scope;          // what `pattern`, `also` and `unless` are matched against
  std::string_view also;    // if not empty, one of these must occur too (same case rule)
  std::string_view unless;  // if not empty, the row is skipped when one of these occurs
  PrecisionFrom precision_from;
  MathPrecision precision;  // fixed value, or the default when the name carries no type
  TensorCoreFrom tensor_core;
  std::string_view note;
};
std::span<const MathRule> MathRules();

// Element-type markers, case-insensitive, in priority order (the first that occurs wins):
// lower precisions first, because a name usually also mentions the fp32 accumulator or epilogue
// type ("bf16bf16_bf16f32_f32", "Flash_fwd_kernel_traits<..., cutlass::bfloat16_t>(..., float)").
struct TypeMarker {
  std::string_view text;
  MathPrecision precision;  // what the marker denotes; fp32 markers (kFp32Simt) become TF32 on a
                            // tensor-core row, 16/8-bit markers become kUnknown on a CUDA-core row
  char not_after;           // the marker does not count right after this character (0 = none)
};
std::span<const TypeMarker> TypeMarkers();
std::span<const std::string_view> TensorCoreHints();

// ---------------------------------------------------------------------------------------------
// All of the above for one rank, computed once (BuildKernelClasses) and passed to every analysis
// that classifies kernels (GPU time, steps, kernels, occupancy, ranks), so a rank's
// names are classified once however many analyses use them.

struct KernelNameInfo {
  HtaKernelType hta = HtaKernelType::kOther;  // HtaKernelTypeOf(name)
  std::string short_name;                     // ShortKernelName(name)
  MathKernelInfo math;  // ClassifyMathKernel(name) when some kernel row has this name
};

struct KernelClasses {
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  // Per Trace::gpu row: ClassifyGpuActivity(kind, name, the row carries collective args), i.e.
  // ClassifyTraceGpuActivities.
  std::vector<KernelClass> row;
  // Per StringId: index into `names`, kNoSlot for names no GPU row has.
  std::vector<uint32_t> name_slot;
  std::vector<KernelNameInfo> names;  // one per distinct GPU-row name

  // `name` must be the name of a GPU row of the trace these classes were built from.
  const KernelNameInfo& OfName(StringId name) const { return names[name_slot[name]]; }
};

KernelClasses BuildKernelClasses(const Trace& trace);

// tb_plugin's tensor-core test (torch_tb_profiler/profiler/tensor_core.py, from NVIDIA PyProf):
// a case-sensitive substring match against its fixed list. Kept verbatim for comparison.
bool TbPluginUsesTensorCores(std::string_view name);
std::span<const std::string_view> TbPluginTensorCorePatterns();

}  // namespace gpuscope::analyze
